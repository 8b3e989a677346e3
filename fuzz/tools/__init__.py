"""Measurement and support: bench, utilization, tightness, progress line, profiles, coverage."""
