"""Hypothesis settings profiles, shared by the pytest suite and `python -m fuzz run`.

pytest runs each property test for the profile's `max_examples`; a campaign runs Hypothesis in
rounds of that many examples (a fresh seed each round) until its time budget is spent."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
"""Compile-heavy examples are slow and large by nature; a test that rejects too much must still fail."""
PROFILES = ("dev", "ci", "gpu", "nightly")


def register_profiles() -> None:
    settings.register_profile("dev", max_examples=15, deadline=None, suppress_health_check=SLOW)
    settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, database=None,
                              print_blob=True, suppress_health_check=SLOW)
    settings.register_profile("gpu", max_examples=40, deadline=None, print_blob=True, suppress_health_check=SLOW)
    settings.register_profile("nightly", max_examples=1000, deadline=None, print_blob=True,
                              suppress_health_check=SLOW)


def default_profile(gpus: int) -> str:
    """`ci` when the CI variable is set, `gpu` on a GPU machine, else `dev`."""
    return "ci" if os.environ.get("CI") else ("gpu" if gpus else "dev")
