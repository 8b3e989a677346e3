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
from fuzz.findings import FindingsStore, record_from_violation
from tests.test_repro import _small_case

ROOT = Path(__file__).resolve().parent.parent


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
    proc = subprocess.run([sys.executable, "-m", "fuzz", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and all(c in proc.stdout for c in ("run", "replay", "export", "report"))
    probe = "import sys, fuzz.cli; fuzz.cli.build_parser(); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout.strip() == "False"


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--op", "mm,convolution"], "argument --op: unknown op 'convolution'; known: mm,"),
    (["run", "--backend", "ATEN,CUTLAS"], "argument --backend: unknown backend 'CUTLAS'; known:"),
    (["run", "--dtype", "float64"], "argument --dtype: unknown dtype 'float64'; known: float32,"),
    (["run", "--budget", "five minutes"], "argument --budget: cannot parse 'five minutes' as a duration"),
    (["run", "--budget", "0s"], "argument --budget: duration '0s' must be more than zero"),
    (["run", "--case-timeout", "1x"], "argument --case-timeout: cannot parse '1x'"),
    (["run", "--workers", "0"], "--workers must be at least 1"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
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


def test_redis_backend_needs_its_package(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("hypothesis")
    try:
        import redis  # noqa: F401
    except ImportError:
        line = fails_with_one_line(capsys, ["run", "--out", str(tmp_path), "--db", "redis://localhost:6379/0"])
        assert "needs the redis package" in line
    else:
        pytest.skip("redis is installed")


def test_durations() -> None:
    assert [duration(t) for t in ("90", "90s", "5m", "1h30m", "2.5h")] == [90, 90, 300, 5400, 9000]


def campaign_dir(tmp_path: Path) -> Path:
    """A campaign directory with one good finding and three broken files."""
    store = FindingsStore(tmp_path)
    v = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float32", "message": "m"}
    store.add(record_from_violation(v, _small_case().to_json(), known_bug=None, violations=[v], versions={},
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
