"""Frozen weights in the forms users hold them (issue 28, principle 3): a weight-only int8 linear
reaches inductor's woq pattern and `_weight_int8pack_mm`, where a planted kernel that drops one
column's scale is a wrong value, while the same case passes on the real inductor."""

from __future__ import annotations

import pytest
import torch
from torch._inductor import select_algorithm

from fuzz.run.harness import HashLedger, run_case
from oracles import check_all
from strategies.case import Case, TensorSpec, contiguous_strides

REAL_INT8PACK_MM = select_algorithm.extern_kernels._weight_int8pack_mm


def int8_linear(dtype: str = "bfloat16") -> Case:
    """`(x @ w.t().to(x.dtype)) * scale`: an int8 (16, 32) weight held as nn.Linear's, per-channel scale."""
    return Case.make(op="mm", device="cpu", value_mode="exact_int", seed=7, frozen_weights=True, weight_form="int8",
                     inputs=(TensorSpec((24, 32), contiguous_strides((24, 32)), 0, dtype),
                             TensorSpec((32, 16), (1, 32), 0, "int8")),
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})


def selected_ops(case: Case) -> tuple[list[str], set[str]]:
    """(the ops that reached template selection, the signatures of the case's violations)."""
    obs = run_case(case, ledger=HashLedger())
    return [s.op_name for s in obs.selections], {v.signature for v in check_all(obs)}


def test_the_woq_pattern_fires_on_the_drawn_spelling_and_passes_on_real_inductor() -> None:
    assert selected_ops(int8_linear()) == (["_weight_int8pack_mm"], set())
    ops, found = selected_ops(int8_linear("float16"))  # the plain path: mm (2.13) or mkldnn's linear (2.11)
    assert ops and "_weight_int8pack_mm" not in ops and found == set(), "the pattern needs bfloat16 activations"


def test_an_int8pack_mm_that_drops_the_last_columns_scale_is_a_wrong_value(monkeypatch: pytest.MonkeyPatch) -> None:
    def last_scale_dropped(x: torch.Tensor, w: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
        return REAL_INT8PACK_MM(x, w, torch.cat([scales[:-1], scales.new_ones(1)]))

    monkeypatch.setattr(select_algorithm.extern_kernels, "_weight_int8pack_mm", last_scale_dropped)
    ops, found = selected_ops(int8_linear())
    assert ops == ["_weight_int8pack_mm"] and "exact-mismatch:mm:bfloat16" in found, (ops, found)
