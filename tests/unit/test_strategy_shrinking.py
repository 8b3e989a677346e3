"""Every branch of the strategies shrinks to the plain form (issue 30, item 4): the minimal case of
each op is contiguous, with no consumer, inductor's default config and none of the rare features,
so that a shrunk failure names only what it needs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from strategies.case import Case, contiguous_strides
from strategies.cases import DEVICE_OPS, cases

SETTINGS = settings(database=None, max_examples=2000, phases=(Phase.generate, Phase.shrink), derandomize=True,
                    suppress_health_check=list(HealthCheck))  # the profiles may turn shrinking off
PLAIN_CONFIG = {"max_autotune": False, "max_autotune_gemm": False,
                "max_autotune_gemm_backends": "ATEN,TRITON,CPP", "max_autotune_allow_flexible_layouts": False}
"""Inductor's defaults (a plain compile), spelled out, and no other key."""


def minimal(op: str, condition: Callable[[Case], bool] = lambda c: True) -> Case:
    return find(cases(op=op, device="cpu"), condition, settings=SETTINGS)


@pytest.mark.parametrize("op", DEVICE_OPS["cpu"])
def test_minimal_case_is_the_plain_form(op: str) -> None:
    case = minimal(op)
    assert case.config_dict == PLAIN_CONFIG
    assert case.value_mode == "normal" and case.seed == 0 and case.spelling == "call"
    assert not (case.consumers or case.frozen_weights or case.dynamic or case.mark_dynamic or case.second_call
                or case.every_choice or case.shared_storage or case.tf32 or case.reduced_precision or case.warm_cache)
    for i, t in enumerate(case.inputs):
        plain = (1, t.shape[0]) if op == "scaled_mm" and i == 1 else contiguous_strides(t.shape)  # B column-major
        assert t.offset == 0 and t.stride == plain, (op, t)
        assert 0 not in t.shape, (op, t)
    if op in ("addmm", "baddbmm"):  # a full bias (no broadcast), alpha = beta = 1
        assert case.inputs[2].shape == (*case.inputs[0].shape[:-1], case.inputs[1].shape[-1])
        assert case.params_dict == {"alpha": 1.0, "beta": 1.0}


def test_a_consumer_shrinks_to_one_simple_step() -> None:
    """Exactly one step, all else plain (usually relu; a rare branch taken by one draw, the second
    product or an output step, is as short by Hypothesis' order as one list element, so the shrink
    may end there)."""
    case = minimal("mm", lambda c: bool(c.consumers))
    assert len(case.consumers) == 1, case.consumers
    assert case.config_dict == PLAIN_CONFIG and case.value_mode == "normal" and not case.every_choice
    assert all(t.stride == contiguous_strides(t.shape) for t in case.inputs)


def test_a_rare_feature_shrinks_alone() -> None:
    case = minimal("mm", lambda c: c.every_choice)
    assert case.consumers == () and not case.frozen_weights and case.config_dict == PLAIN_CONFIG
    assert all(t.stride == contiguous_strides(t.shape) for t in case.inputs)


def test_a_spelling_shrinks_to_the_operator_and_the_scalars_to_one() -> None:
    case = minimal("addmm", lambda c: c.spelling != "call")
    assert case.spelling == "operator" and case.params_dict == {"alpha": 1.0, "beta": 1.0}
    assert case.consumers == () and case.config_dict == PLAIN_CONFIG
