"""The suite's own parts, one at a time: the Case model, oracles, findings, reports, repros, the registry."""
