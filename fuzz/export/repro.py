"""Standalone repro scripts: one per finding (or failing property test), needing only torch.

A script carries the case (its JSON), a header comment with the violation, the versions it was
found with and the case in plain torch terms (program, inputs, config), and, vendored verbatim at
its end, the suite modules that run a case and judge it (`fuzz.run.session` and what it imports:
harness, programs, values, the oracles, the Case model; only torch and the standard library).
Running the suite's own code keeps one definition of how inputs are built, how the case compiles
and what each oracle accepts: the script's verdict is the oracle's verdict. The script is
fuzz.export.repro_script, rendered by fuzz.export.repro_render with the modules fuzz.export.vendoring
picks; this module runs the scripts and exports a campaign's findings as checked repros.

Exit status of a script: 1 while the bug is present, 0 once it is fixed (nothing fails), 2 when
the case could not be checked (e.g. eager now rejects it), 3 when the case fails differently (the
bug's violation is gone but others show). A finding where the worker process itself died or hung
is re-run in a child process, and its death (signal, exit status, timeout) is the bug.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fuzz.engine.children import REPO_ROOT, Runner, run_bounded
from fuzz.engine.machine import repro_caches
from fuzz.engine.script_pool import check_jobs, warm_pool
from fuzz.export.repro_render import torch_version, write_repro
from fuzz.export.repro_script import REPRO_BUG
from fuzz.export.vendoring import SUITE_PACKAGES, ReproError
from fuzz.store.findings import Finding, FindingsStore, now


@dataclasses.dataclass
class ReproResult:
    exit_code: int | None  # None: it ran past the timeout, or was stopped
    verdict: str  # its last line of output
    seconds: float
    skipped: bool = False  # unchecked: not run, or stopped, as the campaign was stopped or the checks' time spent


def run_repro(path: str | os.PathLike[str], timeout_s: float = 900.0,
              cancel: threading.Event | None = None, runner: Runner = run_bounded) -> ReproResult:
    """Run a repro with plain `python`, outside the repository, as a user would (killed when
    `cancel` is set: exit_code None, skipped), through `runner` (e.g. a ScriptPool's run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MM_FUZZ_TEST_FAULT")}
    env.update(repro_caches())
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-repro-") as cwd:
        code, stdout, stderr = runner([sys.executable, str(Path(path).resolve())], cwd=cwd, env=env,
                                      timeout_s=timeout_s, cancel=cancel)
    seconds = time.monotonic() - began
    if code is None:
        stopped = cancel is not None and cancel.is_set()
        return ReproResult(None, "not checked: the campaign was stopped" if stopped else
                           f"timed out after {timeout_s:g}s", seconds, skipped=stopped)
    lines = [ln for ln in stdout.splitlines() if ln.strip()] or [ln for ln in stderr.splitlines() if ln.strip()] \
        or [""]
    return ReproResult(code, lines[-1][:400], seconds)


def finding_meta(f: Finding) -> dict[str, Any]:
    return {"versions": f.versions, "known_bug": f.known_bug, "count": f.count, "first_seen": f.first_seen,
            "last_seen": f.last_seen}


def check_basis(f: Finding) -> str:
    """What a repro check's result depends on: the finding's best case and violation, this host,
    torch and the suite's code (a check with the same basis need not run again)."""
    code = sorted((str(p.relative_to(REPO_ROOT)), p.read_text(encoding="utf-8"))
                  for package in SUITE_PACKAGES for p in (REPO_ROOT / package).rglob("*.py"))
    basis = [f.best_case, f.violation, socket.gethostname(), torch_version(), code]
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _checked_before(f: Finding, basis: str, repro_dir: Path) -> bool:
    """Whether `f`'s repro reproduced and its plain form was searched to the end with this basis,
    and the files are still there (a repro that did not reproduce is always checked again)."""
    done, plain = f.repro or {}, (f.repro or {}).get("plain") or {}
    return done.get("basis") == basis and done.get("exit_code") == REPRO_BUG and bool(plain.get("verified")) \
        and not plain.get("out_of_time") and (repro_dir.parent / str(plain.get("path"))).is_file()


def export_findings(findings: FindingsStore | Iterable[Finding], repro_dir: Path, *, emit: Callable[[str], None],
                    verify: bool = True, timeout_s: float = 900.0, jobs: int | None = None,
                    cancel: threading.Event | None = None,
                    time_s: float | None = None) -> list[tuple[Finding, str, ReproResult | None]]:
    """One repro per finding (of its smallest case), each run with plain python to check that it
    reproduces (`jobs` at a time, new findings first, a line as each ends), and beside it the
    plain-torch repro (fuzz.export.plain_repro, searched for its smallest failing form when verifying); the
    results are stored in the finding when `findings` is a store. A check whose basis (check_basis)
    is unchanged since it last ran is not run again. `time_s` bounds the wall time of all the
    checks (the environment report included): none starts after it, and one still running then,
    repro or plain search, is killed; those repros are written unchecked and say why."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from fuzz.export.plain_repro import export_plain, finish_flips, plain_summary, write_environment
    from strategies.case import Case, CaseError

    store = findings if isinstance(findings, FindingsStore) else None
    written = []
    for f in sorted(findings, key=lambda f: not f.is_new):
        try:
            case = Case.from_json(f.best_case)
            meta = {**finding_meta(f), "timeout_s": 0.8 * timeout_s}  # a hang repro's own limit, inside ours
            name = f.file_name().removesuffix(".json") + ".py"
            path = write_repro(case, [f.violation], repro_dir, meta=meta, name=name)
        except (CaseError, ReproError) as e:
            emit(f"warning: no repro for {f.key}: {e}")
            continue
        written.append((f, path))
    bases = [check_basis(f) if verify else "" for f, _ in written]
    again = [i for i, (f, _) in enumerate(written) if verify and _checked_before(f, bases[i], repro_dir)]
    results: dict[int, tuple[ReproResult | None, dict[str, Any]]] = {}
    deadline = time.monotonic() + time_s if time_s is not None else float("inf")

    def left() -> float:
        return deadline - time.monotonic()

    def skipped() -> str | None:
        """Why no check may start now (or go on), if none may."""
        if cancel is not None and cancel.is_set():
            return "not checked: the campaign was stopped"
        return f"not checked: the {time_s:g}s for repro checks were spent" if left() <= 0 else None

    def unchecked(f: Finding, path: str, why: str, seconds: float = 0.0) -> tuple[ReproResult, dict[str, Any]]:
        last = f.repro or {}
        if last.get("exit_code") is not None:  # keep the last check's plain repro, and say when it ran
            why += f" (last checked {last.get('checked')} with torch {last.get('torch')}: exit {last['exit_code']})"
            if (repro_dir.parent / str((last.get("plain") or {}).get("path"))).is_file():
                return ReproResult(None, why, seconds, skipped=True), last["plain"]
        return ReproResult(None, why, seconds, skipped=True), export_plain(
            f.best_case, f.violation, path, repro_dir.parent, verify=False, timeout_s=timeout_s, environment=None)

    def check(f: Finding, path: str) -> tuple[ReproResult | None, dict[str, Any]]:
        if not verify:
            return None, export_plain(f.best_case, f.violation, path, repro_dir.parent, verify=False,
                                      timeout_s=timeout_s, environment=None)
        if why := skipped():
            return unchecked(f, path, why)
        result = run_repro(path, min(timeout_s, left()), cancel, runner)
        if result.exit_code is None and (why := skipped()):  # stopped by the checks' limit, not its own timeout
            return unchecked(f, path, f"{why} (stopped after {result.seconds:.0f}s)", result.seconds)
        return result, export_plain(f.best_case, f.violation, path, repro_dir.parent, verify=not skipped(),
                                    timeout_s=timeout_s, budget_s=min(timeout_s, left()), environment=environment,
                                    flips=False, cancel=cancel, runner=runner)

    def flip(i: int) -> int:
        """The pending single changes of finding i's plain form (after every finding's check)."""
        f, plain = written[i][0], results[i][1]
        return 0 if skipped() else finish_flips(Case.from_json(f.best_case), f.violation, plain, timeout_s=timeout_s,
                                                budget_s=min(timeout_s, left()), cancel=cancel, runner=runner)

    queue = [i for i in range(len(written)) if i not in again]
    with warm_pool(verify and bool(queue), emit) as runner:
        environment = write_environment(repro_dir, timeout_s=min(300.0, left()), runner=runner) \
            if verify and len(again) < len(written) and not skipped() else None
        for i in again:
            f, path = written[i]
            before = f.repro or {}  # `again` holds only findings with a repro record
            results[i] = ReproResult(before["exit_code"], before["verdict"], before["seconds"] or 0.0), before["plain"]
            emit(f"repro {path}: reproduced before with this torch, code and case (exit 1), not run again")
        if queue:
            jobs = jobs or check_jobs()
            if verify:
                limit = f", {time_s:g}s in all" if time_s is not None else ""
                emit(f"checking {len(queue)} repro(s) and their plain-torch forms, new findings first, {jobs} at a "
                     f"time (each up to {timeout_s:g}s{limit})")
            began = time.monotonic()
            with ThreadPoolExecutor(jobs) as threads:
                futures = {threads.submit(check, *written[i]): i for i in queue}
                for done, future in enumerate(as_completed(futures), 1):
                    i = futures[future]
                    try:
                        result, plain = results[i] = future.result()
                    except Exception as e:  # noqa: BLE001 - a bug of the suite's check: the other checks and the reports go on
                        emit(f"error: the repro check of {written[i][0].key} failed inside this suite:\n"
                             + "".join(traceback.format_exception(e)[-6:]).rstrip())
                        results[i] = ReproResult(
                            None, f"not checked: the check failed inside this suite ({type(e).__name__}: {e})", 0.0), {}
                        continue
                    head = f"[{done}/{len(queue)}] repro {written[i][1]}"
                    if result is None:
                        emit(head)
                    elif result.skipped:
                        emit(f"{head}: {result.verdict}")
                        continue
                    else:
                        as_stated = "reproduces" if result.exit_code == REPRO_BUG else "DOES NOT REPRODUCE"
                        emit(f"{head}: exit {result.exit_code} ({as_stated}, {result.seconds:.0f}s): {result.verdict}")
                    emit(f"    plain repro {plain.get('path') or '(none)'}: {plain_summary(plain)}")
            if verify:
                emit(f"repro checks ended {time.monotonic() - began:.0f}s after they began")
        flipping = [i for i, (_, plain) in results.items() if plain.get("flips_pending")]
        if verify and flipping and not skipped():
            began = time.monotonic()
            with ThreadPoolExecutor(jobs or check_jobs()) as threads:
                ran = sum(threads.map(flip, flipping))
            unfinished = sum(bool(results[i][1].get("flips_pending")) for i in flipping)
            emit(f"then what makes each plain form pass: {ran} single-change run(s) for {len(flipping)} finding(s) in "
                 f"{time.monotonic() - began:.0f}s" + (f", {unfinished} left unfinished ({why})"
                                                        if unfinished and (why := skipped()) else ""))
    for i, (f, path) in enumerate(written):
        result, plain = results.get(i, (None, {}))
        f.repro = {"path": os.path.relpath(path, repro_dir.parent), "torch": torch_version(),
                   "checked": (f.repro or {}).get("checked") if i in again else now(),
                   "exit_code": result.exit_code if result else None,
                   "verdict": result.verdict if result else "not run",
                   "seconds": round(result.seconds, 1) if result else None, "plain": plain,
                   **({"basis": bases[i]} if result and result.exit_code is not None else {})}
        if store is not None:
            store.save(f)
    return [(f, path, results.get(i, (None, {}))[0]) for i, (f, path) in enumerate(written)]
