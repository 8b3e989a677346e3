"""`python -m fuzz`: help on every subcommand; bad input ends with one clear line and exit status
2 (never a traceback); `replay`, `export` and `report` skip corrupt finding files with a warning."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fuzz.cli import duration, main
from fuzz.engine.executor import Outcome
from fuzz.store.findings import FindingsStore, record_from_violation
from tests.cases import small_case

ROOT = Path(__file__).resolve().parents[2]


def fails_with_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", ["run", "replay", "export", "report"])
def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: python -m fuzz {command}" in capsys.readouterr().out


def test_entry_point_and_top_level_help_do_not_need_torch() -> None:
    proc = subprocess.run([sys.executable, "-m", "fuzz", "--help"], check=False, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and all(c in proc.stdout for c in ("run", "replay", "export", "report"))
    probe = "import sys, fuzz.cli; fuzz.cli.build_parser(); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout.strip() == "False"


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["run", "--op", "mm,convolution"], "argument --op: unknown op 'convolution'; known: mm,",
                 id="unknown-op"),
    pytest.param(["run", "--op", "mm,"], "argument --op: empty op in 'mm,'", id="stray-comma"),
    pytest.param(["run", "--backend", "ATEN,CUTLAS"], "argument --backend: unknown backend 'CUTLAS'; known:",
                 id="unknown-backend"),
    pytest.param(["run", "--dtype", "float64"], "argument --dtype: unknown dtype 'float64'; known: float32,",
                 id="unknown-dtype"),
    pytest.param(["run", "--budget", "five minutes"], "argument --budget: cannot parse 'five minutes' as a duration",
                 id="unparsable-budget"),
    pytest.param(["run", "--budget", "0s"], "argument --budget: duration '0s' must be more than zero",
                 id="zero-budget"),
    pytest.param(["run", "--case-timeout", "1x"], "argument --case-timeout: cannot parse '1x'", id="bad-timeout"),
    pytest.param(["run", "--workers", "0"], "--workers must be at least 1", id="zero-workers"),
    pytest.param(["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'", id="unknown-command"),
])
def test_bad_input_is_one_clear_line(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert message in fails_with_one_line(capsys, argv)


def test_unwritable_output_dir_and_a_running_campaign_are_one_line(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    line = fails_with_one_line(capsys, ["run", "--budget", "5s", "--out", str(blocker / "out")])
    assert line.startswith(f"python -m fuzz: error: cannot write to output directory {blocker / 'out'}")
    out = tmp_path / "busy"
    out.mkdir()
    with open(out / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        line = fails_with_one_line(capsys, ["run", "--budget", "5s", "--out", str(out)])
    assert f"another campaign is running in {out}" in line


def test_a_redis_store_needs_its_package(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as if not installed
    line = fails_with_one_line(capsys, ["run", "--out", str(tmp_path / "out"), "--store", "redis://localhost:6379/0"])
    assert "needs the redis package" in line and not (tmp_path / "out").exists()


def test_inputs_are_checked_before_anything_is_created(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    line = fails_with_one_line(capsys, ["run", "--op", "mm_out_dtype", "--device", "cpu", "--out", str(out)])
    assert "--op mm_out_dtype does not run on the CPU" in line and not out.exists()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible
    line = fails_with_one_line(capsys, ["run", "--device", "cuda", "--out", str(out)])
    assert "no GPU is visible" in line and not out.exists()


def test_an_unreachable_store_is_checked_before_anything_is_created(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    pytest.importorskip("redis", reason="without the redis package the store is refused earlier (tested above)")
    out = tmp_path / "out"
    unreachable = f"redis://:pw@127.0.0.1:{closed_port()}/0"
    line = fails_with_one_line(capsys, ["run", "--store", unreachable, "--out", str(out)])
    assert "does not answer" in line and "pw" not in line and not out.exists()


def closed_port() -> int:
    from tests.redis_server import free_port

    return free_port()  # nothing listens there


@pytest.mark.parametrize("command", ["report", "replay", "export"])
def test_a_source_that_does_not_exist_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  command: str) -> None:
    line = fails_with_one_line(capsys, [command, str(tmp_path / "typo")])
    assert line == f"python -m fuzz: error: no such file or directory: {tmp_path / 'typo'}"


def test_durations() -> None:
    assert [duration(t) for t in ("90", "90s", "5m", "1h30m", "2.5h")] == [90, 90, 300, 5400, 9000]


def campaign_dir(tmp_path: Path) -> Path:
    """A campaign directory with one good finding and three broken files."""
    store = FindingsStore(tmp_path)
    v = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float32", "message": "m"}
    store.add(record_from_violation(v, small_case().to_json(), known_bug=None, violations=[v], versions={},
                                    origin={"host": "h"}))
    (tmp_path / "findings" / "truncated.json").write_text('{"format": 1, "key": "x", "ca')
    (tmp_path / "findings" / "garbage.json").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "findings" / "badcase.json").write_text(json.dumps(
        {**json.loads(next(iter(store.paths.values())).read_text()), "key": "numerics/other", "case": {"op": "x"}}))
    (tmp_path / "campaign.json").write_text(json.dumps(
        {"format": 1, "sessions": [{"cases": 120, "seconds": 60, "rejected": 3, "restarts": 1, "by_op": {"mm": 120}}]}))
    return tmp_path


def test_report_merges_and_skips_corrupt_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = campaign_dir(tmp_path / "c")
    paths = {k: tmp_path / f"r.{k}" for k in ("json", "junit", "markdown")}
    assert main(["report", str(d), "--json", str(paths["json"]), "--junit", str(paths["junit"]),
                 "--markdown", str(paths["markdown"])]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("warning: skipping corrupt finding") == 2  # truncated and garbage
    summary = json.loads(paths["json"].read_text())
    assert summary["distinct_findings"] == 2 and summary["totals"]["cases_per_min"] == 120.0
    suite = ET.parse(paths["junit"]).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2" and suite.get("tests") == "3"
    md = paths["markdown"].read_text()
    assert md.strip() == captured.out.strip() and "`tolerance:mm:float32`" in md and "## By oracle" in md


def test_a_campaign_named_twice_is_read_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    d = campaign_dir(tmp_path / "c")
    assert main(["report", str(d), str(d), str(d / "findings"), "--json", str(tmp_path / "r.json")]) == 0
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["totals"]["cases"] == 120 and summary["findings"][0]["count"] == 1


def test_export_of_a_findings_folder_writes_to_its_campaign(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    d = campaign_dir(tmp_path / "c")
    assert main(["export", str(d / "findings"), "--no-verify"]) == 0
    scripts = sorted(p.name for p in (d / "repros").glob("*.py"))  # the vendored repro and its plain-torch one
    assert len(scripts) == 2 and scripts[1] == scripts[0].removesuffix(".py") + "_plain.py"
    assert not (d / "findings" / "repros").exists()
    loose = next((d / "findings").glob("numerics-tolerance*.json"))
    capsys.readouterr()
    line = fails_with_one_line(capsys, ["export", str(loose)])
    assert "is not a campaign directory: say where the repros go with --to DIR" in line
    assert main(["export", str(loose), "--to", str(tmp_path / "to"), "--no-verify"]) == 0
    assert len(list((tmp_path / "to").glob("*.py"))) == 2


def test_replay_and_export_skip_what_they_cannot_use(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "findings").mkdir(parents=True)
    (empty / "findings" / "broken.json").write_text("{")
    assert main(["replay", str(empty)]) == 0
    captured = capsys.readouterr()
    assert "no findings to replay" in captured.out and "skipping corrupt finding" in captured.err

    d = campaign_dir(tmp_path / "c")
    assert main(["export", str(d), "--no-verify"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("skipping corrupt finding") == 2
    assert "warning: no repro for numerics/other: case is missing field" in captured.err
    scripts = sorted((d / "repros").glob("*.py"))  # the vendored repro and its plain-torch one
    assert len(scripts) == 2 and "EXPECTED = [('numerics', 'tolerance:mm:float32')]" in scripts[0].read_text()
    assert scripts[1].name == scripts[0].stem + "_plain.py"


class FakeExecutor:
    """Replays every case to the outcome given (no worker, no compiling)."""

    outcome: Outcome = Outcome()

    def __init__(self, *_a: object, **_k: object) -> None:
        self.info = {"torch": "2.13.0+cpu"}

    def run(self, case: dict[str, object]) -> Outcome:
        return self.outcome

    def stop(self) -> None:
        pass


def verdict(*signatures: str, rejected: bool = False) -> dict[str, object]:
    found = [{"oracle": "numerics", "severity": "wrong result", "signature": s, "message": "m"} for s in signatures]
    return {"violations": found, "known": [], "rejected": rejected, "error_ratio": 0.0,
            "failure": {"type": "RuntimeError", "message": "eager rejects it", "frame": None} if rejected else None,
            "poisoned": ""}


@pytest.mark.parametrize(("outcome", "state", "status"), [
    pytest.param(Outcome(verdict=verdict("tolerance:mm:float32")), "STILL FAILS", 1, id="still-fails"),
    pytest.param(Outcome(verdict=verdict("other:mm")), "FAILS DIFFERENTLY: numerics/other:mm", 1,
                 id="fails-differently"),
    pytest.param(Outcome(verdict=verdict(rejected=True)), "CANNOT CHECK (the case is rejected now: eager rejects it)",
                 2, id="rejected-now"),
    pytest.param(Outcome(verdict=verdict()), "FIXED", 0, id="fixed"),
    pytest.param(Outcome(verdict={**verdict(), "known": [{"violation": verdict("tolerance:mm:float32")["violations"][0],
                                                          "bug": {"name": "b", "tracking": "t"}}]}),
                 "STILL FAILS (now a known upstream bug: b)", 0, id="registered-since"),
    pytest.param(Outcome(verdict={**verdict(), "known": [{"violation": verdict("crash:E:ir.py:f")["violations"][0],
                                                          "bug": {"name": "b", "tracking": "t"}}]}),
                 "FAILS DIFFERENTLY, as known upstream bugs only: numerics/crash:E:ir.py:f#known:b", 0,
                 id="known-bug-only"),
])
def test_replay_says_fixed_only_when_nothing_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, outcome: Outcome, state: str,
                                                   status: int) -> None:
    from fuzz.engine import executor

    store = FindingsStore(tmp_path)
    v = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float32", "message": "m"}
    store.add(record_from_violation(v, small_case().to_json(), known_bug=None, violations=[v], versions={},
                                    origin={}))
    monkeypatch.setattr(executor, "Executor", FakeExecutor)
    monkeypatch.setattr(FakeExecutor, "outcome", outcome)
    assert main(["replay", str(tmp_path)]) == status
    assert capsys.readouterr().out.splitlines()[0].startswith(f"{state:<12} numerics/tolerance:mm:float32")
