"""Bugs behind an inductor option (issue 28, principle 4): each planted in a rewrite that only a
drawn knob turns on, caught by the oracle named on the case that draws the knob, while the same
case passes on the real inductor."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import find
from torch._inductor.fx_passes import pad_mm
from torch._inductor.fx_passes.split_cat import POST_GRAD_PATTERNS

from fuzz.run.harness import HashLedger, run_case
from oracles import check_all
from strategies.case import Case, TensorSpec, contiguous_strides
from strategies.configs import device_knobs

aten = torch.ops.aten
DECOMPOSE_MM = {"post_grad_fusion_options": {"decompose_mm_pass": {}}}
FORCE_PAD = {"force_shape_pad": True}


def mm(m: int, n: int, k: int, knobs: dict[str, Any]) -> Case:
    shapes = ((m, k), (k, n))
    return Case.make(op="mm", inputs=tuple(TensorSpec(s, contiguous_strides(s), 0, "float32") for s in shapes),
                     device="cpu", value_mode="exact_int", seed=7,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN", **knobs})


def signatures(case: Case) -> set[str]:
    return {v.signature for v in check_all(run_case(case, ledger=HashLedger()))}


def test_the_knobs_planted_here_are_drawn() -> None:
    assert find(device_knobs("cpu", frozen=False)["post_grad_fusion_options"], lambda _: True) \
        == DECOMPOSE_MM["post_grad_fusion_options"]
    assert find(device_knobs("cuda", frozen=False)["force_shape_pad"], lambda _: True) is True


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_a_decomposed_mm_that_drops_a_k_term_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """`decompose_mm_pass` rewrites an mm with one row (on the CPU) into a product summed over K:
    a rewrite that sums one term short is a wrong value, reached only with the knob drawn."""
    decompose = POST_GRAD_PATTERNS["decompose_mm_pass"]
    real_apply = decompose.apply
    rewritten = []

    def one_term_short(graph: Any) -> int:
        found = real_apply(graph)
        g = getattr(graph, "graph", graph)
        for total in g.find_nodes(op="call_function", target=aten.sum.dim_IntList):
            product = total.args[0]
            k = product.meta["val"].shape[-2]
            with g.inserting_before(total):
                short = g.call_function(aten.slice.Tensor, (product, -2, 0, k - 1))
            short.meta["val"] = product.meta["val"][..., : k - 1, :]
            total.replace_input_with(product, short)
            rewritten.append(k)
        return found

    knob, plain = mm(1, 8, 40, DECOMPOSE_MM), mm(1, 8, 40, {})
    assert signatures(knob) == set() and signatures(plain) == set(), "the real inductor must pass"
    monkeypatch.setattr(decompose, "apply", one_term_short)
    assert signatures(plain) == set() and rewritten == [], "without the knob nothing is decomposed"
    assert "exact-mismatch:mm:float32" in signatures(knob)
    assert rewritten == [40]


def test_shape_padding_with_ones_is_caught_when_padding_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """`force_shape_pad` pads every mm pad-mm can pad (CUDA: the CPU build has neither the device
    check nor Triton that pad-mm wants, so both are let through here, as on a GPU): a pad that
    fills K's padding with ones instead of zeros adds a term per padded column."""
    padded = []

    def pad_mat1(mat1: torch.Tensor, *, m_padded_length: int, k_padded_length: int,
                 is_bmm: bool = False) -> torch.Tensor:
        padded.append(k_padded_length)
        return aten.constant_pad_nd(mat1, [0, k_padded_length, 0, m_padded_length] + [0, 0] * is_bmm, 1.0)

    def pad_mat2(mat2: torch.Tensor, *, k_padded_length: int, n_padded_length: int,
                 is_bmm: bool = False) -> torch.Tensor:
        return aten.constant_pad_nd(mat2, [0, n_padded_length, 0, k_padded_length] + [0, 0] * is_bmm, 1.0)

    case = mm(24, 8, 37, FORCE_PAD)  # float32 K pads to a multiple of 4: 37 -> 40
    assert signatures(case) == set(), "the real inductor must pass"
    monkeypatch.setattr(pad_mm, "check_device", lambda a, b: True)
    monkeypatch.setattr(pad_mm, "has_triton", lambda: True)
    assert signatures(case) == set(), "inductor's own padding, forced on the CPU, must pass"
    monkeypatch.setattr(pad_mm, "pad_mat1", pad_mat1)
    monkeypatch.setattr(pad_mm, "pad_mat2", pad_mat2)
    assert "exact-mismatch:mm:float32" in signatures(case)
    assert padded == [3]
