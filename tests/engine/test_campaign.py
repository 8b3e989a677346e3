"""The campaign engine: Hypothesis shrinking and delta-minimization of findings, and fault
tolerance shown by injecting faults into real campaigns (`python -m fuzz run`): a worker that
segfaults, one killed mid-case, a case that hangs, and `kill -9` of the whole campaign followed by
a resume. Nothing found is lost and each fault is reported once.

Faults are planted with the test-only MM_FUZZ_TEST_FAULT hook (fuzz/engine/worker.py:_test_fault) on the
first case of the campaign's stream (worker 0, round 0, index 0), regenerated from its seed."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fuzz.engine.executor import Outcome
from fuzz.engine.machine import visible_gpu_ids
from fuzz.engine.messages import CaseRan, Claim, Minimized, Sighted
from fuzz.engine.minimize import KEPT_CONFIG, ddmin, delta_minimize
from fuzz.engine.stream import derive_seed, regenerate
from fuzz.store.findings import Finding, load_campaign, load_findings
from fuzz.store.sightings import sightings
from tests.fakes import FakeWorker, fake_driver, sent_by

ROOT = Path(__file__).resolve().parents[2]


# --- minimization (pure) ------------------------------------------------------------------------------

def test_ddmin_finds_a_one_minimal_subset() -> None:
    calls: list[list[int]] = []

    def fails(xs: list[int]) -> bool:
        calls.append(xs)
        return 3 in xs and 7 in xs

    assert ddmin(range(10), fails) == [3, 7]
    assert ddmin([1, 2], lambda xs: True) == []
    assert ddmin([], lambda xs: True) == []


def test_delta_minimize_drops_config_keys_graph_nodes_flags_and_params() -> None:
    case = {"op": "addmm", "inputs": [1, 2, 3], "seed": 5,
            "config": {"max_autotune": True, "epilogue_fusion": True, "max_autotune_gemm_backends": "ATEN,CPP,TRITON",
                       "test_configs.max_mm_configs": 2},
            "consumers": ["relu", "gelu", "return_twice"], "second_call": [1, 2, 3], "every_choice": True,
            "dynamic": True, "params": {"alpha": 2.0, "beta": 0.5}, "spelling": "linear"}

    def fails(c: dict[str, Any]) -> bool:  # the bug needs the CPP backend, gelu and alpha
        return ("CPP" in c["config"].get("max_autotune_gemm_backends", "").split(",") and "gelu" in c["consumers"]
                and "alpha" in c["params"] and c["inputs"] == [1, 2, 3])

    small, how = delta_minimize(case, fails, time_limit_s=60)
    assert small["config"] == {"max_autotune": True, "max_autotune_gemm_backends": "CPP",  # max_autotune is kept,
                               "test_configs.max_mm_configs": 2}  # and the cost cap
    assert small["consumers"] == ["gelu"] and small["second_call"] == [] and small["params"] == {"alpha": 2.0}
    assert small["every_choice"] is False and small["dynamic"] is False and small["inputs"] == [1, 2, 3]
    assert small["spelling"] == "call" and "spelling=linear" in how.dropped
    assert how.complete and "config.epilogue_fusion" in how.dropped and how.accepted <= how.steps
    assert "config.max_autotune_gemm_backends:ATEN" in how.dropped
    assert KEPT_CONFIG == {"max_autotune", "max_autotune_gemm", "max_autotune_gemm_backends",
                           "test_configs.max_mm_configs"}


def test_leaving_the_out_spelling_drops_the_out_buffer_everywhere_it_is_named() -> None:
    """The plain call returns a fresh tensor: the buffer (the last input) goes from the inputs, the
    second call's inputs and the dynamic marks, or the candidate would be no valid case."""
    case = {"op": "mm", "inputs": ["a", "b", "out"], "second_call": ["a2", "b2", "out2"], "spelling": "out",
            "mark_dynamic": [[0, 0], [2, 0]], "config": {"max_autotune": True}}
    small, how = delta_minimize(case, lambda c: c["inputs"][:2] == ["a", "b"], time_limit_s=60)
    assert small["spelling"] == "call" and small["inputs"] == ["a", "b"] and "spelling=out" in how.dropped
    assert small["second_call"] == [] and small["mark_dynamic"] == []  # dropped as elements the bug does not need

    def valid(c: dict[str, Any]) -> bool:  # what Case validation says of these fields
        n = len(c["inputs"])
        return len(c["second_call"]) in (0, n) and all(i < n for i, _ in c["mark_dynamic"])

    kept, _ = delta_minimize(case, lambda c: valid(c) and c["second_call"] != [] and [0, 0] in c["mark_dynamic"],
                             time_limit_s=60)
    assert kept["inputs"] == ["a", "b"] and kept["second_call"] == ["a2", "b2"] and kept["mark_dynamic"] == [[0, 0]]


def test_delta_minimize_stops_at_its_time_limit() -> None:
    ticks = iter(range(1000))
    case = {"config": {"a": 1, "b": 2, "c": 3, "d": 4}, "consumers": ["x", "y"]}
    small, how = delta_minimize(case, lambda c: "a" in c["config"], time_limit_s=2.5,
                                clock=lambda: float(next(ticks)))
    assert not how.complete and how.steps == 2 and "a" in small["config"]


# --- the driver's Hypothesis loop, with a fake worker (no compiling) ----------------------------------


def test_driver_shrinks_a_new_finding_and_counts_it_once() -> None:
    driver = fake_driver()
    driver.run_round(2)  # its first failing case has 109 rows
    assert [m.key for m in sent_by(driver, Claim)] == ["numerics/fake:mm"]
    minimized = sent_by(driver, Minimized)
    assert len(minimized) == 1 and minimized[0].key == "numerics/fake:mm"
    case = minimized[0].case
    assert case["inputs"][0]["shape"][0] == 5  # Hypothesis shrank M to the boundary
    assert set(case["config"]) & KEPT_CONFIG and minimized[0].minimization["hypothesis_shrinks"] > 0
    found = [m.finding for m in sent_by(driver, Sighted) if m.finding["key"] == "numerics/fake:mm"]
    assert sum(f["count"] for f in found) < len(found)  # shrink attempts do not inflate the count
    assert minimized[0].message == "5 row(s) differ" != found[0]["message"]  # the shrunk case's own message


def test_the_example_database_is_written_and_replayed_once_without_deleting(tmp_path: Path) -> None:
    db = str(tmp_path / "examples")
    first = fake_driver(db=db)
    first.run_round(0)
    stored = sorted(p for p in (tmp_path / "examples").rglob("*") if p.is_file())
    assert stored  # the shrunk failing example is saved
    resumed = fake_driver(claimed=("numerics/fake:mm",), db=db)  # another session (or host)
    resumed.replay()
    assert resumed.executor.cases[0]["inputs"][0]["shape"][0] == 5
    assert sorted(p for p in (tmp_path / "examples").rglob("*") if p.is_file()) == stored  # read-only
    fresh = fake_driver(claimed=("numerics/fake:mm",))  # without the database: nothing to replay
    fresh.replay()
    assert fresh.executor.cases == []
    logs = [io.StringIO(), io.StringIO()]
    for driver, log in zip((resumed, fresh), logs, strict=True):
        driver.stream_log = log
        driver.run_round(0)
    assert logs[0].getvalue() == logs[1].getvalue()  # rounds do not read the database
    assert len(logs[1].getvalue().splitlines()) == fresh.stream["max_examples"]


def test_a_second_finding_seen_while_shrinking_the_first_is_minimized_too() -> None:
    driver = fake_driver()
    driver.executor = FakeWorker(("fake", "other"))
    driver.spent["exploring"] = 1e9  # a long exploration so far: shrinking may take its half
    driver.run_round(0)
    assert [m.key for m in sent_by(driver, Claim)] == ["numerics/fake:mm", "numerics/other:mm"]
    minimized = {m.key: m for m in sent_by(driver, Minimized)}
    assert minimized["numerics/fake:mm"].minimization["hypothesis_shrinks"] > 0
    assert minimized["numerics/other:mm"].minimization["hypothesis_shrinks"] > 0  # drawn again from the stream


def test_shrinking_takes_at_most_half_of_a_drivers_time() -> None:
    driver = fake_driver()
    driver.spent["shrinking"] = 1e9  # it has shrunk for longer than it explored: new findings wait
    driver.run_round(0)
    assert not sent_by(driver, Claim) and "numerics/fake:mm" in driver.pending
    assert any(m.finding["count"] == 1 for m in sent_by(driver, Sighted))  # recorded all the same


def test_driver_does_not_shrink_claimed_findings_and_stops_at_the_deadline() -> None:
    driver = fake_driver(claimed=("numerics/fake:mm",))
    driver.run_round(0)
    assert not sent_by(driver, Claim) and not sent_by(driver, Minimized) and len(sent_by(driver, CaseRan)) >= 10
    late = fake_driver()
    late.deadline = time.time() - 1
    late.run_round(0)
    assert late.executor.cases == []


def test_sightings_classify_deaths_new_and_known_violations() -> None:
    v = {"oracle": "numerics", "severity": "wrong result", "signature": "s", "message": "m"}
    crash = {"oracle": "crash", "severity": "crash", "signature": "crash:IndexError:kernel/mm.py:tuned_addmm",
             "message": "m"}
    known = {"violation": {**v, "signature": "k"}, "bug": {"name": "b", "tracking": "t"}}
    failure = {"type": "IndexError", "message": "list index out of range", "frame": "kernel/mm.py:tuned_addmm"}
    verdict = {"violations": [v, crash], "known": [known], "failure": failure}
    found = sightings({"op": "bmm"}, Outcome(verdict=verdict, death="cuda-context-poisoned", detail="d",
                                                      last_words="trace"), {}, {"host": "h"})
    assert [(f.key, f.status) for f in found] == [
        ("process/cuda-context-poisoned:bmm", "new"), ("numerics/s", "new"), (f"crash/{crash['signature']}", "new"),
        ("numerics/k#known:b", "known")]
    assert found[0].traceback == "trace" and len(found[0].violations) == 4 and found[1].traceback is None
    assert found[2].traceback == \
        "IndexError: list index out of range (innermost inductor frame: kernel/mm.py:tuned_addmm)"


# --- real campaigns with planted faults --------------------------------------------------------------

def run_fuzz(*args: str, fault: str | None = None, timeout: float = 240,
             tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MM_FUZZ_TEST_FAULT"}
    if tmpdir:
        env["TMPDIR"] = str(tmpdir)
    if fault:
        env["MM_FUZZ_TEST_FAULT"] = fault
    return subprocess.run([sys.executable, "-m", "fuzz", *args], check=False, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


QUICK = ("--op", "mm", "--backend", "ATEN", "--device", "cpu", "--workers", "1", "--seed", "7", "--case-timeout", "30s",
         "--shrink-time", "3s", "--no-export", "--progress", "plain")


def fingerprint(case_json: dict[str, Any]) -> str:
    """What MM_FUZZ_TEST_FAULT's `case=` condition matches."""
    from strategies.case import Case

    return hashlib.sha256(Case.from_json(case_json).dumps().encode()).hexdigest()[:16]


@functools.cache
def first_case(device: str = "cpu", session: int = 0) -> str:
    """Fingerprint of the first case a `QUICK` campaign on `device` draws: worker 0's stream of seed
    7, round 0, index 0, regenerated as `python -m fuzz.engine.regenerate` would (a filtered
    strategy's first case depends on the round's seed, not only on Hypothesis' simplest example)."""
    from hypothesis import settings

    from fuzz.tools.profiles import default_profile

    gpus = len(visible_gpu_ids())
    stream = {"device": device, "ops": ["mm"], "backends": ["ATEN"], "dtypes": [],
              "max_examples": settings.get_profile(default_profile(gpus)).max_examples}
    return fingerprint(regenerate({"phase": "explore", "seed": 7, "session": session, "worker": 0, "round": 0,
                                   "index": 0, "stream": stream}))


def only_finding(out: Path) -> Finding:
    """The campaign's one new finding (a case it drew may also hit a registered known bug)."""
    found = [f for f in load_findings([out], pytest.fail) if f.is_new]
    assert len(found) == 1, [f.key for f in found]
    return found[0]


def innermost_frame(dump: str) -> str:
    """The innermost frame of the crashing thread in a faulthandler dump (other threads' stacks may
    come before it)."""
    current = dump.split("Current thread", 1)[1]
    return next(line.strip() for line in current.splitlines() if line.strip().startswith("File"))


def test_innermost_frame_is_the_crashing_threads() -> None:
    dump = ("Fatal Python error: Segmentation fault\n\nThread 0x7f (most recent call first):\n"
            '  File "threading.py", line 320 in wait\n\nCurrent thread 0x7e (most recent call first):\n'
            '  File "fuzz/engine/worker.py", line 5 in _test_fault\n'
            '  File "fuzz/engine/worker.py", line 9 in worker_main\n')
    assert innermost_frame(dump) == 'File "fuzz/engine/worker.py", line 5 in _test_fault'


@pytest.mark.campaign
@pytest.mark.parametrize(("fault", "signature", "last_words"), [
    # a case that crashes the process: the dump from its first line, innermost frame included
    pytest.param("segv", "killed:SIGSEGV:mm", "Fatal Python error: Segmentation fault\n", id="segv"),
    pytest.param("kill", "killed:SIGKILL:mm", "", id="kill"),  # killed mid-case (as by the OOM killer)
    pytest.param("hang", "hang:mm", "_test_fault", id="hang"),  # killed at the per-case timeout, traceback kept
])
def test_a_dying_or_hanging_worker_is_one_finding_and_the_campaign_goes_on(
        tmp_path: Path, fault: str, signature: str, last_words: str) -> None:
    out = tmp_path / "out"
    timeout = ("--case-timeout", "10s") if fault == "hang" else ()  # a slow case on a busy machine is no hang
    proc = run_fuzz("run", "--budget", "14s", "--out", str(out), *QUICK, *timeout,
                    fault=f"{fault}:case={first_case()}")
    assert proc.returncode == 1, proc.stderr  # a new finding
    f = only_finding(out)
    assert f.key == f"process/{signature}" and f.status == "new" and f.count >= 1
    assert (f.traceback or "").startswith(last_words) if fault == "segv" else last_words in (f.traceback or "")
    if fault == "segv":
        assert innermost_frame(f.traceback or "").endswith("in _test_fault")  # the frame that misbehaved
    elif fault == "hang":
        assert "in _test_fault" in (f.traceback or "")
    assert f.minimal_case is not None and fingerprint(f.minimal_case) == first_case()  # only that case fails
    session = load_campaign(out, pytest.fail)["sessions"][0]
    assert session["status"] == "finished" and session["restarts"] >= 1
    assert session["cases"] > session["restarts"]  # cases ran to the end after the worker came back
    report = json.loads((out / "report.json").read_text())
    assert report["new_findings"] == 1 and [g["key"] for g in report["findings"] if g["status"] == "new"] == [f.key]
    assert proc.stderr.count(f"NEW finding [crash] process/{signature}") == 1


@pytest.mark.gpu
@pytest.mark.campaign
def test_a_poisoned_cuda_context_is_one_finding_and_a_fresh_worker_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_fuzz("run", "--budget", "20s", "--out", str(out), *QUICK, "--device", "cuda",
                    fault=f"cuda-assert:case={first_case('cuda')}")
    assert proc.returncode == 1, proc.stderr  # a new finding
    f = only_finding(out)
    assert f.key == "process/cuda-context-poisoned:mm" and f.status == "new"
    assert "device-side assert" in json.dumps(f.violations)
    session = load_campaign(out, pytest.fail)["sessions"][0]
    assert session["status"] == "finished" and session["restarts"] >= 1
    assert session["cases"] > session["restarts"]  # a fresh worker (fresh CUDA context) ran cases after it


def group_gone(pgid: int, within_s: float = 20.0) -> bool:
    deadline = time.time() + within_s
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.campaign
def test_kill_9_of_the_whole_campaign_loses_nothing_and_resume_continues(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "MM_FUZZ_TEST_FAULT": f"segv:case={first_case()}"}
    proc = subprocess.Popen([sys.executable, "-m", "fuzz", "run", "--budget", "60s", "--out", str(out), *QUICK],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for _ in range(960):  # worker start-up alone can take a minute on a loaded GPU host
            if list((out / "findings").glob("*.json")):
                break
            time.sleep(0.25)
        else:
            pytest.fail("no finding within 240s")
        time.sleep(2.0)  # mid-campaign: shrinking, restarting workers, running cases
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = only_finding(out)  # written atomically: intact
    assert before.key == "process/killed:SIGSEGV:mm"
    assert load_campaign(out, pytest.fail)["sessions"][0]["status"] == "running"  # it never got to say goodbye
    assert group_gone(proc.pid)  # drivers and workers died with the campaign

    resumed = run_fuzz("run", "--budget", "10s", "--out", str(out), *QUICK,  # its own stream: session 1's first case
                       fault=f"segv:case={first_case()},{first_case(session=1)}")
    assert resumed.returncode == 1, resumed.stderr
    assert "resuming 1 earlier session" in resumed.stderr
    after = only_finding(out)  # the same finding, counted again, not a second one
    assert after.key == before.key and after.count > before.count and after.first_seen == before.first_seen
    assert [s["status"] for s in load_campaign(out, pytest.fail)["sessions"]] == ["killed", "finished"]
    assert json.loads((out / "report.json").read_text())["new_findings"] == 1

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    replay = run_fuzz("replay", str(out), fault=f"segv:case={first_case()},{first_case(session=1)}", tmpdir=scratch)
    assert replay.returncode == 1 and "STILL FAILS  process/killed:SIGSEGV:mm" in replay.stdout, replay.stderr
    assert not list(scratch.glob("mm-fuzz-replay-*"))  # the dead worker's log went with the replay
    fixed = run_fuzz("replay", str(out))  # without the planted fault the case passes
    assert fixed.returncode == 0 and "FIXED" in fixed.stdout, fixed.stderr


@pytest.mark.campaign
def test_clean_campaign_with_coverage_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_fuzz("run", "--budget", "12s", "--out", str(out), *QUICK, "--coverage", "--db", str(tmp_path / "db"))
    # a clean campaign stores no example (exploration never writes the database, shrinking does:
    # test_the_example_database_is_written_and_replayed_once_without_deleting covers the database)
    findings = load_findings([out], pytest.fail)
    assert proc.returncode == (1 if any(f.is_new for f in findings) else 0), proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["cases"] > 0 and report["totals"]["cases_per_min"] > 0
    coverage = report["coverage"][0]
    assert coverage["covered"] > 0 and any(f["file"].endswith("kernel/mm.py") for f in coverage["files"])
    assert "## Coverage of inductor's mm path" in (out / "report.md").read_text()
    import xml.etree.ElementTree as ET

    suite = ET.parse(out / "report.xml").getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests", "0")) == 1 + len(findings)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert samples and samples[-1]["cases"] == report["totals"]["cases"] and samples[-1]["coverage"] > 0
    page = (out / "report.html").read_text()
    assert "<svg" in page and "Cases per minute" in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page  # self-contained
    assert report["totals"]["drawn"].get("op:mm", 0) > 0 and "op:addmm" not in report["totals"]["drawn"]


@pytest.mark.campaign
@pytest.mark.parametrize("signals", [
    pytest.param((signal.SIGTERM,), id="sigterm"),  # CI cancel, timeout, systemd
    pytest.param((signal.SIGINT, signal.SIGINT), id="ctrl-c-twice"),
])
def test_a_signal_cuts_the_campaign_short_with_fresh_reports_and_says_so(tmp_path: Path,
                                                                        signals: tuple[int, ...]) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "MM_FUZZ_TEST_FAULT": f"segv:case={first_case()}"}
    proc = subprocess.Popen([sys.executable, "-m", "fuzz", "run", "--budget", "300s", "--out", str(out), *QUICK],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        for _ in range(960):
            if list((out / "findings").glob("*.json")):
                break
            time.sleep(0.25)
        else:
            pytest.fail("no finding within 240s")
        for signum in signals:  # to the whole process group, as a terminal or a CI runner does
            os.killpg(proc.pid, signum)
            time.sleep(1.0)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signals[0], err
    assert "exited unexpectedly" not in err and "Traceback" not in err, err
    report = json.loads((out / "report.json").read_text())
    assert report["distinct_findings"] == len(load_findings([out], pytest.fail)) >= 1  # not stale
    assert load_campaign(out, pytest.fail)["sessions"][0]["status"] == "interrupted"


def test_example_database_backends(tmp_path: Path) -> None:
    from hypothesis.database import DirectoryBasedExampleDatabase

    from fuzz.store import shared_store

    assert shared_store.open_database("none") is None
    shared = shared_store.open_database(str(tmp_path / "shared"))
    assert isinstance(shared, DirectoryBasedExampleDatabase)
    shared.save(b"key", b"value")  # another host's driver sees what this one saved
    assert list(shared_store.open_database(str(tmp_path / "shared")).fetch(b"key")) == [b"value"]
    assert derive_seed(1, 0, 0, 0) != derive_seed(2, 0, 0, 0)  # hosts with their own --seed


def test_a_worker_death_in_a_known_bug_region_is_that_known_bug() -> None:
    case = {"op": "mm", "device": "cpu", "frozen_weights": True, "config": {"max_autotune": True},
            "inputs": [{"shape": [129, 4], "stride": [4, 1], "offset": 0, "dtype": "float32"},
                       {"shape": [4, 0], "stride": [1, 1], "offset": 0, "dtype": "float32"}]}
    sigfpe = Outcome(death="killed:SIGFPE", detail="d", last_words="")
    found = sightings(case, sigfpe, {"torch": "2.13.0+cpu"}, {"host": "h"})
    assert [(f.key, f.status) for f in found] == [
        ("process/killed:SIGFPE:mm#known:freezing-mkl-linear-n0-sigfpe", "known")]
    segv = Outcome(death="killed:SIGSEGV", detail="d", last_words="")  # another death: not that bug
    assert [f.status for f in sightings(case, segv, {"torch": "2.13.0+cpu"}, {"host": "h"})] == ["new"]
