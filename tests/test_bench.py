"""The benchmark's bookkeeping, with stand-in workers: every side gets the very cases the naive
loop finished, longest first, a side's time ends with its last case, verdicts that differ from the
naive loop's are listed, and the last line states the ratio."""

from __future__ import annotations

import time
from typing import Any

import pytest

from fuzz import bench
from fuzz.workers import Outcome


class SlowExecutor:
    """A worker that takes 0.2 s a case and records which cases it ran."""

    ran: list[int] = []

    def __init__(self, index: int, **kwargs: Any) -> None:
        pass

    def start(self) -> None:
        pass

    def run(self, case: dict[str, Any]) -> Outcome:
        time.sleep(0.2)
        SlowExecutor.ran.append(case["n"])
        found = [{"signature": "tolerance:mm:float16"}] if case["n"] == 4 else []  # the naive loop passed it
        return Outcome(verdict={"timings": {"oracles": 0.2}, "violations": found, "known": [], "rejected": case["n"] == 5})

    def stop(self) -> None:
        pass


def test_every_side_runs_the_naive_sides_cases_and_its_time_ends_with_the_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "workload", lambda device, seed, n: [{"n": i} for i in range(100)])
    naive_verdicts = {i: "rejected" if i == 5 else "pass" for i in range(6)}
    naive_seconds = {0: 1.0, 1: 9.0, 2: 3.0, 3: 2.0, 4: 8.0, 5: 0.5}
    monkeypatch.setattr(bench, "run_naive", lambda cases, budget_s, device: bench.Side(
        "naive", 6, budget_s, 1.0, {"oracles": 6.0}, verdicts=naive_verdicts, durations=naive_seconds))
    monkeypatch.setattr(bench, "Executor", SlowExecutor)
    SlowExecutor.ran = []
    naive, one, two = bench.bench(60.0, [1, 2], "cpu", 0, print)
    assert SlowExecutor.ran[:6] == [1, 4, 2, 3, 0, 5]  # the naive side's six cases, the longest first
    assert sorted(SlowExecutor.ran[6:]) == list(range(6))  # and again with two workers
    assert (one.cases, two.cases) == (6, 6) and 1.1 < one.seconds < 3 and 0.5 < two.seconds < one.seconds
    assert one.per_minute > naive.per_minute * 10  # 60 s of naive budget against about 1.2 s
    text = bench.summary([naive, one, two])
    assert "verdicts of suite x1: 5 of 6 cases as the naive loop judged them\n  case 4: naive 'pass', suite x1 " \
           "'tolerance:mm:float16'" in text
    line = text.splitlines()[-1]
    assert line.startswith("speedup: ") and line.endswith(f"(cases/min {two.per_minute:.1f} vs 6.0, suite x2)")


def test_a_side_that_cannot_finish_is_cut_at_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "Executor", SlowExecutor)
    side = bench.run_suite([(i, {"n": i}) for i in range(100)], 1.0, 1, "cpu", print)
    assert side.seconds == 1.0 and 3 <= side.cases <= 5
