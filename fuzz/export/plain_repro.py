"""Plain-torch repro scripts: the program a PyTorch developer would write for a finding.

The vendored verdict script (fuzz.export.repro) runs the suite's own code and prints one line. This
one is what an upstream issue needs: plain torch calls that build the fuzzer's very inputs, the
case's program, `torch.compile(..., mode="max-autotune")` or the smallest
`torch._inductor.config.patch` that still fails, and then the exception or a failing assertion
(fuzz.export.plain_render). When verified, fuzz.export.plain_search finds that smallest form by
running candidates, and records which single changes make it pass. This module writes the script
beside the vendored repro and keeps the record the finding stores.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from fuzz.engine.children import Runner, run_bounded
from fuzz.export.plain_form import Form, PlainReproError, check_kind
from fuzz.export.plain_render import render
from fuzz.export.plain_search import CUT, Outcome, more_flips, run_script, search
from strategies.case import Case


def plain_path(vendored: str | os.PathLike[str]) -> Path:
    """Where the plain script of a vendored repro goes: beside it, `<name>_plain.py`."""
    path = Path(vendored)
    return path.with_name(path.stem + "_plain.py")


def _form_runner(case: Case, violation: Mapping[str, str], path: Path, tmp: str, budget_s: float, timeout_s: float,
                 cancel: threading.Event | None, runner: Runner) -> Callable[[Form], Outcome]:
    """Render a form into `tmp` and run it (as `path` would be run) within what is left of `budget_s`."""
    deadline = time.monotonic() + budget_s

    def run(form: Form) -> Outcome:
        candidate = Path(tmp, f"candidate_{len(os.listdir(tmp))}.py").resolve()
        candidate.write_text(render(case, violation, form), encoding="utf-8")
        left = deadline - time.monotonic()
        ran = run_script(candidate, min(timeout_s, left), cancel, runner)
        if ran.status == "hang" and left < timeout_s:
            return Outcome(CUT, message=f"stopped: the {budget_s:g}s for the search were spent")
        return dataclasses.replace(ran, output=ran.output.replace(str(candidate), path.name))
    return run


def write_plain_repro(case: Case, violation: Mapping[str, str], path: Path, *, verify: bool = True,
                      timeout_s: float = 600.0, budget_s: float = 600.0, flips: bool = True,
                      cancel: threading.Event | None = None, runner: Runner = run_bounded) -> dict[str, Any]:
    """Write the plain script for `case` to `path` and what its run printed to `path`.log; with
    `verify`, search the smallest failing form first, within `budget_s` of wall time (a run still
    going then, or when `cancel` is set, is killed and counts as not run; each run through `runner`).
    Without `flips`, the single changes that make it pass are left pending (`finish_flips`).
    Returns the record kept in the finding."""
    kind = check_kind(violation)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not verify:
        form = Form.make(None, case.config_dict, case.frozen_weights)
        path.write_text(render(case, violation, form), encoding="utf-8")
        return {"path": str(path), "verified": False, "form": form.to_json(), "check": kind}
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-forms-") as tmp:
        run = _form_runner(case, violation, path, tmp, budget_s, timeout_s, cancel, runner)
        found = search(case, violation, run, budget_s, flips)
    versions = f"torch {torch.__version__}"
    status = (f"Fails on {versions}" if found.confirmed else
              f"Failed once on {versions}; the time ran out before a second run" if found.reproduced and
              found.out_of_time else
              f"Failed in 1 of 2 runs on {versions} (autotuning picks its winner by timing)" if found.reproduced else
              f"Not yet run in a failing form on {versions}: the search's time ran out" if found.out_of_time else
              f"Did NOT fail in this form on {versions} (the fuzzer's own harness did)")
    path.write_text(render(case, violation, found.form, status), encoding="utf-8")
    log = path.with_suffix(".log")
    log.write_text(found.outcome.output if found.outcome else "", encoding="utf-8")
    return {"path": str(path), "log": str(log), "verified": True, "reproduced": found.reproduced,
            "confirmed": found.confirmed, "torch": torch.__version__, "form": found.form.to_json(), "check": kind,
            "outcome": found.outcome.to_json() if found.outcome else None,
            "flips": [{"change": change, **o.to_json()} for change, o in found.flips],
            "flips_pending": [f.to_json() for f in found.pending],
            "runs": found.runs, "seconds": round(found.seconds, 1), "out_of_time": found.out_of_time}


def finish_flips(case: Case, violation: Mapping[str, str], record: dict[str, Any], *, timeout_s: float,
                 budget_s: float, cancel: threading.Event | None = None, runner: Runner = run_bounded) -> int:
    """Run the pending single changes of a plain repro's `record` (write_plain_repro without
    `flips`) within `budget_s`, adding what each did to it; returns how many ran."""
    pending = [Form.from_json(f) for f in record.get("flips_pending") or []]
    if not pending:
        return 0
    path = Path(record["path"])
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-forms-") as tmp:
        run = _form_runner(case, violation, path, tmp, budget_s, timeout_s, cancel, runner)
        done, left = more_flips(Form.from_json(record["form"]), pending, run, budget_s)
    record["flips"] = [*record.get("flips", []), *({"change": change, **o.to_json()} for change, o in done)]
    record["flips_pending"] = [f.to_json() for f in left]
    return len(done)


def plain_summary(plain: dict[str, Any]) -> str:
    """What a plain repro (its export record) does and how reliably, e.g. "raises `IndexError: ...`
    (every run)", or why there is none."""
    if plain.get("unsupported"):
        return f"none: {plain['unsupported']}"
    recorded = plain.get("outcome")
    outcome: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    message = str(outcome.get("message"))[:200]  # a failed C++ compile's is its whole command line
    what = {"raised": f"raises `{outcome.get('type')}: {message}`", "mismatch": f"returns wrong results (`{message}`)",
            "killed": f"kills the process with {outcome.get('type')}", "hang": "hangs",
            "passed": "runs without error"}.get(outcome.get("status", ""), "was not run")
    how = ("every run" if plain.get("confirmed") else
           "one run: the time ran out before a second" if plain.get("reproduced") and plain.get("out_of_time") else
           "one of two runs: autotuning picks its winner by timing" if plain.get("reproduced") else
           "its search for a failing form ran out of time" if plain.get("out_of_time") else
           "the fuzzer's own harness failed on this case" if plain.get("verified") else "")
    return what + (f" ({how})" if how else "")


def write_environment(repro_dir: Path, timeout_s: float = 300.0, runner: Runner = run_bounded) -> Path:
    """`python -m torch.utils.collect_env` (versions, OS, CPU model and flags, GPUs) into
    `repro_dir`/environment.txt, for the drafts of the repros verified here (killed at `timeout_s`)."""
    code, stdout, stderr = runner([sys.executable, "-m", "torch.utils.collect_env"], cwd=os.getcwd(),
                                  env=os.environ, timeout_s=timeout_s)
    path = Path(repro_dir) / "environment.txt"
    text = stdout if code == 0 else f"collect_env did not finish within {timeout_s:.0f}s\n" if code is None else \
        f"collect_env failed: {stderr.strip()[-500:]}\n"
    path.write_text(text, encoding="utf-8")
    return path


def export_plain(case_json: Mapping[str, Any], violation: Mapping[str, str], vendored: str, root: Path, *,
                 verify: bool, timeout_s: float, environment: Path | None,
                 budget_s: float | None = None, flips: bool = True, cancel: threading.Event | None = None,
                 runner: Runner = run_bounded) -> dict[str, Any]:
    """The plain repro of an exported finding, written beside its vendored one (its search for
    failing forms ends by `budget_s`, default `timeout_s`, or once `cancel` is set); returns the
    record kept in the finding (paths relative to `root`, the campaign directory), or why there is none."""
    try:
        record = write_plain_repro(Case.from_json(case_json), violation, plain_path(vendored), verify=verify,
                                   timeout_s=timeout_s, budget_s=timeout_s if budget_s is None else budget_s,
                                   flips=flips, cancel=cancel, runner=runner)
    except PlainReproError as e:
        return {"unsupported": str(e)}
    if environment is not None:
        record["environment"] = str(environment)
    return {k: os.path.relpath(v, root) if k in ("path", "log", "environment") else v for k, v in record.items()}
