"""Hypothesis strategies that generate Cases, and the Case model itself."""
