"""Silence and crash oracles: a case must reach template selection (or be legitimately
decomposed: before lowering, or by the lowering itself into pointwise/reduction IR), and a
compile that fails where eager succeeds is a finding, unless a selection got no choice and no
backend of the set could serve it (oracles/templates.py decides)."""

from __future__ import annotations

from oracles.model import CRASH, VACUOUS, Observation, Violation
from oracles.templates import unservable

TEMPLATE_CONFIG_OPS = ("mm", "addmm", "bmm", "baddbmm", "int_mm", "scaled_mm", "mm_plus_mm")
"""Selections that inductor gathers through get_template_configs on every supported version."""


def check_observed(obs: Observation) -> list[Violation]:
    if obs.eager_failure or obs.compile_failure:
        return []
    op = obs.case.op
    if obs.post_grad_targets is None:
        return [Violation("observed", VACUOUS, f"no-lowering:{op}",
                          f"{op}: inductor never ran its post-grad passes (a cache skipped lowering, or the "
                          "observer's hooks moved): nothing was checked")]
    selections = [e for e in obs.selections if e.source == "autotune"]
    silent = [n for n in obs.lowered if not n.selected and not n.decomposed]
    if silent:
        return [Violation("observed", VACUOUS, f"unselected:{op}",
                          f"{op}: inductor lowered {silent[0].op} into {silent[0].ir} without any template "
                          "selection being recorded")]
    if obs.post_grad_targets and not selections and not any(n.decomposed for n in obs.lowered):
        return [Violation("observed", VACUOUS, f"unselected:{op}",
                          f"{op}: {len(obs.post_grad_targets)} mm-family node(s) reached lowering "
                          f"({', '.join(obs.post_grad_targets)}) but no template selection was recorded")]
    gathered = {e.op_name for e in obs.selections if e.source == "template_configs"}
    bypassed = sorted({e.op_name for e in selections if e.op_name in TEMPLATE_CONFIG_OPS} - gathered)
    if bypassed:
        return [Violation("observed", VACUOUS, f"choices-bypassed:{op}",
                          f"{op}: autotuning saw {bypassed} but get_template_configs was never called for it")]
    return []


def check_crash(obs: Observation) -> list[Violation]:
    failure = obs.compile_failure
    if obs.eager_failure or failure is None or unservable(obs):
        return []
    return [Violation("crash", CRASH, f"crash:{failure.type}:{failure.frame or 'outside-inductor'}",
                      f"{obs.case.op}: eager ran, compiled raised {failure.type}: {failure.message}")]
