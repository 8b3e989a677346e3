"""Hypothesis settings profiles, shared by the pytest suite and `python -m fuzz run`.

pytest runs each property test for the profile's `max_examples`; a campaign runs Hypothesis in
rounds of that many examples (a fresh seed each round) until its time budget is spent.

The pytest profiles fail fast: a failing case is reported as drawn (its JSON, and a script with
--repro-dir) instead of being shrunk, which on compile-heavy cases takes longer than the whole
clean run. Campaigns and the `nightly` profile shrink in full."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]
"""Compile-heavy examples are slow and large by nature; a test that rejects too much must still fail."""
PROFILES = ("dev", "ci", "gpu", "nightly")
FAIL_FAST = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)


def register_profiles() -> None:
    settings.register_profile("dev", max_examples=15, deadline=None, phases=FAIL_FAST, suppress_health_check=SLOW)
    settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, database=None,
                              print_blob=True, phases=FAIL_FAST, suppress_health_check=SLOW)
    settings.register_profile("gpu", max_examples=20, deadline=None, print_blob=True, phases=FAIL_FAST,
                              suppress_health_check=SLOW)
    settings.register_profile("nightly", max_examples=1000, deadline=None, print_blob=True,
                              suppress_health_check=SLOW)


def default_profile(gpus: int) -> str:
    """`ci` when the CI variable is set, `gpu` on a GPU machine, else `dev`."""
    return "ci" if os.environ.get("CI") else ("gpu" if gpus else "dev")
