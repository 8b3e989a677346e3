"""The repro checks at the end of a campaign (fuzz.export.repro.export_findings): progress lines, new
findings first, no check started once their time is spent and one still running then stopped, its
children too (those repros are still written, and say why they were not checked), and a repro that
reproduced is not run again while its basis is unchanged."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fuzz.export import plain_repro, plain_search, repro, repro_render
from fuzz.export.repro_script import REPRO_BUG, REPRO_OK
from fuzz.store.findings import FindingsStore, record_from_violation
from tests.cases import small_case
from tests.fakes import process_alive

V = {"oracle": "numerics", "severity": "wrong result", "signature": "exact-mismatch:mm:float32",
     "message": "mm: 78 element(s) differ"}


def _store(tmp_path: Path, signatures: dict[str, bool]) -> FindingsStore:
    """A store with one finding per signature (True: a known upstream bug)."""
    store = FindingsStore(tmp_path)
    for sig, known in signatures.items():
        store.add(record_from_violation({**V, "signature": sig}, small_case().to_json(),
                                        known_bug={"name": "b", "tracking": "t"} if known else None,
                                        violations=[V], versions={}, origin={}))
    return store


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The repros checked, in order (each takes 0.2 s and reproduces; the plain search is faked)."""
    ran: list[str] = []

    def run(path: str, timeout_s: float, cancel: Any = None, runner: Any = None) -> repro.ReproResult:
        ran.append(Path(path).name)
        time.sleep(0.2)
        return repro.ReproResult(REPRO_BUG, "BUG", 0.2)

    monkeypatch.setattr(repro, "run_repro", run)
    monkeypatch.setattr(plain_repro, "export_plain",
                        lambda *a, verify, **k: {"path": "repros/p.py", "verified": verify})
    _quick_environment(monkeypatch)
    return ran


def _quick_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plain_repro, "write_environment",
                        lambda repro_dir, timeout_s=300.0, runner=None: repro_dir / "environment.txt")


def test_a_check_still_running_when_the_time_is_spent_is_stopped_with_its_children(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = tmp_path / "pids"
    slow = ("import os, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
            f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
            "time.sleep(120)\n")
    monkeypatch.setattr(repro_render, "render_repro", lambda case, violations, meta=None: slow)  # a check that hangs
    _quick_environment(monkeypatch)
    lines: list[str] = []
    began = time.monotonic()
    new, known = "exact-mismatch:mm:float32", "tolerance:mm:float32"
    repro.export_findings(_store(tmp_path, {new: False, known: True}), tmp_path / "repros", emit=lines.append,
                          timeout_s=600, jobs=1, time_s=6)
    assert time.monotonic() - began < 15  # 6 s, the plain scripts written unchecked, and slack for a loaded machine
    by_sig = {f.signature: f.repro for f in FindingsStore(tmp_path)}
    assert by_sig[new]["verdict"].startswith("not checked: the 6s for repro checks were spent (stopped after ")
    assert by_sig[known]["verdict"] == "not checked: the 6s for repro checks were spent"  # never started
    for r in by_sig.values():
        assert r["exit_code"] is None and "basis" not in r and r["plain"]["verified"] is False
        assert (tmp_path / r["path"]).is_file() and (tmp_path / r["plain"]["path"]).is_file()
    assert sum(": not checked: the 6s for repro checks were spent" in ln for ln in lines) == 2
    assert not any(process_alive(int(pid)) for pid in pids.read_text().split())  # the repro and the child it started


@pytest.mark.parametrize("stop", ["budget", "cancel"])
def test_a_plain_search_run_still_going_at_its_budget_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 stop: str) -> None:
    monkeypatch.setattr(plain_repro, "render",
                        lambda case, violation, form, status="": "import time\ntime.sleep(120)\n")
    cancel = threading.Event()
    if stop == "cancel":  # a second Ctrl-C during the repro checks
        threading.Timer(2, cancel.set).start()
    began = time.monotonic()
    record = plain_repro.write_plain_repro(small_case(), V, tmp_path / "p_plain.py", timeout_s=600,
                                           budget_s=2 if stop == "budget" else 600, cancel=cancel)
    assert time.monotonic() - began < 8
    assert record["out_of_time"] and not record["reproduced"] and record["outcome"] is None and record["runs"] == 0
    assert plain_repro.plain_summary(record) == "was not run (its search for a failing form ran out of time)"


def test_a_failing_form_without_time_for_its_second_run_says_so() -> None:
    runs: list[Any] = []

    def run(form: Any) -> plain_search.Outcome:
        runs.append(form)  # the first form fails; the confirming run is cut at the budget
        return plain_search.Outcome("mismatch" if len(runs) == 1 else plain_search.CUT)

    found = plain_search.search(small_case(), V, run)
    assert found.reproduced and not found.confirmed and found.out_of_time and found.flips == [] and found.runs == 1
    assert plain_repro.plain_summary({"verified": True, "reproduced": True, "out_of_time": True,
                                      "outcome": {"status": "mismatch", "message": "m"}}) == \
        "returns wrong results (`m`) (one run: the time ran out before a second)"


def test_the_environment_report_is_cut_at_its_time(tmp_path: Path) -> None:
    began = time.monotonic()
    path = plain_repro.write_environment(tmp_path, timeout_s=0.2)
    assert time.monotonic() - began < 3 and path.read_text() == "collect_env did not finish within 0s\n"


def test_repro_checks_show_progress(tmp_path: Path, checks: list[str]) -> None:
    lines: list[str] = []
    repro.export_findings(_store(tmp_path, {"a": False, "b": False}), tmp_path / "repros", emit=lines.append,
                          timeout_s=60, jobs=1)
    assert lines[0].startswith("checking 2 repro(s) and their plain-torch forms, new findings first, 1 at a time")
    assert [ln.split()[0] for ln in lines[1:]] == ["[1/2]", "plain", "[2/2]", "plain", "repro"]
    assert lines[-1].startswith("repro checks ended 0s after they began")
    assert all(f.repro and f.repro["seconds"] == 0.2 for f in FindingsStore(tmp_path))


def test_a_check_that_fails_inside_the_suite_is_said_and_the_others_go_on(
        tmp_path: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def export_plain(case_json: Any, violation: dict[str, str], *a: Any, verify: bool, **k: Any) -> dict[str, Any]:
        if violation["signature"] == "a":
            raise TypeError("unhashable type: 'dict'")
        return {"path": "repros/p.py", "verified": verify}
    monkeypatch.setattr(plain_repro, "export_plain", export_plain)
    lines: list[str] = []
    done = repro.export_findings(_store(tmp_path, {"a": False, "b": False}), tmp_path / "repros",
                                 emit=lines.append, timeout_s=60, jobs=1)
    assert len(done) == 2 and len(checks) == 2
    by_sig = {f.signature: f.repro for f in FindingsStore(tmp_path)}
    assert by_sig["a"]["exit_code"] is None and by_sig["a"]["verdict"] == \
        "not checked: the check failed inside this suite (TypeError: unhashable type: 'dict')"
    assert by_sig["b"]["exit_code"] == REPRO_BUG
    assert any(ln.startswith("error: the repro check of") and "TypeError" in ln for ln in lines)


def test_new_findings_are_checked_first_and_none_starts_after_the_time(tmp_path: Path, checks: list[str]) -> None:
    store = _store(tmp_path, {"known-1": True, "new-1": False, "known-2": True, "new-2": False})
    lines: list[str] = []
    done = repro.export_findings(store, tmp_path / "repros", emit=lines.append, timeout_s=60, jobs=1, time_s=0.3)
    assert {f.signature for f, _, _ in done[:2]} == {"new-1", "new-2"}
    assert len(checks) == 2 and all("known" not in name for name in checks)  # the new ones, then the time was spent
    by_sig = {f.signature: f.repro for f in FindingsStore(tmp_path)}
    for sig in ("known-1", "known-2"):  # written, not run, and saying why
        assert (tmp_path / by_sig[sig]["path"]).is_file() and by_sig[sig]["exit_code"] is None
        assert by_sig[sig]["verdict"] == "not checked: the 0.3s for repro checks were spent"
        assert by_sig[sig]["plain"]["verified"] is False and "basis" not in by_sig[sig]
    assert all(by_sig[sig]["exit_code"] == REPRO_BUG and by_sig[sig]["basis"] for sig in ("new-1", "new-2"))
    assert sum("not checked" in ln for ln in lines) == 2


def test_a_check_with_the_same_basis_is_not_run_again(tmp_path: Path, checks: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "p.py").write_text("plain")
    repro.export_findings(_store(tmp_path, {"a": False}), tmp_path / "repros", emit=print, timeout_s=60)
    lines: list[str] = []
    repro.export_findings(FindingsStore(tmp_path), tmp_path / "repros", emit=lines.append, timeout_s=60)
    assert len(checks) == 1 and "reproduced before with this torch, code and case (exit 1), not run again" in lines[0]
    again, = FindingsStore(tmp_path)
    assert again.repro["exit_code"] == REPRO_BUG and again.repro["plain"]["verified"]

    monkeypatch.setattr(repro, "torch_version", lambda: "9.9.9")  # another torch: checked again
    repro.export_findings(FindingsStore(tmp_path), tmp_path / "repros", emit=print, timeout_s=60)
    f, = FindingsStore(tmp_path)
    f.minimal_case = {**f.case, "seed": 4}  # a smaller case: checked again
    FindingsStore(tmp_path).save(f)
    repro.export_findings(FindingsStore(tmp_path), tmp_path / "repros", emit=print, timeout_s=60)
    assert len(checks) == 3


def test_a_plain_search_cut_by_its_budget_does_not_claim_the_bug_is_gone() -> None:
    from tests.cases import CRASH, scalar_bias_case

    found = plain_search.search(scalar_bias_case(), CRASH, lambda form: plain_search.Outcome("raised"), budget_s=0.0)
    assert found.out_of_time and not found.reproduced
    assert plain_repro.plain_summary({"verified": True, "out_of_time": True, "outcome": None}) == \
        "was not run (its search for a failing form ran out of time)"


def test_a_repro_that_did_not_reproduce_is_checked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(repro, "run_repro", lambda path, timeout_s, cancel=None, runner=None: ran.append(path) or
                        repro.ReproResult(REPRO_OK, "FIXED", 0.1))
    monkeypatch.setattr(plain_repro, "export_plain",
                        lambda *a, verify, **k: {"path": "repros/p.py", "verified": verify})
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "p.py").write_text("plain")
    repro.export_findings(_store(tmp_path, {"a": False}), tmp_path / "repros", emit=print, timeout_s=60)
    repro.export_findings(FindingsStore(tmp_path), tmp_path / "repros", emit=print, timeout_s=60)
    assert len(ran) == 2


def test_a_check_cut_by_the_time_keeps_the_last_one(tmp_path: Path, checks: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repros").mkdir()
    (tmp_path / "repros" / "p.py").write_text("plain, as searched")
    repro.export_findings(_store(tmp_path, {"a": False}), tmp_path / "repros", emit=print, timeout_s=60)
    monkeypatch.setattr(repro, "torch_version", lambda: "9.9.9")  # due again, but no time for it
    repro.export_findings(FindingsStore(tmp_path), tmp_path / "repros", emit=print, timeout_s=60, time_s=0)
    f, = FindingsStore(tmp_path)
    assert len(checks) == 1 and f.repro["exit_code"] is None and f.repro["plain"]["verified"]
    assert f.repro["verdict"].startswith("not checked: the 0s for repro checks were spent (last checked ")
    assert f.repro["verdict"].endswith(": exit 1)")
    assert "plain, as searched" in (tmp_path / "repros" / "p.py").read_text()


def test_what_makes_a_plain_form_pass_is_run_after_every_finding_is_checked(tmp_path: Path, checks: list[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The single changes (flips) wait until every repro and plain form is checked: with no time left
    then, they stay pending and the line says why; the finding keeps what ran."""
    monkeypatch.setattr(plain_repro, "export_plain", lambda *a, verify, flips=True, **k: {
        "path": "repros/p.py", "verified": verify, "flips": [], "flips_pending": [] if flips else [{"f": 1}]})

    def finish(case: Any, violation: Any, record: dict[str, Any], **kw: Any) -> int:
        checks.append("flip")
        time.sleep(1.0)
        record["flips"], record["flips_pending"] = [{"change": "eagerly", "status": "passed"}], []
        return 1

    monkeypatch.setattr(plain_repro, "finish_flips", finish)
    lines: list[str] = []
    repro.export_findings(_store(tmp_path, {"a": False, "b": False}), tmp_path / "repros", emit=lines.append,
                          timeout_s=60, jobs=1)
    assert checks[2:] == ["flip", "flip"] and all(name.endswith(".py") for name in checks[:2])
    assert lines[-1].startswith("then what makes each plain form pass: 2 single-change run(s) for 2 finding(s)")
    assert all(f.repro["plain"]["flips"] and f.repro["plain"]["flips_pending"] == [] for f in FindingsStore(tmp_path))

    checks.clear()
    lines.clear()
    other = tmp_path / "other"
    repro.export_findings(_store(other, {"a": False, "b": False}), other / "repros", emit=lines.append,
                          timeout_s=60, jobs=1, time_s=1.0)
    assert checks.count("flip") == 1 and "1 left unfinished (not checked: the 1s for repro checks were spent)" \
        in lines[-1]
    assert sorted(bool(f.repro["plain"]["flips_pending"]) for f in FindingsStore(other)) == [False, True]
