"""The assertion every property test makes: a case passes every oracle; and the ceiling on how
many of an op's cases may be rejected."""

from __future__ import annotations

import collections
import warnings
from collections.abc import Callable

import pytest
from hypothesis import event, reject, target
from hypothesis.control import current_build_context

import torch

from fuzz.known_bugs import process_killer
from fuzz.session import FuzzSession, Verdict
from oracles.numerics import error_ratio
from strategies.case import Case
from strategies.cases import case_features

REJECT_CEILING = 0.10
"""The largest share of an op's cases that may be rejected (eager refuses the case, or no backend
of its set can serve it) before its property test fails: a test that mostly rejects tests nothing."""
TALLY: collections.Counter[str] = collections.Counter()
"""Cases and rejections per op in this process ("mm", "mm:rejected")."""


def observation_features(verdict: Verdict) -> set[str]:
    """Labels of what compiling the case did: where flexible layouts ended up, why it was rejected."""
    obs = verdict.observation
    backends = obs.case.config_dict.get("max_autotune_gemm_backends", "default")
    out = {f"flexible-layout:{'changed' if p.changed else 'kept'}:{p.op}:{backends}" for p in obs.placements if p.flexible}
    if verdict.rejected:
        failure = obs.eager_failure or obs.compile_failure
        out.add(f"rejected:{'eager' if obs.eager_failure else 'unservable'}:{failure.type if failure else '?'}")
    return out


def assert_case_passes(case: Case, session: FuzzSession, request: pytest.FixtureRequest) -> None:
    """Compile `case`, run all oracles; fail with the violations and the Case JSON."""
    for feature in sorted(case_features(case)):
        event(feature)  # shown by --hypothesis-show-statistics
    killer = process_killer(case, torch.__version__)
    if killer is not None:  # campaigns run such cases in a worker that may die; this process may not
        warnings.warn(f"skipped: known bug {killer.name} would kill this process ({killer.tracking})", stacklevel=2)
        reject()
    verdict = session.evaluate(case)
    for feature in sorted(observation_features(verdict)):
        event(feature)
    TALLY[case.op] += 1
    TALLY[f"{case.op}:rejected"] += verdict.rejected
    target(min(error_ratio(verdict.observation), 1e6), label="compiled error / tolerance")
    for violation, bug in verdict.known:
        warnings.warn(f"known bug {bug.name} still reproduces: {violation.signature} ({bug.tracking})", stacklevel=2)
    if verdict.violations:  # also for a rejected case: layout and src_hash oracles saw its selections
        repro_dir = request.config.getoption("--repro-dir")
        if repro_dir and current_build_context().is_final:  # the shrunk case, not every shrink step
            from fuzz.repro import write_repro

            path = write_repro(case, verdict.violations, repro_dir)
            request.node.user_properties.append(("repro", path))
        lines = [f"[{v.severity}] {v.oracle}: {v.message}  ({v.signature})" for v in verdict.violations]
        pytest.fail("\n".join(lines) + f"\ncase: {case.dumps()}", pytrace=False)
    if verdict.rejected:
        reject()


def assert_reject_rate_within_ceiling(op: str) -> None:
    """Fail when more than REJECT_CEILING of the op's cases run in this process were rejected."""
    total, rejected = TALLY[op], TALLY[f"{op}:rejected"]
    assert total and rejected <= REJECT_CEILING * total, \
        f"{op}: {rejected} of {total} cases rejected (ceiling {REJECT_CEILING:.0%}): the strategies draw cases " \
        "that cannot be tested"


def is_cpp_choice(choice: object) -> bool:
    """A CPP template choice (frozen weights wrap it in a DataProcessorChoiceCallerWrapper)."""
    return "Cpp" in type(getattr(choice, "_wrapped", choice)).__name__


def rig_benchmarks(monkeypatch: pytest.MonkeyPatch, rig: Callable[[dict[object, float]], dict[object, float]]) -> None:
    """Autotuning's benchmark timings (choice -> time) pass through `rig` before a winner is picked."""
    from torch._inductor import select_algorithm

    real = select_algorithm.AlgorithmSelectorCache.benchmark

    def benchmark(self: object, choices: list[object], *args: object, **kwargs: object) -> dict[object, float]:
        return rig(real(self, choices, *args, **kwargs))

    monkeypatch.setattr(select_algorithm.AlgorithmSelectorCache, "benchmark", benchmark)
