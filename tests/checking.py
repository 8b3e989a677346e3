"""The assertion every property test makes: a case passes every oracle; and the ceiling on how
many of an op's cases may be rejected."""

from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Callable

import pytest
import torch
from hypothesis import event, reject, target
from hypothesis.control import current_build_context

from fuzz.bugs.entry import ATEN, KnownBug
from fuzz.bugs.known_bugs import KNOWN_BUGS, process_killer
from fuzz.run.session import FuzzSession, Verdict
from oracles.model import Observation
from oracles.numerics import error_ratio
from strategies.case import Case
from strategies.cases import case_features

REJECT_CEILING = 0.10
"""The largest share of an op's cases that may be rejected (eager refuses the case, or no backend
of its set can serve it): a test that mostly rejects tests nothing."""
REJECT_ALPHA = 0.01
"""A property test fails on its rejections only when a rate at the ceiling gives that many this
rarely (one-sided binomial test). A plain 10% cut failed matmul on the H200 at 5 of 45, which a 10%
rate gives 47% of the time (13% at 6%); this test fails a 35% rate at 20 examples (the `gpu`
profile), a 50% rate at 12 (`ci`)."""
TALLY: collections.Counter[str] = collections.Counter()
"""Cases per op in this process ("mm"), rejections per op and reason ("mm:rejected:<why>")."""


def observation_features(verdict: Verdict) -> set[str]:
    """Labels of what compiling the case did: where flexible layouts ended up, why it was rejected."""
    obs = verdict.observation
    backends = obs.case.config_dict.get("max_autotune_gemm_backends", "default")
    out = {f"flexible-layout:{'changed' if p.changed else 'kept'}:{p.op}:{backends}"
           for p in obs.placements if p.flexible}
    if verdict.rejected:
        out.add(f"rejected: {rejection_reason(obs)}")
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
    if verdict.rejected:
        TALLY[f"{case.op}:rejected:{rejection_reason(verdict.observation)}"] += 1
    target(min(error_ratio(verdict.observation), 1e6), label="compiled error / tolerance")
    for violation, bug in verdict.known:
        warnings.warn(f"known bug {bug.name} still reproduces: {violation.signature} ({bug.tracking})", stacklevel=2)
    if verdict.violations:  # also for a rejected case: layout and src_hash oracles saw its selections
        repro_dir = request.config.getoption("--repro-dir")
        if repro_dir and current_build_context().is_final:  # the shrunk case, not every shrink step
            from fuzz.export.repro_render import write_repro

            path = write_repro(case, verdict.violations, repro_dir)
            request.node.user_properties.append(("repro", path))
        lines = [f"[{v.severity}] {v.oracle}: {v.message}  ({v.signature})" for v in verdict.violations]
        pytest.fail("\n".join(lines) + f"\ncase: {case.dumps()}", pytrace=False)
    if verdict.rejected:
        reject()


def rejection_reason(obs: Observation) -> str:
    """Why a rejected case was: eager's error, or the selection no backend of the set could serve."""
    if obs.eager_failure is not None:
        return f"eager {obs.eager_failure.type}: {obs.eager_failure.message[:120]}"
    empty = [e for e in obs.selections if e.source == "autotune" and not e.choices]
    sizes = " x ".join(str(list(o.size)) for o in empty[-1].operands) if empty else "?"
    return f"no choice for {empty[-1].op_name if empty else '?'} {sizes} " \
        f"({obs.case.config_dict.get('max_autotune_gemm_backends', 'default')})"


def forget_tally(op: str) -> None:
    """Drop the op's counts, so that a property test's ceiling counts only its own cases."""
    for key in [k for k in TALLY if k == op or k.startswith(f"{op}:")]:
        del TALLY[key]


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def assert_reject_rate_within_ceiling(op: str) -> None:
    """Fail when the op's cases run in this process show a reject rate above REJECT_CEILING: more
    rejections than a rate at the ceiling gives with probability REJECT_ALPHA."""
    reasons = {k.split(":", 2)[2]: n for k, n in TALLY.items() if k.startswith(f"{op}:rejected:")}
    total, rejected = TALLY[op], sum(reasons.values())
    chance = binomial_tail(rejected, total, REJECT_CEILING)
    listed = "".join(f"\n  {n} x {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    assert total and chance >= REJECT_ALPHA, \
        f"{op}: {rejected} of {total} cases rejected, {chance:.1e} likely at a {REJECT_CEILING:.0%} rate (fails " \
        f"below {REJECT_ALPHA}): the strategies draw cases that cannot be tested:{listed}"


def known_aten_bug(case: Case) -> KnownBug | None:
    """A registered ATen bug whose region holds `case` on this torch and device: eager itself is wrong there."""
    return next((bug for bug in KNOWN_BUGS if bug.lives_in == ATEN and case.device in bug.devices
                 and torch.__version__.startswith(bug.torch_versions) and bug.applies(case)), None)


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
