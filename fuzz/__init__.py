"""Harness, campaigns, repro export and the `python -m fuzz` command line."""
