"""Bugs outside the single plain call (issue 28): each planted where only a program shaped like a
user's reaches it (another spelling of the op, an activation after it), caught by the oracle
named, while the same case passes on the real inductor and the plain call misses the bug."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch
from torch._inductor import select_algorithm
from torch._inductor.decomposition import select_decomp_table

from fuzz.probe.plants import Plant, plant_named
from fuzz.run.harness import HashLedger, run_case
from oracles import check_all
from strategies.case import Case, TensorSpec, contiguous_strides

REAL_BMM = select_algorithm.extern_kernels.bmm


def spec(shape: tuple[int, ...], dtype: str = "float32") -> TensorSpec:
    return TensorSpec(shape, contiguous_strides(shape), 0, dtype)


def mm(spelling: str = "call", consumers: tuple[str, ...] = (), frozen: bool = False) -> Case:
    return Case.make(op="mm", inputs=(spec((24, 40)), spec((40, 8))), device="cpu", value_mode="exact_int", seed=7,
                     spelling=spelling, consumers=consumers, frozen_weights=frozen,
                     config={"max_autotune": True, "freezing": frozen,
                             "max_autotune_gemm_backends": "ATEN,CPP" if frozen else "ATEN"})


def signatures(case: Case) -> set[str]:
    return {v.signature for v in check_all(run_case(case, ledger=HashLedger()))}


def caught_only_by(monkeypatch: pytest.MonkeyPatch, plant: Callable[[], None], plain: Case, reaching: Case) -> set[str]:
    """The signatures of `reaching` under the planted bug, after checking that both cases pass on
    the real inductor and that `plain` still passes with the bug planted."""
    assert signatures(plain) == set() and signatures(reaching) == set(), "the real inductor must pass"
    plant()
    assert signatures(plain) == set(), "the plain form must not reach the planted bug"
    return signatures(reaching)


def test_an_extern_bmm_wrong_for_one_batch_is_reached_by_an_mm_spelled_as_einsum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """einsum('mk,kn->mn') lowers to a bmm of batch 1: a kernel that mishandles a batch of one is
    only reached through that spelling."""
    def single_batch_off_by_one(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        REAL_BMM(a, b, out=out)
        if a.shape[0] == 1:
            out[0, 0, 0] += 1
        return out

    found = caught_only_by(monkeypatch, lambda: monkeypatch.setattr(select_algorithm.extern_kernels, "bmm",
                                                                    single_batch_off_by_one),
                           mm(), mm("einsum"))
    assert "exact-mismatch:mm:float32" in found, found


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_a_wrong_silu_decomposition_is_caught_after_a_frozen_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """The activation a model puts after its projection, on the CPU's frozen CPP GEMM path (the
    template fuses such epilogues): a silu decomposed with the wrong sign is a wrong value."""
    silu = torch.ops.aten.silu.default

    def plant() -> None:
        monkeypatch.setitem(select_decomp_table(), silu, lambda x: x / (1 + torch.exp(x)))  # the table in use

    found = caught_only_by(monkeypatch, plant, mm("linear", frozen=True),
                           mm("linear", ("add_bias_row", "silu"), frozen=True))
    assert any(s.startswith("tolerance:mm:float32") for s in found), found


def test_a_softmax_that_does_not_subtract_the_row_max_is_caught_after_an_mm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Attention scores go through a softmax: one decomposed without subtracting its row's max
    overflows exp on rows eager computes (NaN or inf where the float64 reference is finite)."""
    softmax = torch.ops.aten._softmax.default

    def unshifted(x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
        e = torch.exp(x)
        return e / e.sum(dim, keepdim=True)

    def plant() -> None:
        monkeypatch.setitem(select_decomp_table(), softmax, unshifted)

    scores = dataclasses.replace(mm(consumers=("softmax",)), seed=18)  # a row max of 111: exp(111) overflows float32
    found = caught_only_by(monkeypatch, plant, mm(), scores)
    assert "nonfinite:mm:float32" in found, found


def test_a_graph_loaded_wrong_from_the_fx_graph_cache_is_caught_on_a_warm_cache_case(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's default pipeline caches compiled graphs (the suite turns the cache off to observe
    every lowering): a graph that comes back from the cache computing another result is a wrong
    value of the warm compile alone."""
    from torch._inductor.codecache import FxGraphCache

    lookup = FxGraphCache._lookup_graph

    def stale_lookup(*args: object, **kwargs: object) -> object:
        graph, info = lookup(*args, **kwargs)
        if graph is not None:
            run = graph.current_callable

            def off_by_one(inputs: list[torch.Tensor]) -> object:
                outputs = run(inputs)
                outputs[0].view(-1)[0] += 1
                return outputs
            graph.current_callable = off_by_one
        return graph, info

    warm = Case.make(op="mm", inputs=(spec((24, 40)), spec((40, 8))), device="cpu", value_mode="exact_int", seed=7,
                     warm_cache=True, config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    found = caught_only_by(monkeypatch, lambda: monkeypatch.setattr(FxGraphCache, "_lookup_graph",
                                                                    staticmethod(stale_lookup)), mm(), warm)
    assert "exact-mismatch:mm:float32" in found, found


@pytest.mark.parametrize("op", ["mm", "addmm"])
def test_an_extern_mm_wrong_in_the_backward_pass_is_caught_by_a_training_case(
        monkeypatch: pytest.MonkeyPatch, plant: Callable[[str], Plant], op: str) -> None:
    """Training: inductor compiles the backward graph too, and its products (the gradients, with
    transposed operands) go through the same mm lowering; an extern mm wrong only while a compiled
    backward runs is a wrong gradient of a training case, which the forward-only case misses."""
    inputs = (spec((24, 40)), spec((40, 8))) + ((spec((8,)),) if op == "addmm" else ())
    training = Case.make(op=op, inputs=inputs, device="cpu", value_mode="normal", seed=7, backward=True,
                         consumers=("chain_mm",), config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    forward = dataclasses.replace(training, backward=False)
    found = caught_only_by(monkeypatch, lambda: plant("mm-wrong-in-backward"), forward, training)
    assert any(plant_named("mm-wrong-in-backward").caused("numerics", s) for s in found), found
    assert not any(s.startswith(f"tolerance:{op}:") for s in found), found  # the forward outputs stay right


def test_an_out_buffer_left_unwritten_is_caught_by_an_out_spelled_case(
        monkeypatch: pytest.MonkeyPatch, plant: Callable[[str], Plant]) -> None:
    """`torch.mm(a, b, out=buf)`: functionalized, the result is copied into the caller's buffer, a
    graph input the compiled graph updates; a lowering that drops that update leaves the buffer (and
    the result, which is the buffer) as it was, while the call without out= updates no input."""
    out = TensorSpec((24, 8), (8, 1), 3, "float32")  # at an offset in its storage
    spelled = Case.make(op="mm", inputs=(spec((24, 40)), spec((40, 8)), out), device="cpu", value_mode="exact_int",
                        seed=7, spelling="out", config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    found = caught_only_by(monkeypatch, lambda: plant("input-update-dropped"), mm(), spelled)
    assert any(plant_named("input-update-dropped").caused("numerics", s) for s in found), found
    assert all("mm:float32" in s for s in found), found


def test_a_computed_operand_passed_with_the_wrong_strides_is_caught_by_a_case_with_a_prologue(
        monkeypatch: pytest.MonkeyPatch, plant: Callable[[str], Plant]) -> None:
    """Models compute the activation a projection reads (`linear(x.transpose(1, 2).contiguous()...)`,
    relu between two linears): the op's operand is then a buffer inductor computed and lays out,
    read through a view; a view passed to the kernel with row-major strides misreads a transposed
    copy, while the plain call's operands are graph inputs, passed as they are."""
    case = dataclasses.replace(mm(), prologue=("transposed_copy",))
    found = caught_only_by(monkeypatch, lambda: plant("view-passed-row-major"), mm(), case)
    assert any(plant_named("view-passed-row-major").caused("numerics", s) for s in found), found


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_an_upcast_read_as_the_wrong_narrow_type_is_caught_by_a_case_with_an_upcast_prologue(
        monkeypatch: pytest.MonkeyPatch, plant: Callable[[str], Plant]) -> None:
    """Models with bfloat16 activations cast up to float32 before a float32 head (`x.float() @ w`);
    a cast lowering that loads the bfloat16 bits as float16 misreads every value, while the plain
    float32 call casts nothing."""
    case = dataclasses.replace(mm(), prologue=("upcast_bfloat16",))
    found = caught_only_by(monkeypatch, lambda: plant("upcast-reads-float16"), mm(), case)
    assert any(plant_named("upcast-reads-float16").caused("numerics", s) for s in found), found


def test_an_integer_product_computed_in_float32_is_caught_by_large_integer_values(
        monkeypatch: pytest.MonkeyPatch, plant: Callable[[str], Plant]) -> None:
    """Index arithmetic and counts multiply int64 tensors, which eager computes exactly on the CPU:
    a kernel that takes an integer product through float32 is exact for small values and for every
    float case, and wrong once the products pass 2**24 (the large integer values: up to 2**40)."""
    large = Case.make(op="mm", inputs=(spec((6, 5), "int64"), spec((5, 4), "int64")), device="cpu", value_mode="large",
                      seed=7, config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    small = dataclasses.replace(large, value_mode="exact_int")
    assert signatures(mm()) == set()
    found = caught_only_by(monkeypatch, lambda: plant("integer-product-through-float32"), small, large)
    assert signatures(mm()) == set(), "a float product must not reach the planted bug"
    assert any(plant_named("integer-product-through-float32").caused("numerics", s) for s in found), found
    assert "exact-mismatch:mm:int64" in found, found
