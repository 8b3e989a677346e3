"""Bugs a user fears, planted close to the bound (each passed the suite's earlier, looser oracles):
the oracle named in each test reports them, and the same case passes on the real inductor.
On the CPU, in the CI profile; the GPU-only ones run where a GPU is visible."""

from __future__ import annotations

import collections.abc
import dataclasses

import pytest
import torch
from torch._inductor import select_algorithm

from fuzz.probe.plants import Plant
from fuzz.run.harness import HashLedger, run_case
from fuzz.run.session import FuzzSession
from oracles import check_all
from oracles.model import Observation
from strategies.case import Case, TensorSpec, contiguous_strides
from tests.checking import is_cpp_choice, rig_benchmarks

Kernel = collections.abc.Callable[..., torch.Tensor]
REAL_MM = select_algorithm.extern_kernels.mm
Planter = collections.abc.Callable[[str], Plant]  # the `plant` fixture (tests/planted/conftest.py)
cuda = pytest.mark.gpu  # skipped without a GPU (conftest.py)


def spec(shape: tuple[int, ...], dtype: str = "float32", stride: tuple[int, ...] | None = None) -> TensorSpec:
    return TensorSpec(shape, stride or contiguous_strides(shape), 0, dtype)


def mm_case(dtype: str, k: int, value_mode: str = "normal", device: str = "cpu", **kw: object) -> Case:
    return Case.make(op="mm", inputs=(spec((32, k), dtype), spec((k, 24), dtype)), device=device, value_mode=value_mode,
                     seed=3, config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN",
                                     "max_autotune_allow_flexible_layouts": True, **kw.pop("config", {})}, **kw)


def observe(case: Case) -> Observation:
    return run_case(case, ledger=HashLedger())


def signatures(obs: Observation) -> set[str]:
    return {v.signature for v in check_all(obs)}


def planted(monkeypatch: pytest.MonkeyPatch, name: str, kernel: Kernel, case: Case) -> set[str]:
    """The case's violation signatures with `extern_kernels.<name>` replaced by `kernel`, after
    checking that the real kernel passes."""
    assert signatures(observe(case)) == set(), "the real inductor must pass this case"
    monkeypatch.setattr(select_algorithm.extern_kernels, name, kernel)
    return signatures(observe(case))


# --- 1. the numerics bound: tight for fp16/bf16 and for fp32 at large K -------------------------

def accumulate_in_output_dtype(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """The classic wrong-accumulator bug: float32 products, partial sums rounded to the dtype."""
    acc = torch.zeros(out.shape, dtype=out.dtype)
    for k in range(a.shape[1]):
        acc = (acc.float() + a[:, k:k + 1].float() * b[k:k + 1, :].float()).to(out.dtype)
    return out.copy_(acc)


def half_precision_split_k(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """Split-K with the two partial sums rounded to fp16/bf16 (cuBLAS's reduced-precision
    reduction) while the case does not allow it."""
    k = a.shape[1] // 2
    parts = [torch.mm(x.float(), y.float()).to(out.dtype).float() for x, y in ((a[:, :k], b[:k]), (a[:, k:], b[k:]))]
    return out.copy_(parts[0] + parts[1])


def two_ulps_off(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """Right everywhere but one element, which is two units in the last place off."""
    REAL_MM(a, b, out=out)
    out[0, 0] = torch.nextafter(torch.nextafter(out[0, 0], out.new_tensor(float("inf"))), out.new_tensor(float("inf")))
    return out


def silent_tf32(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """float32 operands rounded to TF32 (10 mantissa bits) although TF32 is off."""
    def tf32(x: torch.Tensor) -> torch.Tensor:
        bits = x.contiguous().view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
    return REAL_MM(tf32(a), tf32(b), out=out)


@pytest.mark.parametrize(("dtype", "k"), [("bfloat16", 64), ("float16", 64), ("bfloat16", 1024), ("float16", 1024)])
def test_accumulating_in_the_output_dtype_is_caught(monkeypatch: pytest.MonkeyPatch, dtype: str, k: int) -> None:
    assert planted(monkeypatch, "mm", accumulate_in_output_dtype, mm_case(dtype, k)) == {f"tolerance:mm:{dtype}"}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_split_k_partials_are_caught(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    assert planted(monkeypatch, "mm", half_precision_split_k, mm_case(dtype, 256)) == {f"tolerance:mm:{dtype}"}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])  # float32: summation order alone moves more ulps
def test_one_element_two_ulps_off_is_caught(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    assert planted(monkeypatch, "mm", two_ulps_off, mm_case(dtype, 256)) == {f"tolerance:mm:{dtype}"}


@pytest.mark.parametrize(("k", "value_mode", "signature"), [(1024, "normal", "tolerance:mm:bfloat16"),
                                                            (256, "exact_int", "exact-mismatch:mm:bfloat16")])
def test_a_dropped_k_term_is_caught(plant: Planter, k: int, value_mode: str, signature: str) -> None:
    case = mm_case("bfloat16", k, value_mode)
    obs = observe(case)
    if value_mode == "exact_int":  # sparse small integers keep bf16 exact at this K
        assert obs.results[0].exact
    assert signatures(obs) == set(), "the real inductor must pass this case"
    assert plant("mm-drops-a-k-term").caused("numerics", signature)
    assert signatures(observe(case)) == {signature}


def test_silent_tf32_is_caught_at_large_k(monkeypatch: pytest.MonkeyPatch) -> None:
    assert planted(monkeypatch, "mm", silent_tf32, mm_case("float32", 1200)) == {"tolerance:mm:float32"}


# --- 2. non-finite values ---------------------------------------------------------------------------

def addmm_case(beta: float) -> Case:
    return Case.make(op="addmm", inputs=(spec((16, 32)), spec((32, 8)), spec((8,))), device="cpu",
                     value_mode="nonfinite", seed=2, params={"alpha": 1.0, "beta": beta},
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})


def reads_one_past_each_row(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """An unmasked load: each row of `a` but the last is read one element too far (into the
    padding of its leading dimension), times a zero weight."""
    REAL_MM(a, b, out=out)
    past = torch.as_strided(a, (a.shape[0] - 1,), (a.stride(0),), a.storage_offset() + a.shape[1] * a.stride(1))
    out[:-1] += 0 * past[:, None]
    return out


def test_a_bias_with_beta_zero_must_be_ignored(plant: Planter) -> None:
    case = addmm_case(beta=0.0)
    assert signatures(observe(case)) == set(), "the real inductor must pass this case"
    assert plant("addmm-beta-zero-bias").caused("numerics", "nonfinite:addmm:float32")
    assert "nonfinite:addmm:float32" in signatures(observe(case))


def test_nan_in_padding_leaks_through_an_unmasked_load(monkeypatch: pytest.MonkeyPatch) -> None:
    case = Case.make(op="mm", inputs=(spec((16, 32), stride=(40, 1)), spec((32, 8))), device="cpu", seed=2,
                     value_mode="exact_int", config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    assert planted(monkeypatch, "mm", reads_one_past_each_row, case) == {"exact-mismatch:mm:float32"}


# --- 4 and 5. failures that were rejected, templates that vanish -----------------------------------

def frozen_mm(backends: str) -> Case:
    return Case.make(op="mm", inputs=(spec((16, 32)), spec((32, 8))), device="cpu", seed=2, value_mode="exact_int",
                     frozen_weights=True, config={"max_autotune": True, "max_autotune_gemm_backends": backends})


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
@pytest.mark.parametrize(("backends", "expected"), [("ATEN,CPP", {"missing:packed_linear:CPP"}),
                                                    ("CPP", {"missing:packed_linear:CPP"})])
def test_a_cpp_template_that_silently_vanishes_is_reported(monkeypatch: pytest.MonkeyPatch, backends: str,
                                                           expected: set[str]) -> None:
    import torch._inductor.fx_passes.mkldnn_fusion as fusion
    import torch._inductor.utils as utils

    case = frozen_mm(backends)
    assert signatures(observe(case)) == set()
    monkeypatch.setattr(utils, "use_cpp_gemm_template", lambda *a, **k: False)
    for module in (fusion, torch._inductor.mkldnn_lowerings, torch._inductor.kernel.mm):
        monkeypatch.setattr(module, "use_cpp_gemm_template", lambda *a, **k: False, raising=False)
    verdict = FuzzSession().evaluate(case)
    assert not verdict.rejected
    assert expected <= {v.signature for v in verdict.violations}


def test_a_cpp_choice_missing_from_its_single_choice_compile_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPP template offered to the autotuned compile but not to the compile meant to run it
    alone: that compile autotunes over what is left, so the CPP kernel went unchecked."""
    from torch._inductor.codegen.cpp_gemm_template import CppGemmTemplate

    case = dataclasses.replace(frozen_mm("ATEN,CPP"), every_choice=True)
    assert signatures(observe(case)) == set()
    real, calls = CppGemmTemplate.add_choices.__func__, []

    def first_call_only(cls: type, choices: list[object], *args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(cls, choices, *args, **kwargs) if len(calls) == 1 else None

    monkeypatch.setattr(CppGemmTemplate, "add_choices", classmethod(first_call_only))
    assert "not-isolated:mm@CppTemplateCaller" in signatures(observe(case))


def test_single_choice_compiles_repeat_the_first_compiles_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pad-mm decides by benchmarking (on a GPU), so it may decide otherwise in a later compile of the
    same program: planted here as a decision that flips on every call. A single-choice compile
    repeats the first compile's decisions, per op and operand shapes, and decides anew only past them."""
    from torch._inductor.fx_passes import pad_mm

    from fuzz.probe.observe import record_selections

    flips = iter([True, False, False, True, True])
    monkeypatch.setattr(pad_mm, "should_pad", lambda *args, **kwargs: next(flips))
    a, b, c = torch.ones(8, 6), torch.ones(6, 4), torch.ones(8, 8)
    with record_selections("cpu") as first:
        decided = [pad_mm.should_pad(None, a, b, torch.ops.aten.mm), pad_mm.should_pad(None, c, c, torch.ops.aten.mm)]
    with record_selections("cpu", padding=first.padding) as again:
        repeated = [pad_mm.should_pad(None, a, b, torch.ops.aten.mm), pad_mm.should_pad(None, c, c, torch.ops.aten.mm),
                    pad_mm.should_pad(None, c, c, torch.ops.aten.mm)]
    assert decided == [True, False] and repeated == [True, False, False]
    assert list(again.padding.values()) == [[True], [False, False]]


def test_a_backward_compiled_on_another_thread_is_recorded() -> None:
    """On CUDA the autograd engine runs a backward on its device thread, and AOTAutograd compiles
    the backward there, lazily, under the forward's inductor config: the observer sees the choices
    gathered there too (V's choices handler is thread-local; planted: a CPU backward on a thread)."""
    import threading

    import torch._dynamo

    from fuzz.probe.observe import record_selections

    torch._dynamo.reset()
    a, b = torch.ones(8, 6, requires_grad=True), torch.ones(6, 4, requires_grad=True)
    patch = {"max_autotune": True, "max_autotune_gemm_backends": "ATEN", "force_disable_caches": True}

    def backward() -> None:
        with torch._inductor.config.patch(patch):  # what AOTAutograd's lazy backward compile restores
            out.sum().backward()

    with torch._inductor.config.patch(patch), record_selections("cpu") as rec:
        out = torch.compile(torch.mm)(a, b)
        worker = threading.Thread(target=backward)
        worker.start()
        worker.join()
    events = [(e.source, e.op_name) for e in rec.selections]
    assert events == [("template_configs", "mm"), ("autotune", "mm")] * 3  # the forward, then both gradients'
    assert torch.equal(a.grad, torch.full((8, 6), 4.0))


@cuda
def test_a_pad_decision_that_flips_between_compiles_leaves_every_choice_isolated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor.fx_passes import pad_mm

    calls: list[int] = []

    def flipping(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        return len(calls) % 2 == 1

    case = mm_case("bfloat16", 1023, device="cuda", every_choice=True,
                   config={"max_autotune_gemm_backends": "ATEN,TRITON", "test_configs.max_mm_configs": 2})
    monkeypatch.setattr(pad_mm, "should_pad", flipping)
    found = signatures(observe(case))
    assert calls and not any(s.startswith("not-isolated") for s in found), found


def failing_benchmarks(monkeypatch: pytest.MonkeyPatch, fails: collections.abc.Callable[[object], bool]) -> None:
    """Autotuning benchmarks every choice `fails` picks as inf (what inductor records for a choice
    that raised while it ran)."""
    rig_benchmarks(monkeypatch, lambda timings: {c: float("inf") if fails(c) else t for c, t in timings.items()})


def test_every_choice_failing_to_run_is_a_crash_not_a_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    case = frozen_mm("ATEN,CPP")
    assert signatures(observe(case)) == set()
    failing_benchmarks(monkeypatch, lambda choice: True)  # NoValidChoicesError, once a "config limit"
    verdict = FuzzSession().evaluate(case)
    assert not verdict.rejected and verdict.observation.compile_failure.no_valid_choices == "all-failed-to-run"
    assert any(v.oracle == "crash" for v in verdict.violations), verdict.violations


def test_a_template_dropped_after_failing_to_run_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    case = frozen_mm("ATEN,CPP")
    assert signatures(observe(case)) == set()
    failing_benchmarks(monkeypatch, is_cpp_choice)
    found = signatures(observe(case))  # ATen serves it: the compile succeeds without the CPP choice
    assert "dropped:packed_linear@CppTemplateCaller:benchmark" in found


# --- 10. the flexible-layout path --------------------------------------------------------------------

def ignores_out_strides(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """Writes the product as if `out` were a contiguous tensor of its size (right for a buffer of
    its own, wrong once a later pass hands it a slice of a larger one)."""
    torch.as_strided(out, out.shape, contiguous_strides(tuple(out.shape)), out.storage_offset()).copy_(torch.mm(a, b))
    return out


@pytest.mark.parametrize("consumer", ["cat_mm_cols", "cat_mm_rows"])
def test_both_products_of_a_cat_are_written_into_its_buffer(consumer: str) -> None:
    placements = observe(mm_case("float32", 16, "exact_int", consumers=(consumer,))).placements
    assert len(placements) == 2 and all(p.flexible and p.changed and p.storage != p.buffer for p in placements)


def test_a_kernel_that_ignores_its_slice_of_a_cat_buffer_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    case = mm_case("float32", 16, "exact_int", consumers=("cat_mm_cols",))  # slices with a row stride of 36
    assert planted(monkeypatch, "mm", ignores_out_strides, case) == {"exact-mismatch:mm:float32"}


# --- 7. output strides read on the device ---------------------------------------------------------------

@cuda
def test_padded_output_strides_on_the_gpu_are_seen() -> None:
    """Shape padding pads a bmm's rows (N = 35 -> 36) and returns a view of the padded product: a
    registered bug (pad-mm-output-padded-strides) that only strides read on the device show, since a
    copy to the CPU is dense again. force_shape_pad makes the padding decision deterministic."""
    case = Case.make(op="bmm", inputs=(spec((2, 16, 8399)), spec((2, 8399, 35))), device="cuda", seed=1,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN", "force_shape_pad": True})
    obs = observe(case)
    result = obs.results[0]
    assert result.compiled_meta is not None and result.compiled_meta.stride == (576, 36, 1)
    assert result.compiled.stride() == (560, 35, 1)  # what reading strides after .cpu() saw
    assert "output-strides:bmm" in signatures(obs)


# --- 1 on the GPU: the per-kernel bound of a Triton template ----------------------------------------------

TRITON_DOT = "acc += tl.dot(a, b, allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)"


@cuda
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_triton_template_rounding_its_accumulator_per_k_tile_is_caught(monkeypatch: pytest.MonkeyPatch,
                                                                         dtype: str) -> None:
    """The wrong-accumulator bug inside inductor's Triton mm template: after each K tile the float32
    accumulator is rounded to the operands' dtype (K = 256: 4 to 8 roundings where a correct kernel
    rounds once). The generated kernel source is rewritten as it is compiled (the output module the
    real run loaded is forgotten, so that the source is compiled again)."""
    from torch._inductor import async_compile, codecache

    case = mm_case(dtype, 256, device="cuda", config={"max_autotune_gemm_backends": "TRITON",
                                                      "test_configs.max_mm_configs": 1})
    session = FuzzSession()  # its template catalogue lets the src_hash oracle judge the Triton choice
    assert session.evaluate(case).violations == [], "the real inductor must pass this case"
    real, rewritten = async_compile.AsyncCompile.triton, []

    def triton(self, kernel_name, source_code, *args, **kwargs):
        if TRITON_DOT in source_code:
            rewritten.append(kernel_name)
            source_code = source_code.replace(
                TRITON_DOT, f"acc = ({TRITON_DOT.removeprefix('acc += ')} + acc).to(a.dtype).to(ACC_TYPE)")
        return real(self, kernel_name, source_code, *args, **kwargs)

    monkeypatch.setattr(async_compile.AsyncCompile, "triton", triton)
    monkeypatch.setattr(codecache.PyCodeCache, "modules_no_attr", {})
    assert {v.signature for v in session.evaluate(case).violations} == {f"tolerance:mm:{dtype}"}
    assert rewritten, "the Triton mm template's accumulation line was not found"
