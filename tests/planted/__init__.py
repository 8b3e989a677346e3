"""Planted bugs: each oracle and rule must fail on a bug planted inside inductor or ATen."""
