"""The building blocks of the registry's entries: trigger regions (which cases a bug affects) and
trigger removers (the same case without what triggers it)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz.bugs.entry import BATCHED_OPS, HALF
from strategies.backends import config_backends, join_backends
from strategies.case import Case, TensorSpec, contiguous_strides
from strategies.vocabulary import CAT_MM_STEPS, INT8_FORMS, SCALAR_SPELLINGS


def backends(case: Case) -> list[str]:
    return list(config_backends(case.config_dict))


def without_backend(backend: str) -> Callable[[Case], Case]:
    """Untrigger: the same case with `backend` dropped from its GEMM backend set (ATEN if empty)."""
    def drop(case: Case) -> Case:
        kept = [b for b in backends(case) if b != backend] or ["ATEN"]
        return replace(case, config={**case.config_dict, "max_autotune_gemm_backends": join_backends(kept)})
    return drop


def _fields(case: Case) -> dict[str, Any]:
    return {f.name: getattr(case, f.name) for f in dataclasses.fields(case) if f.name not in ("config", "params")} \
        | {"params": case.params_dict}


def replace(case: Case, **changes: Any) -> Case:
    return Case.make(**{**_fields(case), "config": case.config_dict, **changes})


def with_aten(case: Case) -> Case:
    """ATEN joins the case's backend set (order kept; unchanged where it is in): a variant no
    template serves still runs (a re-run rejected as unservable confirms nothing)."""
    if "ATEN" in backends(case):
        return case
    return replace(case, config={**case.config_dict,
                                 "max_autotune_gemm_backends": join_backends(["ATEN", *backends(case)])})


def unfrozen(case: Case) -> Case:
    """Untrigger: the weights as graph inputs, not constants; ATEN joins the backend set, since no
    template serves an unfrozen mm on the CPU (a CPP-only variant would be rejected, confirming nothing);
    the weight is plain (an int8 weight in the activations' dtype)."""
    dtype = case.inputs[0].dtype
    weight = (lambda t: TensorSpec(t.shape, t.stride, t.offset, dtype)) if case.weight_form in INT8_FORMS else None
    return with_aten(with_input(case, 1, weight or (lambda t: t), frozen_weights=False, weight_form="plain"))


def with_input(case: Case, index: int, change: Callable[[TensorSpec], TensorSpec], **changes: Any) -> Case:
    """The case with input `index` changed, in the first call and (if any) the second (and the
    fields `changes` names, in the same step: a Case is validated whole)."""
    def apply(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(change(t) if i == index else t for i, t in enumerate(specs))
    return replace(case, inputs=apply(case.inputs), second_call=apply(case.second_call), **changes)


def calls(case: Case) -> list[tuple[TensorSpec, ...]]:
    """The inputs of each call of the case (a second call may change sizes: a region holds in any)."""
    return [case.inputs, *([case.second_call] if case.second_call else [])]


def span(t: TensorSpec) -> int:
    """The dense stride of dim 0: the extent of one slice along it (dims 1..)."""
    return max([n * st for n, st in zip(t.shape[1:], t.stride[1:], strict=True)] + [1])


def cpu_half_baddbmm(case: Case) -> bool:
    """A CPU fp16/bf16 baddbmm with alpha == 0."""
    return (case.device == "cpu" and case.op == "baddbmm" and case.inputs[0].dtype in HALF
            and case.params_dict.get("alpha") == 0.0)


def frozen_cpp(case: Case) -> bool:
    return case.frozen_weights and "CPP" in backends(case)


def cpu_cpp_batched(case: Case) -> bool:
    """A CPU case inductor lowers as a bmm with CPP choices: a batched op, or an einsum spelling
    (torch.einsum computes even a plain 'mk,kn->mn' with bmm)."""
    return case.device == "cpu" and "CPP" in backends(case) and (case.op in BATCHED_OPS or case.spelling == "einsum")


MKL_M0_PACK_MIN_WEIGHT = 32768
"""The smallest K * N for which MKL's weight packing with batch size 0 was seen to die (on an AVX-512
Xeon, torch 2.13: (K, N) = (4096, 8), (200, 200), (214, 255), (256, 256) die; (182, 182), (257, 128),
(214, 128), (512, 8), (128, 128) and smaller do not): the region holds every size seen dying."""


def bf16_batched_odd_k_nonfinite(case: Case) -> bool:
    """A CPU bmm/baddbmm/matmul of bf16 batches (2 or more: one batch takes the mm path) with an odd K
    and nonfinite values (an inf in A's last column is what trips it)."""
    a = case.inputs[0]
    return (case.device == "cpu" and case.op in BATCHED_OPS and a.dtype == "bfloat16" and len(a.shape) == 3
            and a.shape[0] >= 2 and a.shape[-1] % 2 == 1 and case.value_mode == "nonfinite")


@functools.cache
def _host_has_amx_bf16() -> bool:
    """This CPU has AMX bf16 tiles (the `amx_bf16` flag of /proc/cpuinfo; False where it cannot be read)."""
    try:
        return " amx_bf16" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def bf16_nonfinite_on_amx(case: Case) -> bool:
    """A CPU bmm/baddbmm/matmul of 3-D bf16 operands (in any call) with nonfinite values, on a host with
    AMX bf16 tiles."""
    a_specs = [case.inputs[0], *case.second_call[:1]]
    return (case.device == "cpu" and case.op in BATCHED_OPS and case.value_mode == "nonfinite"
            and any(a.dtype == "bfloat16" and len(a.shape) == 3 for a in a_specs) and _host_has_amx_bf16())


def retyped(case: Case, dtype: Callable[[str], str], **changes: Any) -> Case:
    """The case with each tensor of either call in `dtype(its dtype)` (same shapes, strides and
    offsets), and the other fields `changes` names."""
    def convert(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(t.shape, t.stride, t.offset, dtype(t.dtype)) for t in specs)
    return replace(case, inputs=convert(case.inputs), second_call=convert(case.second_call), **changes)


def in_float32(case: Case) -> Case:
    """Untrigger: every bf16 tensor as float32 (same shapes, strides and offsets); a cast form's
    float32 model then computes in float32 as it holds its weights (the plain form)."""
    form = "plain" if case.weight_form == "cast" else case.weight_form
    return retyped(case, lambda d: "float32" if d == "bfloat16" else d, weight_form=form)


def frozen_linear(case: Case, dtypes: tuple[str, ...]) -> bool:
    """A frozen linear on the CPU: an mm, an addmm, or a matmul of a batch of sequences (its weight 2-D)."""
    return (case.device == "cpu" and case.frozen_weights and case.op in ("mm", "addmm", "matmul")
            and case.inputs[0].dtype in dtypes)


def linear_rows(case: Case, a: TensorSpec) -> int:
    """M of the product of activation `a`: a matmul's batch of sequences is one linear of B * M rows."""
    return math.prod(a.shape[:-1]) if case.op == "matmul" else a.shape[-2]


def frozen_half_product(case: Case) -> bool:
    """A frozen fp16/bf16 linear on the CPU: an mm, addmm or matmul (frozen_linear), or either product
    of an mm_plus_mm (its weights: inputs[1::2], x1 and x3; an addmm's is x1 alone)."""
    return (case.device == "cpu" and case.frozen_weights and case.op in ("mm", "addmm", "matmul", "mm_plus_mm")
            and case.inputs[0].dtype in HALF)


def _short_leading_dimension(t: TensorSpec) -> bool:
    """A matrix that ATen's CPU _int_mm passes on with a leading dimension shorter than it needs:
    row-major (unit column stride) with a row stride below the column count, or otherwise
    column-major (unit row stride) with a column stride below the row count. Fitted on every
    stride pair in {0, 1, 2, 3, 8, 13, 16}^2 of seven shapes, either operand."""
    (rows, cols), (s_row, s_col) = t.shape[-2:], t.stride[-2:]
    if s_col == 1:
        return s_row < cols
    return s_row == 1 and s_col < rows


def int_mm_short_leading_dim(case: Case) -> bool:
    return case.device == "cpu" and case.op == "int_mm" and any(
        _short_leading_dimension(t) for t in case.inputs + case.second_call if len(t.shape) == 2)


def dense_int_mm_operands(case: Case) -> Case:
    def dense(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(t.shape, contiguous_strides(t.shape), t.offset, t.dtype) for t in specs)
    return replace(case, inputs=dense(case.inputs), second_call=dense(case.second_call))


TRITON_BLOCK_K_128 = "BLOCK_K=128, BLOCK_M=16, BLOCK_N=16"


def triton_small_m_half_addmm(case: Case) -> bool:
    """A small-M half addmm whose selection may offer the buggy config (not excluded by a regex)."""
    return (case.device == "cuda" and case.op == "addmm" and "TRITON" in backends(case)
            and case.inputs[0].dtype in HALF and any(a.shape[0] <= 16 for a, *_ in calls(case))
            and "test_configs.autotune_choice_desc_regex" not in case.config_dict)


def without_triton_block_k_128(case: Case) -> Case:
    return replace(case, config={**case.config_dict,
                                  "test_configs.autotune_choice_desc_regex": f"^(?!.*{TRITON_BLOCK_K_128})"})


def dynamic_narrow_of_offset_out(case: Case) -> bool:
    """An out= buffer at a storage offset, a program returning a narrow of the op's result (a view of
    the buffer) and dynamic shapes: inductor returns that view at offset 0 of the buffer's storage."""
    out = case.out_buffer
    return (out is not None and case.inputs[out].offset != 0 and "narrow" in case.consumers
            and (case.dynamic or bool(case.mark_dynamic)))


def static(case: Case) -> Case:
    return replace(case, dynamic=False, mark_dynamic=(), second_call=())


def nonzero_scalars(case: Case) -> Case:
    """Untrigger: every zero alpha or beta of the case set to 1."""
    return replace(case, params={k: 1.0 if k in ("alpha", "beta") and v == 0.0 else v
                                 for k, v in case.params_dict.items()})


def scalar_to_vector_bias(case: Case) -> Case:
    return with_input(case, 2, lambda t: TensorSpec((1,), (1,), 0, t.dtype))


def half_product_twice(case: Case) -> bool:
    """A CPU fp16/bf16 batched product (either operand batched: matmul broadcasts the other) that
    some call computes twice: M == 1 and a cat_mm_rows step, or N == 1 and a cat_mm_cols step (each
    then repeats the very product), which inductor may lower as two identical reductions (M == 1:
    the bmm decomposition; N == 1: seen with a strided x1)."""
    return (case.device == "cpu" and case.op in ("bmm", "matmul")
            and any(a.dtype in HALF and max(len(a.shape), len(b.shape)) >= 3  # a batched product
                    and (("cat_mm_rows" in case.consumers and a.shape[-2] == 1)
                         or ("cat_mm_cols" in case.consumers and b.shape[-1] == 1))
                    for a, b, *_ in calls(case)))


def without_steps(case: Case, *steps: str) -> Case:
    """The case without the named steps after the op."""
    return replace(case, consumers=tuple(c for c in case.consumers if c not in steps))


def half_row_sums_twice(case: Case) -> bool:
    """A CPU fp16/bf16 training addmm or baddbmm whose bias is broadcast along the rows, with an
    add_bias_row step (x1's first row added): the backward sums the same gradient over the rows
    twice, once for the bias and once for that row of x1 (two identical reductions)."""
    bias = case.inputs[2].shape if len(case.inputs) > 2 else None
    return (case.device == "cpu" and case.backward and case.op in ("addmm", "baddbmm") and bias is not None
            and case.inputs[0].dtype in HALF and "add_bias_row" in case.consumers
            and (len(bias) < 2 or bias[-2] == 1))


def half_reductions_twice(case: Case) -> bool:
    """Two identical fp16/bf16 reductions in one CPU graph: a repeated product (half_product_twice)
    or a training program's repeated row sum (half_row_sums_twice)."""
    return half_product_twice(case) or half_row_sums_twice(case)


def without_repeated_reduction(case: Case) -> Case:
    """Untrigger of half_reductions_twice: without the cat_mm steps that repeat the product, else
    without the add_bias_row step whose gradient repeats the bias's row sum."""
    if half_product_twice(case):
        return without_steps(case, "cat_mm_rows", "cat_mm_cols")
    return without_steps(case, "add_bias_row")


def weight_at_offset_zero(case: Case) -> Case:
    return with_input(case, 1, lambda t: TensorSpec(t.shape, t.stride, 0, t.dtype))


CPP_COMPILE_ERROR = (r"crash:(CalledProcessError:cpp_builder\.py:_run_compile_cmd|CppCompileError:.*)",
                     r"choice-crash:\w+@CppTemplateCaller:(CalledProcessError|CppCompileError)",
                     r"dropped:\w+@CppTemplateCaller:(precompile|benchmark)")
"""Generated C++ that does not compile: the whole compile fails, the CPP choice compiled alone
fails, or autotuning drops the CPP choice (with ATen in the set)."""


def with_config(**changes: object) -> Callable[[Case], Case]:
    """Untrigger: the same case with these inductor config keys set."""
    return lambda case: replace(case, config={**case.config_dict, **changes})


def without_config(*keys: str) -> Callable[[Case], Case]:
    """Untrigger: the same case without these inductor config keys (inductor's defaults for them)."""
    return lambda case: replace(case, config={k: v for k, v in case.config_dict.items() if k not in keys})


def scaled(case: Case) -> bool:
    """An alpha or beta other than 1 (the scalars a pass that rewrites addmm may drop)."""
    return case.params_dict.get("alpha", 1.0) != 1.0 or case.params_dict.get("beta", 1.0) != 1.0


def decomposed_addmm_with_scalars(case: Case) -> bool:
    """A CPU addmm with alpha or beta != 1 that decompose_mm_pass rewrites (M <= 1, K and N <= 2048 in
    some call, static shapes)."""
    return (case.device == "cpu" and case.op == "addmm" and not case.dynamic
            and "decompose_mm_pass" in (case.config_dict.get("post_grad_fusion_options") or {})
            and scaled(case)
            and any(x.shape[0] <= 1 and max(w.shape) <= 2048 for x, w, *_ in calls(case)))


POINTWISE_STEPS = ("relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "add_bias_row", "add", "to_float32")
"""Consumer steps inductor's post-grad passes count as pointwise uses of the op's result."""


def unfused_zero_scalar_addmm(case: Case) -> bool:
    """A CUDA addmm call with alpha or beta 0 whose result feeds a pointwise step: post-grad's
    unfuse_bias_add_to_pointwise rewrites it into mm + alpha * .. + beta * input."""
    return (case.device == "cuda" and case.op == "addmm" and case.spelling == "call"
            and 0.0 in (case.params_dict.get("alpha"), case.params_dict.get("beta"))
            and bool(case.consumers) and case.consumers[0] in POINTWISE_STEPS)


def concat_linear_addmm(case: Case) -> bool:
    """A frozen CPU addmm with the projections step under cpp.enable_concat_linear: freezing's
    concat-linear pattern fuses the three calls into one addmm over concatenated weights and biases."""
    return (case.device == "cpu" and case.op == "addmm" and case.frozen_weights and "projections" in case.consumers
            and bool(case.config_dict.get("cpp.enable_concat_linear")))


def frozen_integer_linear(case: Case) -> bool:
    """A frozen integer product freezing packs as a linear for MKL or oneDNN (`_is_packable_linear`):
    an mm, a matmul of a batch of sequences, mm_plus_mm's products, or an addmm spelled `a @ b + bias`
    or `F.linear` (an mm before the add, for any bias), with alpha == 1, beta 0 or 1 and a 1-D bias,
    or with a cat_mm step (its `x0 @ x1[...]` is an mm of the frozen weight: a 5-minute CPU
    campaign, seed 14, crashed in constant folding's packing of it). cpp.weight_prepack=False does
    not keep it out: the packing patterns are registered at a process's first freezing compile
    (fuzz.probe.inductor.init_freezing_patterns)."""
    if not (case.device == "cpu" and case.frozen_weights and case.integer_product()
            and case.op in ("mm", "addmm", "matmul", "mm_plus_mm")):
        return False
    if case.op != "addmm" or case.spelling not in SCALAR_SPELLINGS or set(case.consumers) & set(CAT_MM_STEPS):
        return True
    params = case.params_dict
    return params.get("alpha", 1.0) == 1.0 and params.get("beta", 1.0) in (0.0, 1.0) and len(case.inputs[2].shape) == 1


def int8_cpp_product(case: Case) -> bool:
    """An int8 or uint8 product (not int_mm's) offered CPP GEMM choices: a bmm (cpu_cpp_batched) or a
    frozen product."""
    return (case.integer_product() and case.inputs[0].dtype in ("int8", "uint8")
            and (cpu_cpp_batched(case) or frozen_cpp(case)))


def narrow_integer_bmm_vector(case: Case) -> bool:
    """An integer product narrower than int64 with a CPU bmm of M == 1 or N == 1 in some call: the op
    (bmm, a matmul with a batched weight, an einsum, a baddbmm spelled `x0 @ x1 + x2`) or a cat_mm
    step's `x0 @ x1` on batched operands (half of x0's rows, or of x1's columns). tuned_bmm's
    memory-bound decomposition, sum(a * b), sums integers into int64."""
    if not (case.device == "cpu" and case.integer_product() and case.inputs[0].dtype != "int64"):
        return False
    op_is_bmm = (case.op == "bmm" or case.spelling == "einsum"
                 or (case.op == "matmul" and len(case.inputs[1].shape) >= 3)
                 or (case.op == "baddbmm" and case.spelling not in SCALAR_SPELLINGS))  # x0 @ x1 + x2
    for a, b, *_ in calls(case):
        m, n = a.shape[-2], b.shape[-1]
        products = [(m, n)] if op_is_bmm else []
        if len(a.shape) >= 3 and len(b.shape) >= 3:
            products += [((m + 1) // 2, n)] if "cat_mm_rows" in case.consumers else []
            products += [(m, (n + 1) // 2)] if "cat_mm_cols" in case.consumers else []
        if any(1 in p for p in products):
            return True
    return False


def in_int64(case: Case) -> Case:
    """Untrigger: every tensor of an integer product as int64 (same shapes, strides and offsets)."""
    return retyped(case, lambda d: "int64")
