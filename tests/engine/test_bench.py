"""The benchmark's bookkeeping, with stand-in workers: every side gets the very cases the naive
loop finished, longest first, a side's time ends with its last case, verdicts that differ from the
naive loop's are listed, and the last line states the ratio. The noise benchmark, with stand-in
campaigns: one clean campaign per seed, only new findings counted, exit 1 on one."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from fuzz import cli
from fuzz.engine import noise
from fuzz.engine.executor import Outcome
from fuzz.tools import bench


class SlowExecutor:
    """A worker that takes 0.2 s a case and records which cases it ran."""

    ran: ClassVar[list[int]] = []

    def __init__(self, index: int, **kwargs: Any) -> None:
        pass

    def start(self) -> None:
        pass

    def run(self, case: dict[str, Any]) -> Outcome:
        time.sleep(0.2)
        SlowExecutor.ran.append(case["n"])
        found = [{"signature": "tolerance:mm:float16"}] if case["n"] == 4 else []  # the naive loop passed it
        return Outcome(verdict={"timings": {"oracles": 0.2}, "violations": found, "known": [],
                                "rejected": case["n"] == 5})

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


# --- the noise benchmark (fuzz/engine/noise.py) ---------------------------------------------------------

FAKE_CAMPAIGN = """
import json, sys
from pathlib import Path
from fuzz.store.findings import FindingsStore, record_from_violation, write_json_atomic
out, seed = Path(sys.argv[1]), int(sys.argv[2])
store = FindingsStore(out)
violation = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float16",
             "message": "mm: 3 element(s) off\\nsecond line"}
known = {**violation, "signature": "exact-mismatch:int_mm:int32"}
store.add(record_from_violation(known, {"op": "int_mm"}, known_bug={"name": "k", "tracking": "t"}, violations=[known],
                                versions={}, origin={}))
if seed in PLANTED:  # a campaign that finds something new
    store.add(record_from_violation(violation, {"op": "mm"}, known_bug=None, violations=[violation], versions={},
                                    origin={}))
write_json_atomic(out / "campaign.json", {"format": 1, "sessions": [{"cases": 10 + seed}]})
print("a campaign's own output")
sys.exit(1 if seed in PLANTED else 0)
"""


def _fake_campaigns(monkeypatch: pytest.MonkeyPatch, planted: set[int]) -> list[list[str]]:
    """Campaigns as a script that writes a campaign directory with a known finding and, for the
    seeds in `planted`, a new one; returns the real commands noise would have run."""
    real: list[list[str]] = []
    campaign_command = noise.campaign_command

    def command(budget_s: float, seed: int, out: Path, device: str, workers: int | None = None) -> list[str]:
        real.append(campaign_command(budget_s, seed, out, device, workers))
        return [sys.executable, "-c", f"PLANTED = {planted!r}\n" + FAKE_CAMPAIGN, str(out), str(seed)]

    monkeypatch.setattr(noise, "campaign_command", command)
    return real


def test_noise_runs_a_clean_campaign_per_seed_and_counts_only_new_findings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = _fake_campaigns(monkeypatch, planted=set())
    assert cli.main(["bench", "--noise", "--budget", "90s", "--device", "cpu", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("noise: 3 clean campaign(s) of 90s on cpu, seeds 1, 2, 3, in ")
    assert re.fullmatch(r"seed 1: 11 cases, exit 0, 0:0\d wall, 0 new finding\(s\)", out[1]), out
    assert [line.split(":")[0] for line in out[1:4]] == ["seed 1", "seed 2", "seed 3"]
    assert out[-1] == "noise: 0 new finding(s) in 3 campaign(s)"
    assert (tmp_path / "seed-2" / "findings").is_dir() and "own output" in (tmp_path / "seed-2.log").read_text()
    for seed, command in enumerate(real, 1):  # clean: its own directory, no shared store, no repro checks
        assert command[command.index("--seed") + 1] == str(seed) and command[command.index("--store") + 1] == ""
        assert command[command.index("--out") + 1] == str((tmp_path / f"seed-{seed}").resolve())
        assert "--no-export" in command and command[command.index("--budget") + 1] == "90s"


def test_noise_side_by_side_runs_the_campaigns_at_once_sharing_the_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = _fake_campaigns(monkeypatch, planted={2})
    assert cli.main(["bench", "--noise", "--side-by-side", "--workers", "3", "--seeds", "1,2", "--out", str(tmp_path),
                     "--device", "cpu"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out[1:]] == ["seed 1", "seed 2", "    NEW numerics/tolerance", "noise"], out
    assert [command[command.index("--workers") + 1] for command in real] == ["3", "3"]
    with pytest.raises(SystemExit) as refused:  # --workers without --side-by-side would be ignored: refused
        cli.main(["bench", "--noise", "--workers", "3", "--out", str(tmp_path / "other"), "--device", "cpu"])
    assert refused.value.code == 2 and "--side-by-side" in capsys.readouterr().err


def test_noise_exits_1_on_a_new_finding_and_shows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _fake_campaigns(monkeypatch, planted={5})
    assert cli.main(["bench", "--noise", "--seeds", "4,5", "--out", str(tmp_path), "--device", "cpu"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"seed 5: 15 cases, exit 1, 0:0\d wall, 1 new finding\(s\)", out[2]), out
    assert out[3] == "    NEW numerics/tolerance:mm:float16: mm: 3 element(s) off"
    assert out[-1] == "noise: 1 new finding(s) in 2 campaign(s)"
    # the campaigns are clean: a directory used before is refused, before anything runs
    with pytest.raises(SystemExit) as refused:
        cli.main(["bench", "--noise", "--seeds", "6,5", "--out", str(tmp_path), "--device", "cpu"])
    assert refused.value.code == 2 and not (tmp_path / "seed-6").exists()
    assert "seed-5 exists: the noise benchmark runs clean campaigns" in capsys.readouterr().err


def test_a_campaign_that_did_not_finish_is_not_a_clean_one() -> None:
    ended = noise.CampaignRun(1, Path("seed-1"), 0, 61.0, 30, [])
    cut = noise.CampaignRun(2, Path("seed-2"), 130, 5.0, 2, [])
    assert noise.exit_status([ended, cut]) == 2 and noise.exit_status([ended]) == 0
    assert noise.summary([ended, cut]) == "noise: 0 new finding(s) in 2 campaign(s); 1 campaign(s) did not finish " \
                                          "(see seed-N.log)"
    crashed = noise.CampaignRun(3, Path("seed-3"), 1, 190.0, 291, [])  # a traceback at the end: exit 1, nothing new
    assert noise.exit_status([ended, crashed]) == 2 and "did NOT finish" in crashed.lines()[0]
    assert ended.lines() == ["seed 1: 30 cases, exit 0, 1:01 wall, 0 new finding(s)"]
