"""Running one case: inputs, the program, eager and compiled runs, the oracles, the verdict."""
