"""Persistence: findings, sightings, the shared store and the sources reports read."""
