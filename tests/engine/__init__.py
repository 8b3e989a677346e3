"""The campaign engine: drivers, workers, seeds, the shared store, bench; real processes where it matters."""
