"""The assertion every property test makes: a case passes every oracle."""

from __future__ import annotations

import os
import warnings

import pytest
from hypothesis import event, reject, target
from hypothesis.control import current_build_context

import torch

from fuzz.known_bugs import process_killer
from fuzz.session import FuzzSession
from oracles.numerics import error_ratio
from strategies.case import Case
from strategies.cases import case_features


def assert_case_passes(case: Case, session: FuzzSession, request: pytest.FixtureRequest) -> None:
    """Compile `case`, run all oracles; fail with the violations and the Case JSON."""
    for feature in sorted(case_features(case)):
        event(feature)  # shown by --hypothesis-show-statistics
    killer = process_killer(case, torch.__version__)
    if killer is not None:  # campaigns run such cases in a worker that may die; this process may not
        warnings.warn(f"skipped: known bug {killer.name} would kill this process ({killer.tracking})", stacklevel=2)
        reject()
    verdict = session.evaluate(case)
    if verdict.rejected:
        reject()
    target(min(error_ratio(verdict.observation), 1e6), label="compiled error / tolerance")
    for violation, bug in verdict.known:
        warnings.warn(f"known bug {bug.name} still reproduces: {violation.signature} ({bug.tracking})", stacklevel=2)
    if verdict.violations:
        repro_dir = request.config.getoption("--repro-dir")
        if repro_dir and current_build_context().is_final:  # the shrunk case, not every shrink step
            from fuzz.repro import write_repro

            path = write_repro(case, verdict.violations, repro_dir)
            request.node.user_properties.append(("repro", path))
        lines = [f"[{v.severity}] {v.oracle}: {v.message}  ({v.signature})" for v in verdict.violations]
        pytest.fail("\n".join(lines) + f"\ncase: {case.dumps()}", pytrace=False)


