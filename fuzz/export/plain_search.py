"""The smallest plain-torch form of a finding that still fails the same way. Each candidate script
runs in a fresh process (fuzz.export.plain_run); `search` tries the plain form first, else the
case's config with keys dropped one at a time, then without freezing, and `max_autotune=True`
spelt as mode="max-autotune"; it keeps the smallest that fails the same way (same exception type
and innermost inductor frame, same signal, or a value mismatch) and records which single changes
make it pass (ATen only, no freezing, no max-autotune, eager): the configuration difference an
issue reports."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from fuzz.engine.children import REPO_ROOT, Runner, run_bounded
from fuzz.engine.machine import repro_caches
from fuzz.export import plain_run
from fuzz.export.plain_form import RAISES, VALUE_CHECKS, Form, check_kind
from strategies.backends import TEMPLATE_BACKENDS, autotuned, config_backends
from strategies.case import Case

FAMILY_BACKENDS = (("triton", "TRITON"), ("cpp", "CPP"), ("extern", "ATEN"), ("aten", "ATEN"))
"""Which backend alone serves a kernel-choice family (`ChoiceRecord.family`, lower-cased prefix)."""


def family_backend(violation: Mapping[str, str]) -> str | None:
    """The backend that serves the kernel choice a single-choice signature names, e.g. "CPP"."""
    match = re.search(r"@([^:]+(?:::[^:]+)?)", violation["signature"])
    family = match.group(1).lower() if match else ""
    return next((backend for prefix, backend in FAMILY_BACKENDS if family.startswith(prefix)), None)


# --- running ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Outcome:
    """How one run of a script ended."""

    status: str  # "passed", "raised", "mismatch" (its own assertion), "killed", "hang", or CUT
    type: str = ""  # exception type or signal name
    message: str = ""
    frame: str = ""  # innermost inductor frame, "file:function" (as in crash signatures)
    location: str = ""  # the same frame as "path:line"
    output: str = ""  # what it printed, traceback included

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "output"}


CUT = "cut"
"""The status of a run stopped by the search's budget, not by its own timeout: no verdict."""


def run_script(path: Path, timeout_s: float, cancel: threading.Event | None = None,
               runner: Runner = run_bounded) -> Outcome:
    """Run a script as `python script.py` would (with the repro checks' code caches:
    fuzz.engine.machine.repro_caches), through `runner`, and say how it ended (at `timeout_s` it is
    killed, with the processes it started: a hang; once `cancel` is set: CUT)."""
    path = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-plain-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **repro_caches()}
        result = Path(tmp) / "result.json"
        code, output, _ = runner([sys.executable, "-m", plain_run.__name__, str(path), str(result)], cwd=tmp,
                                 env=env, timeout_s=timeout_s, cancel=cancel, merge_output=True)
        if code is None and cancel is not None and cancel.is_set():
            return Outcome(CUT, message="stopped: the campaign was stopped")
        if code is None:
            return Outcome("hang", message=f"no result within {timeout_s:g}s", output=output)
        if code < 0:
            return Outcome("killed", signal.Signals(-code).name, output=output)
        data = json.loads(result.read_text()) if result.is_file() else \
            {"status": "raised", "type": f"exit status {code}"}
        return Outcome(**data, output=output)


def same_failure(outcome: Outcome, violation: Mapping[str, str]) -> bool:
    """Whether `outcome` is the violation's failure: the same exception type and innermost inductor
    frame (crash), exception type (a single choice's crash), signal or hang (process), or a value
    mismatch (numerics)."""
    oracle, signature = violation["oracle"], violation["signature"]
    if oracle == "process":
        death = signature.split(":")
        return (outcome.status, outcome.type) == ("killed", death[1]) if death[0] == "killed" else \
            outcome.status == death[0]
    if oracle == "crash":
        return outcome.status == "raised" and \
            signature == f"crash:{outcome.type}:{outcome.frame or 'outside-inductor'}"
    if signature.startswith("choice-crash:"):
        return outcome.status == "raised" and outcome.type == signature.rsplit(":", 1)[1]
    if signature.startswith("dropped:"):  # the template's own failure, or no choice left to serve the program
        return outcome.status == "raised"
    return outcome.status == "mismatch"


# --- searching for the smallest failing form --------------------------------------------------------

@dataclasses.dataclass
class Search:
    """The smallest form found to fail the same way (or the case's own form when none did), what
    its runs did, and single changes with what each did."""

    form: Form
    outcome: Outcome | None
    reproduced: bool  # some run of `form` failed the same way
    confirmed: bool  # and a second run did too
    flips: list[tuple[str, Outcome]]
    runs: int
    seconds: float
    out_of_time: bool = False  # no form failed and one was left untried, or the second run was: the budget was spent
    pending: list[Form] = dataclasses.field(default_factory=list)  # single changes not run (see `search`'s `flips`)


def _describe(form: Form, other: Form) -> str:
    """The change from `form` to `other`, in words (they differ in one respect)."""
    if other.eager:
        return "eagerly (no `torch.compile`)"
    if other.frozen != form.frozen:
        return "without freezing" if form.frozen else "with freezing"
    if other.mode != form.mode:
        return f'`torch.compile` without `mode="{form.mode}"`' if form.mode else f'`mode="{other.mode}"`'
    mine, theirs = dict(form.patch), dict(other.patch)
    changed = sorted(set(mine) ^ set(theirs) | {k for k in mine.keys() & theirs.keys() if mine[k] != theirs[k]})
    return ", ".join(f"without `{k}={mine[k]!r}`" if k not in theirs else f"`{k}={theirs[k]!r}`" for k in changed)


def _backends(form: Form) -> list[str]:
    return list(config_backends(dict(form.patch)))


def _autotuned(form: Form) -> bool:
    return form.mode == "max-autotune" or autotuned(dict(form.patch))


def _flip_forms(form: Form, kind: str) -> list[Form]:
    """One change at a time: each patched key dropped, ATen only, no max-autotune, no freezing, eager."""
    forms = [form.without(k) for k, _ in form.patch]
    if _autotuned(form) and _backends(form) != ["ATEN"]:
        forms.append(form.with_key("max_autotune_gemm_backends", "ATEN"))
    if form.mode:
        forms.append(form.replace(mode=None))
    if form.frozen:
        forms.append(form.replace(frozen=False))
    if kind != RAISES:
        forms.append(form.replace(eager=True))
    return list(dict.fromkeys(forms))


def search(case: Case, violation: Mapping[str, str], run: Callable[[Form], Outcome],
           budget_s: float = 600.0, flips: bool = True) -> Search:
    """The smallest form of `case` whose run fails as `violation` did, confirmed by a second run.
    `run` renders and runs a form; no new form is tried once `budget_s` is spent, and a run that
    `run` cut at the budget (status CUT) counts as untried. A crash is tried with plain random
    inputs first, a wrong value only with the fuzzer's. Without `flips`, the single changes not
    already run on the way are left pending (`more_flips` runs them later)."""
    began, tried, kind, untried = time.monotonic(), {}, check_kind(violation), []

    def timed_run(form: Form) -> Outcome | None:
        """`run(form)`, or None where the budget left no time to run it to the end."""
        ran = run(form) if time.monotonic() - began < budget_s else None
        if ran is None or ran.status == CUT:
            untried.append(form)
            return None
        return ran

    def outcome(form: Form) -> Outcome | None:
        if form not in tried and (ran := timed_run(form)) is not None:
            tried[form] = ran
        return tried.get(form)

    def fails(form: Form) -> bool:
        ran = outcome(form)
        return ran is not None and same_failure(ran, violation)

    family, template = family_backend(violation), TEMPLATE_BACKENDS[case.device]  # alone: no winner by timing
    config = {**case.config_dict, **({"max_autotune_gemm_backends": family} if family else {})}
    mode = "max-autotune" if autotuned(config) else None
    backend = family or (template if kind in VALUE_CHECKS and mode else None)
    pin = {"max_autotune_gemm_backends": backend} if backend else {}
    found = None
    for seeded in (False, True) if kind == RAISES else (True,):
        plain = [Form.make(mode, {}, case.frozen_weights, seeded)] + \
            ([Form.make(mode, pin, case.frozen_weights, seeded)] if pin else [])
        found = next((f for f in plain if fails(f)), None)
        if found is None and fails(full := Form.make(None, config, case.frozen_weights, seeded)):
            found = full
            for key in sorted(config):
                if fails(found.without(key)):
                    found = found.without(key)
        if found is not None:
            break
    if found is not None and found.frozen and fails(found.replace(frozen=False)):
        found = found.replace(frozen=False)
    if found is not None and found.mode is None and dict(found.patch).get("max_autotune") and \
            fails(promoted := found.without("max_autotune").replace(mode="max-autotune")):
        found = promoted  # the spelling users write: torch.compile(..., mode="max-autotune")
    if found is not None and kind in VALUE_CHECKS and _autotuned(found) and len(_backends(found)) > 1 \
            and template in _backends(found) \
            and fails(pinned := found.with_key("max_autotune_gemm_backends", template)):
        found = pinned
    again = timed_run(found) if found is not None else None
    confirmed = again is not None and same_failure(again, violation)
    changes = [] if found is None else _flip_forms(found, kind)
    ran = {f: o for f in changes if (o := outcome(f) if flips else tried.get(f)) is not None}
    form = found or Form.make(None, config, case.frozen_weights, seeded=True)
    flipped = [(_describe(form, f), o) for f, o in ran.items()]
    return Search(form, tried.get(form), found is not None, confirmed, flipped, len(tried) + (again is not None),
                  time.monotonic() - began,
                  out_of_time=bool(untried) if found is None else again is None,
                  pending=[f for f in changes if f not in ran])


def more_flips(form: Form, pending: list[Form], run: Callable[[Form], Outcome],
               budget_s: float) -> tuple[list[tuple[str, Outcome]], list[Form]]:
    """Run the single changes `pending` of a found `form` (in order, until `budget_s` is spent or
    `run` cuts one): what each did, and those still not run."""
    began, done = time.monotonic(), list[tuple[str, Outcome]]()
    for i, change in enumerate(pending):
        ran = run(change) if time.monotonic() - began < budget_s else None
        if ran is None or ran.status == CUT:
            return done, pending[i:]
        done.append((_describe(form, change), ran))
    return done, []
