"""Known upstream bugs: which violations they explain, where they are tracked, which torch
versions they affect.

A violation explained here does not fail CI, but every run still checks the case and reports
that the bug still reproduces; an unexplained finding always fails."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from oracles.model import Violation
from strategies.case import Case, TensorSpec


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    oracles: tuple[str, ...]  # the oracles whose violations it explains
    applies: Callable[[Case], bool]  # the region of cases the bug is known to affect
    tracking: str  # upstream issue/PR, or the repro in this repo while it is not filed
    torch_versions: tuple[str, ...]  # version prefixes where its repro was seen failing, e.g. "2.13"
    signatures: tuple[str, ...] = ()  # regexes matching the start of the signatures it explains (any if empty)

    def explains(self, violation: Violation, case: Case, torch_version: str) -> bool:
        return (violation.oracle in self.oracles and self.applies(case)
                and (not self.signatures or any(re.match(p, violation.signature) for p in self.signatures))
                and any(torch_version.startswith(p) for p in self.torch_versions))


DEFAULT_BACKENDS = "ATEN,TRITON,CPP"  # inductor's max_autotune_gemm_backends default on both versions


def _backends(case: Case) -> list[str]:
    return str(case.config_dict.get("max_autotune_gemm_backends", DEFAULT_BACKENDS)).upper().split(",")


BATCHED_OPS = ("bmm", "baddbmm", "matmul")
CPP_COMPILE_ERROR = (r"crash:(CalledProcessError:cpp_builder\.py|CppCompileError:)",
                     r"choice-crash:\w+@CppTemplateCaller:(CalledProcessError|CppCompileError)")
"""Signatures of generated C++ that does not compile: the whole compile, or the CPP choice alone."""


def _frozen_cpp(case: Case) -> bool:
    return case.frozen_weights and "CPP" in _backends(case)


def _frozen_cpp_weight_with_offset(case: Case) -> bool:
    return _frozen_cpp(case) and any(t.offset for t in case.inputs[1:])


def _addmm_scalar_bias(case: Case) -> bool:
    return case.op == "addmm" and case.inputs[2].shape == ()


def _frozen_cpp_empty_reduction(case: Case) -> bool:
    return _frozen_cpp(case) and case.inputs[0].shape[-1] == 0


def _frozen_cpp_no_columns(case: Case) -> bool:
    return _frozen_cpp(case) and case.inputs[1].shape[-1] == 0


def _frozen_linear(case: Case, dtypes: tuple[str, ...]) -> bool:
    return (case.device == "cpu" and case.frozen_weights and case.op in ("mm", "addmm")
            and case.inputs[0].dtype in dtypes)


def _frozen_half_linear_empty_weight(case: Case) -> bool:
    return _frozen_linear(case, ("bfloat16", "float16")) and 0 in case.inputs[1].shape


def _frozen_float_linear_no_columns(case: Case) -> bool:
    return _frozen_linear(case, ("float32",)) and case.inputs[1].shape[-1] == 0


def _cpu_cpp_batched(case: Case) -> bool:
    return case.device == "cpu" and "CPP" in _backends(case) and case.op in BATCHED_OPS


def _cpu_cpp_bmm_empty_dim(case: Case) -> bool:
    a, b = case.inputs[0].shape, case.inputs[1].shape
    return _cpu_cpp_batched(case) and 0 in (a[-2], a[-1], b[-1])


def _cpu_cpp_bmm_epilogue_then_input_mutation(case: Case) -> bool:
    return _cpu_cpp_batched(case) and "mutate_input" in case.consumers and len(case.consumers) > 1


def _cpu_cpp_bmm_recompiled_for_batch_stride(case: Case) -> bool:
    x = case.inputs[0]
    return (_cpu_cpp_batched(case) and case.op != "baddbmm" and not case.dynamic and len(x.shape) == 3
            and bool(case.second_call) and case.second_call[0].stride[0] != x.stride[0])


def _cuda_triton_batched_no_rows_or_columns(case: Case) -> bool:
    return (case.device == "cuda" and "TRITON" in _backends(case) and case.op in BATCHED_OPS
            and 0 in (case.inputs[0].shape[-2], case.inputs[1].shape[-1]))


def _view_of_batched_matvec(case: Case) -> bool:
    return case.op in BATCHED_OPS and case.inputs[1].shape[-1] == 1 and "view_row" in case.consumers


def _cpu_cpp_dynamic(case: Case) -> bool:
    return case.device == "cpu" and "CPP" in _backends(case) and bool(case.second_call or case.dynamic or case.mark_dynamic)


def _triton_small_m_half_addmm(case: Case) -> bool:
    return (case.device == "cuda" and case.op == "addmm" and "TRITON" in _backends(case)
            and case.inputs[0].dtype in ("float16", "bfloat16") and case.inputs[0].shape[0] <= 16)


def _short_leading_dimension(t: TensorSpec) -> bool:
    """A matrix that ATen's CPU _int_mm passes on with a leading dimension shorter than it needs:
    row-major (unit column stride) with a row stride below the column count, or otherwise
    column-major (unit row stride) with a column stride below the row count. Fitted on every
    stride pair in {0, 1, 2, 3, 8, 13, 16}^2 of seven shapes, either operand."""
    (rows, cols), (s_row, s_col) = t.shape[-2:], t.stride[-2:]
    if s_col == 1:
        return s_row < cols
    return s_row == 1 and s_col < rows


def _cpu_int_mm_short_leading_dim(case: Case) -> bool:
    return case.device == "cpu" and case.op == "int_mm" and any(
        _short_leading_dimension(t) for t in case.inputs + case.second_call if len(t.shape) == 2)


def _cpu_half_baddbmm_zero_scalars(case: Case) -> bool:
    params = case.params_dict
    return (case.device == "cpu" and case.op == "baddbmm" and params.get("alpha") == 0.0
            and case.inputs[0].dtype in ("bfloat16", "float16"))


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        name="aten-cpu-baddbmm-zero-alpha-uninitialized",
        oracles=("numerics",),
        applies=_cpu_half_baddbmm_zero_scalars,
        tracking="repros/aten_baddbmm_zero_alpha_beta.py (not yet filed upstream): ATen's CPU bf16/fp16 "
                 "baddbmm with alpha=0 (and beta=0) leaves the output uninitialized; extern calls inherit it",
        torch_versions=("2.11", "2.13"),
    ),
    KnownBug(
        name="aten-int-mm-expanded-operand",
        oracles=("numerics",),
        applies=_cpu_int_mm_short_leading_dim,
        tracking="repros/eager_int_mm_expanded_operand.py (not yet filed upstream): ATen's CPU _int_mm "
                 "returns garbage when an operand's leading dimension is shorter than its rows (stride 0, "
                 "a (1, K) view with stride (1, 1)); compiled code inherits it through the extern kernel",
        torch_versions=("2.11", "2.13"),
    ),
    KnownBug(
        name="triton-mm-template-small-m-block-k-128",
        oracles=("numerics",),
        applies=_triton_small_m_half_addmm,
        tracking="repros/triton_addmm_alpha_beta_m1.py (not yet filed upstream): the BLOCK_K=128, "
                 "num_warps=1 config of triton::mm is wrong for fp16 addmm with M=1, K=177",
        torch_versions=("2.11",),
    ),
    KnownBug(
        name="cpp-gemm-dynamic-recompile-crash",
        oracles=("crash",),
        applies=_cpu_cpp_dynamic,
        tracking="repros/cpp_dynamic_recompile_crash.py (not yet filed upstream): benchmarking the CPP "
                 "choices of a dynamic-shape recompile imports triton / passes symbolic strides",
        torch_versions=("2.11", "2.13"),
        signatures=("crash:ModuleNotFoundError:", "crash:TypeError:"),
    ),
    KnownBug(
        name="cpp-gemm-frozen-k0-crash",
        oracles=("crash",),
        applies=_frozen_cpp_empty_reduction,
        tracking="repros/cpp_gemm_frozen_k0_crash.py (not yet filed upstream): get_cache_blocking "
                 "raises 'Cannot convert complex to float' for K == 0",
        torch_versions=("2.11", "2.13"),
        signatures=("crash:TypeError:",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-n0-compile-error",
        oracles=("crash", "numerics"),  # numerics: the CPP choice compiled alone (every_choice)
        applies=_frozen_cpp_no_columns,
        tracking="repros/cpp_gemm_frozen_n0_compile_error.py (not yet filed upstream): the kernel's "
                 "constexpr Nt_blocks is 0 and num_Nt_blocks divides by it; the C++ does not compile",
        torch_versions=("2.11", "2.13"),
        signatures=CPP_COMPILE_ERROR,
    ),
    KnownBug(
        name="freezing-half-linear-empty-weight-onednn",
        oracles=("crash",),
        applies=_frozen_half_linear_empty_weight,
        tracking="repros/freezing_half_linear_empty_weight_onednn.py (not yet filed upstream): freezing packs a "
                 "bf16/fp16 weight with K == 0 or N == 0 for oneDNN's inner product, which cannot build it",
        torch_versions=("2.11", "2.13"),
        signatures=(r"crash:RuntimeError:",),
    ),
    KnownBug(
        name="freezing-mkl-linear-n0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        applies=_frozen_float_linear_no_columns,
        tracking="repros/freezing_mkl_linear_n0_sigfpe.py (not yet filed upstream): freezing a float32 "
                 "mm weight with N == 0 for MKL's linear divides by zero (SIGFPE) once M > 128",
        torch_versions=("2.13",),
        signatures=(r"killed:SIGFPE:",),
    ),
    KnownBug(
        name="cpp-bmm-empty-dim-crash",
        oracles=("crash",),
        applies=_cpu_cpp_bmm_empty_dim,
        tracking="repros/cpp_bmm_empty_dim_crash.py (not yet filed upstream): lowering a bmm with CPP "
                 "choices and M, N or K == 0 raises AssertionError (View) or ZeroDivisionError",
        torch_versions=("2.11", "2.13"),
        signatures=(r"crash:(AssertionError|ZeroDivisionError):",),
    ),
    KnownBug(
        name="cpp-bmm-epilogue-input-mutation-crash",
        oracles=("crash",),
        applies=_cpu_cpp_bmm_epilogue_then_input_mutation,
        tracking="repros/cpp_bmm_epilogue_input_mutation_crash.py (not yet filed upstream): a CPP bmm "
                 "with a pointwise epilogue, then an in-place mutation of its input: AssertionError in ir.py",
        torch_versions=("2.11", "2.13"),
        signatures=(r"crash:AssertionError:ir\.py",),
    ),
    KnownBug(
        name="cpp-bmm-dynamic-batch-stride-compile-error",
        oracles=("crash", "numerics"),  # numerics: the CPP choice compiled alone (every_choice)
        applies=_cpu_cpp_bmm_recompiled_for_batch_stride,
        tracking="repros/cpp_bmm_dynamic_batch_stride_compile_error.py (not yet filed upstream): the "
                 "recompile makes x's batch stride symbolic; the CPP kernel uses it undeclared",
        torch_versions=("2.11", "2.13"),
        signatures=CPP_COMPILE_ERROR,
    ),
    KnownBug(
        name="layout-gate-counts-failed-templates",
        oracles=("layout_spec",),
        applies=_cuda_triton_batched_no_rows_or_columns,
        tracking="repros/layout_gate_counts_failed_templates.py (not yet filed upstream): _need_to_fix_layout "
                 "counts Triton candidates that then fail to build, so the extern-only result stays fixed",
        torch_versions=("2.11",),
        signatures=(r"fixed-when-allowed:",),
    ),
    KnownBug(
        name="matvec-view-output-strides",
        oracles=("numerics",),
        applies=_view_of_batched_matvec,
        tracking="repros/matvec_view_output_strides.py (not yet filed upstream): a view of a batched "
                 "matmul with N == 1 returned with the input's batch-inner strides, not eager's",
        torch_versions=("2.11", "2.13"),
        signatures=(r"output-strides:",),
    ),
    KnownBug(
        name="addmm-scalar-bias-indexerror",
        oracles=("crash",),
        applies=_addmm_scalar_bias,
        tracking="repros/addmm_scalar_bias_indexerror.py (not yet filed upstream): tuned_addmm reads "
                 "inp.get_stride()[0] before checking the bias rank",
        torch_versions=("2.13",),
        signatures=(r"crash:IndexError:kernel/mm\.py:tuned_addmm",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-weight-storage-offset",
        oracles=("numerics",),
        applies=_frozen_cpp_weight_with_offset,
        tracking="repros/cpp_gemm_frozen_weight_offset.py (not yet filed upstream; "
                 "related: https://github.com/pytorch/pytorch/pull/159233)",
        torch_versions=("2.11", "2.13"),
    ),
)


def process_killer(case: Case, torch_version: str, registry: tuple[KnownBug, ...] = KNOWN_BUGS) -> KnownBug | None:
    """The known bug that would kill a process running `case` (so only an isolated worker may)."""
    return next((b for b in registry if "process" in b.oracles and b.applies(case)
                 and any(torch_version.startswith(p) for p in b.torch_versions)), None)


def split_known(violations: list[Violation], case: Case, torch_version: str,
                registry: tuple[KnownBug, ...] = KNOWN_BUGS) -> tuple[list[Violation], list[tuple[Violation, KnownBug]]]:
    """(unexplained violations, explained ones with the bug that explains them)."""
    new, known = [], []
    for v in violations:
        bug = next((b for b in registry if b.explains(v, case, torch_version)), None)
        if bug is None:
            new.append(v)
        else:
            known.append((v, bug))
    return new, known
