"""Delta-minimization of a failing case, after Hypothesis has shrunk it.

Hypothesis shrinks what the strategy draws (sizes, strides, choices), but cannot remove what the
strategy always produces: config keys, consumer steps, a second call, optional flags. This module
removes those while the case still fails the same way (`fails(candidate)` is True: the same
finding key showed up). It works on `Case.to_json()` dictionaries, so new Case fields take part
without changes here: every list-valued field is a graph to drop nodes from, every true flag is
tried as false, every config key and parameter is tried without. A candidate the Case model
rejects is simply one that does not fail (the worker reports it as invalid without compiling).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
CaseJson = dict[str, Any]
PROTECTED = frozenset({"inputs", "op", "device", "seed", "value_mode"})
"""Fields Hypothesis shrinks (or that define what the case is): never removed wholesale here."""
KEPT_CONFIG = frozenset({"max_autotune", "max_autotune_gemm", "max_autotune_gemm_backends",
                         "test_configs.max_mm_configs"})
"""Config keys that stay: a repro of this suite compiles with max-autotune, with an explicit backend
set (narrowed, never dropped: inductor's default set would let autotuning pick another kernel), and
the cap on Triton configs (without it a case compiles every config: only slower, and a campaign on
the H200 saw such a candidate run past the per-case timeout and reported it as a hang)."""


@dataclasses.dataclass
class Minimization:
    steps: int = 0  # candidates evaluated
    accepted: int = 0  # candidates that still failed the same way (and were kept)
    dropped: list[str] = dataclasses.field(default_factory=list)  # what was removed, e.g. "config.epilogue_fusion"
    complete: bool = True  # False when the time limit cut it short


class _OutOfTime(Exception):
    pass


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """Zeller's delta debugging: a 1-minimal subsequence of `items` for which `fails` holds
    (assumed to hold for `items`). The empty subsequence is tried first."""
    items = list(items)
    if items and fails([]):
        return []
    n = 2
    while len(items) >= 2:
        chunk = -(-len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        for i in range(len(subsets)):
            complement = [x for j, s in enumerate(subsets) if j != i for x in s]
            if fails(complement):
                items, n = complement, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(2 * n, len(items))
    return items


def delta_minimize(case: CaseJson, fails: Callable[[CaseJson], bool], time_limit_s: float,
                   clock: Callable[[], float] = time.monotonic) -> tuple[CaseJson, Minimization]:
    """Drop config keys, graph nodes (elements of list fields), flags and parameters from `case`
    while `fails` holds, until nothing more can go or `time_limit_s` runs out."""
    deadline = clock() + time_limit_s
    report = Minimization()
    best = copy.deepcopy(case)

    def attempt(candidate: CaseJson) -> bool:
        if clock() > deadline:
            raise _OutOfTime
        report.steps += 1
        ok = fails(candidate)
        report.accepted += ok
        return ok

    try:
        changed = True
        while changed:
            changed = False
            for reduce in (_drop_config_keys, _narrow_config_lists, _drop_list_elements, _clear_flags, _drop_params,
                           _plain_spelling):
                smaller = reduce(best, attempt, report)
                if smaller != best:
                    best, changed = smaller, True
    except _OutOfTime:
        report.complete = False
    return best, report


def _drop_config_keys(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    config = case.get("config")
    if not isinstance(config, dict) or not set(config) - KEPT_CONFIG:
        return case
    fixed = sorted(KEPT_CONFIG & set(config))
    optional = sorted(set(config) - KEPT_CONFIG)
    keys = fixed + ddmin(optional, lambda kept: attempt({**case, "config": {k: config[k] for k in fixed + kept}}))
    report.dropped += [f"config.{k}" for k in optional if k not in keys]
    return {**case, "config": {k: config[k] for k in sorted(keys)}} if len(keys) < len(config) else case


def _narrow_config_lists(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    """Comma-separated config values (the GEMM backend set): keep as few items as still fail.
    Fewer backends also means no autotuning race deciding whether the buggy kernel runs."""
    for key in sorted(case.get("config") or {}):
        value = case["config"][key]
        if not isinstance(value, str) or "," not in value:
            continue
        items = value.split(",")
        config = case["config"]

        def fails(xs: list[str], k: str = key, c: CaseJson = case, cfg: dict[str, Any] = config) -> bool:
            return bool(xs) and attempt({**c, "config": {**cfg, k: ",".join(xs)}})

        kept = ddmin(items, fails)
        if kept and len(kept) < len(items):
            report.dropped += [f"config.{key}:{item}" for item in items if item not in kept]
            case = {**case, "config": {**case["config"], key: ",".join(kept)}}
    return case


def _drop_list_elements(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    for field in sorted(case):
        value = case[field]
        if field in PROTECTED or not isinstance(value, list) or not value:
            continue

        def fails_without(idx: list[int], f: str = field, v: list[Any] = value, c: CaseJson = case) -> bool:
            return attempt({**c, f: [v[i] for i in idx]})

        kept = ddmin(range(len(value)), fails_without)
        if len(kept) < len(value):
            report.dropped += [f"{field}[{i}]={value[i]!r}" for i in range(len(value)) if i not in kept]
            case = {**case, field: [value[i] for i in kept]}
    return case


def _clear_flags(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    for field in sorted(case):
        if field not in PROTECTED and case[field] is True and attempt({**case, field: False}):
            report.dropped.append(field)
            case = {**case, field: False}
    return case


def _drop_params(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    params = case.get("params")
    if not isinstance(params, dict):
        return case
    for key in sorted(params):
        candidate = {**case, "params": {k: v for k, v in case["params"].items() if k != key}}
        if attempt(candidate):
            report.dropped.append(f"params.{key}")
            case = candidate
    return case


def _plain_spelling(case: CaseJson, attempt: Callable[[CaseJson], bool], report: Minimization) -> CaseJson:
    """The op as a plain torch.<op> call, if it still fails so (alpha and beta stay; an out= buffer,
    the last input, goes)."""
    spelling = case.get("spelling", "call")
    plain = {**case, "spelling": "call"}
    if spelling == "out":
        plain["inputs"] = case["inputs"][:-1]
        plain["second_call"] = case.get("second_call", [])[:-1]
        plain["mark_dynamic"] = [m for m in case.get("mark_dynamic", []) if m[0] < len(plain["inputs"])]
    if spelling == "call" or not attempt(plain):
        return case
    report.dropped.append(f"spelling={spelling}")
    return plain
