"""Known upstream bugs: the exact trigger of each, the violations it explains, where it is tracked
and which torch versions it affects.

A violation counts as known only if (1) its case lies in the bug's trigger region, (2) its
signature (and, for crashes, its message) is one the bug produces, and (3) it disappears when
the trigger is removed: FuzzSession re-runs the case once with `untrigger(case)` (e.g. the
weight's offset zeroed, the CPP backend dropped) and anything still failing the same way is a
new finding. Worker deaths (the `process` oracle) cannot be re-run in the dead worker and are
matched by (1) and (2) alone. A known violation does not fail CI, but every run still checks the
case and reports that the bug still reproduces."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from oracles.model import OutputCheck, Violation
from oracles.numerics import AGREES_PREFIX, wrong_elements
from strategies.case import Case, TensorSpec, contiguous_strides


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    oracles: tuple[str, ...]  # the oracles whose violations it explains
    signatures: tuple[str, ...]  # regexes matching the whole signature of each violation it explains
    applies: Callable[[Case], bool]  # the trigger: the region of cases the bug is known to affect
    untrigger: Callable[[Case], Case]  # the same case without the trigger (outside the region)
    tracking: str  # upstream issue/PR, or the repro in this repo while it is not filed
    torch_versions: tuple[str, ...]  # version prefixes where its repro was seen failing, e.g. "2.13"
    devices: tuple[str, ...]  # the devices ("cpu", "cuda") its repro was seen failing on
    messages: tuple[str, ...] = ()  # regexes one of which the violation's message must contain (if any)
    lives_in: str = ""  # ATEN: an ATen kernel (eager shows it too); TEMPLATE: inductor's generated code; "": any
    fingerprint: Callable[[OutputCheck], bool] | None = None  # wrong values: are they what this bug produces?
    eager_shows: bool = True  # an ATen bug: eager shows it on the case's own inputs (not only on inductor's copies)

    def matches(self, violation: Violation, case: Case, torch_version: str) -> bool:
        """Region, signature, message, version and device match (the re-run without the trigger is
        the caller's: FuzzSession.evaluate)."""
        return (violation.oracle in self.oracles and case.device in self.devices and self.applies(case)
                and any(re.fullmatch(p, violation.signature) for p in self.signatures)
                and (not self.messages or any(re.search(p, violation.message) for p in self.messages))
                and any(torch_version.startswith(p) for p in self.torch_versions))

    def fits(self, violation: Violation, check: OutputCheck | None) -> bool:
        """The violation comes from a choice this bug can be in, and (for a wrong value, `check` the
        output it judged) its deviation is the bug's: an ATen bug's shows in eager at every element
        where the compiled output deviates; a fingerprint, where the entry has one, holds."""
        family = choice_family(violation.signature)
        if self.lives_in == ATEN and family and not family.startswith("aten::"):
            return False
        if self.lives_in == TEMPLATE and family.startswith("aten::"):
            return False
        if check is None or check.compiled.shape != check.reference.shape:
            return True
        if self.lives_in == ATEN and self.eager_shows and not eager_deviates_too(check):
            return False
        return self.fingerprint is None or self.fingerprint(check)


ATEN, TEMPLATE = "aten", "template"


def choice_family(signature: str) -> str:
    """The choice a signature names after '@' (e.g. "aten::mm", "triton::mm", "CppTemplateCaller");
    "" for an autotuned result, which may come from any choice."""
    found = re.search(r"@(\w+(?:::\w+)?)", signature)
    return found.group(1) if found else ""


def eager_deviates_too(check: OutputCheck) -> bool:
    """Eager deviates from the reference wherever the compiled output does (values aside: an ATen
    bug may leave garbage, which differs from call to call)."""
    wrong = wrong_elements(check.compiled, check)
    return bool(wrong.any()) and not bool((wrong & ~wrong_elements(check.eager, check)).any())


def nan_where_finite(check: OutputCheck) -> bool:
    """The fingerprint of a zero scalar times inf/NaN: every wrong element is NaN."""
    wrong = wrong_elements(check.compiled, check)
    return bool(wrong.any()) and bool(check.compiled.double()[wrong].isnan().all())


EAGER_AGREES_NAME = "eager-agrees"
"""What `known` says of a EAGER_AGREED violation no registered ATen bug explains: eager and
compiled agree, the float64 reference differs (reported apart; never new)."""


DEFAULT_BACKENDS = "ATEN,TRITON,CPP"  # inductor's max_autotune_gemm_backends default on both versions
BATCHED_OPS = ("bmm", "baddbmm", "matmul")
HALF = ("bfloat16", "float16")
WRONG_VALUES = r"(exact-mismatch|tolerance|nonfinite)"  # the numerics signatures of a wrong value
EAGER_AGREED = f"({re.escape(AGREES_PREFIX)})"  # eager agrees: an ATen bug's signature, optional


def _backends(case: Case) -> list[str]:
    return str(case.config_dict.get("max_autotune_gemm_backends", DEFAULT_BACKENDS)).upper().split(",")


def without_backend(backend: str) -> Callable[[Case], Case]:
    """Untrigger: the same case with `backend` dropped from its GEMM backend set (ATEN if empty)."""
    def drop(case: Case) -> Case:
        kept = [b for b in _backends(case) if b != backend] or ["ATEN"]
        return _replace(case, config={**case.config_dict, "max_autotune_gemm_backends": ",".join(kept)})
    return drop


def _fields(case: Case) -> dict[str, object]:
    return {f.name: getattr(case, f.name) for f in dataclasses.fields(case) if f.name not in ("config", "params")} \
        | {"params": case.params_dict}


def _replace(case: Case, **changes: object) -> Case:
    return Case.make(**{**_fields(case), "config": case.config_dict, **changes})


def _unfrozen(case: Case) -> Case:
    """Untrigger: the weights as graph inputs, not constants; ATEN joins the backend set, since no
    template serves an unfrozen mm on the CPU (a CPP-only variant would be rejected, confirming nothing)."""
    backends = _backends(case)
    return _replace(case, frozen_weights=False,
                    config={**case.config_dict, "max_autotune_gemm_backends": ",".join(dict.fromkeys(["ATEN", *backends]))})


def _with_input(case: Case, index: int, change: Callable[[TensorSpec], TensorSpec]) -> Case:
    """The case with input `index` changed, in the first call and (if any) the second."""
    def apply(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(change(t) if i == index else t for i, t in enumerate(specs))
    return _replace(case, inputs=apply(case.inputs), second_call=apply(case.second_call))


def _calls(case: Case) -> list[tuple[TensorSpec, ...]]:
    """The inputs of each call of the case (a second call may change sizes: a region holds in any)."""
    return [case.inputs, *([case.second_call] if case.second_call else [])]


def _span(t: TensorSpec) -> int:
    """The dense stride of dim 0: the extent of one slice along it (dims 1..)."""
    return max([n * st for n, st in zip(t.shape[1:], t.stride[1:])] + [1])


def _cpu_half_baddbmm(case: Case) -> bool:
    """A CPU fp16/bf16 baddbmm with alpha == 0."""
    return (case.device == "cpu" and case.op == "baddbmm" and case.inputs[0].dtype in HALF
            and case.params_dict.get("alpha") == 0.0)


def _frozen_cpp(case: Case) -> bool:
    return case.frozen_weights and "CPP" in _backends(case)


def _cpu_cpp_batched(case: Case) -> bool:
    return case.device == "cpu" and "CPP" in _backends(case) and case.op in BATCHED_OPS


MKL_M0_PACK_MIN_WEIGHT = 32768
"""The smallest K * N for which MKL's weight packing with batch size 0 was seen to die (on an AVX-512
Xeon, torch 2.13: (K, N) = (4096, 8), (200, 200), (214, 255), (256, 256) die; (182, 182), (257, 128),
(214, 128), (512, 8), (128, 128) and smaller do not): the region holds every size seen dying."""


def _bf16_batched_odd_k_nonfinite(case: Case) -> bool:
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


def _bf16_nonfinite_on_amx(case: Case) -> bool:
    """A CPU bmm/baddbmm/matmul of 3-D bf16 operands (in any call) with nonfinite values, on a host with
    AMX bf16 tiles."""
    a_specs = [case.inputs[0], *case.second_call[:1]]
    return (case.device == "cpu" and case.op in BATCHED_OPS and case.value_mode == "nonfinite"
            and any(a.dtype == "bfloat16" and len(a.shape) == 3 for a in a_specs) and _host_has_amx_bf16())


def _in_float32(case: Case) -> Case:
    """Untrigger: every bf16 tensor as float32 (same shapes, strides and offsets)."""
    def widen(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(t.shape, t.stride, t.offset, "float32" if t.dtype == "bfloat16" else t.dtype)
                     for t in specs)
    return _replace(case, inputs=widen(case.inputs), second_call=widen(case.second_call))


def _frozen_linear(case: Case, dtypes: tuple[str, ...]) -> bool:
    return case.device == "cpu" and case.frozen_weights and case.op in ("mm", "addmm") and case.inputs[0].dtype in dtypes


def _short_leading_dimension(t: TensorSpec) -> bool:
    """A matrix that ATen's CPU _int_mm passes on with a leading dimension shorter than it needs:
    row-major (unit column stride) with a row stride below the column count, or otherwise
    column-major (unit row stride) with a column stride below the row count. Fitted on every
    stride pair in {0, 1, 2, 3, 8, 13, 16}^2 of seven shapes, either operand."""
    (rows, cols), (s_row, s_col) = t.shape[-2:], t.stride[-2:]
    if s_col == 1:
        return s_row < cols
    return s_row == 1 and s_col < rows


def _int_mm_short_leading_dim(case: Case) -> bool:
    return case.device == "cpu" and case.op == "int_mm" and any(
        _short_leading_dimension(t) for t in case.inputs + case.second_call if len(t.shape) == 2)


def _dense_int_mm_operands(case: Case) -> Case:
    def dense(specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(t.shape, contiguous_strides(t.shape), t.offset, t.dtype) for t in specs)
    return _replace(case, inputs=dense(case.inputs), second_call=dense(case.second_call))


TRITON_BLOCK_K_128 = "BLOCK_K=128, BLOCK_M=16, BLOCK_N=16"


def _triton_small_m_half_addmm(case: Case) -> bool:
    """A small-M half addmm whose selection may offer the buggy config (not excluded by a regex)."""
    return (case.device == "cuda" and case.op == "addmm" and "TRITON" in _backends(case)
            and case.inputs[0].dtype in HALF and any(a.shape[0] <= 16 for a, *_ in _calls(case))
            and "test_configs.autotune_choice_desc_regex" not in case.config_dict)


def _without_triton_block_k_128(case: Case) -> Case:
    return _replace(case, config={**case.config_dict,
                                  "test_configs.autotune_choice_desc_regex": f"^(?!.*{TRITON_BLOCK_K_128})"})


def _static(case: Case) -> Case:
    return _replace(case, dynamic=False, mark_dynamic=(), second_call=())


def _scalar_to_vector_bias(case: Case) -> Case:
    return _with_input(case, 2, lambda t: TensorSpec((1,), (1,), 0, t.dtype))


def _half_row_product_twice(case: Case) -> bool:
    """A CPU fp16/bf16 batched product with M == 1 in some call (inductor decomposes it into a
    reduction) whose cat_mm_rows step, with M == 1, computes the very same product again."""
    return (case.device == "cpu" and case.op in ("bmm", "matmul") and "cat_mm_rows" in case.consumers
            and any(a.dtype in HALF and len(a.shape) >= 3 and len(b.shape) >= 3 and a.shape[-2] == 1
                    for a, b, *_ in _calls(case)))


def _without_cat_mm_rows(case: Case) -> Case:
    return _replace(case, consumers=tuple(c for c in case.consumers if c != "cat_mm_rows"))


def _weight_at_offset_zero(case: Case) -> Case:
    return _with_input(case, 1, lambda t: TensorSpec(t.shape, t.stride, 0, t.dtype))


CPP_COMPILE_ERROR = (r"crash:(CalledProcessError:cpp_builder\.py:_run_compile_cmd|CppCompileError:.*)",
                     r"choice-crash:\w+@CppTemplateCaller:(CalledProcessError|CppCompileError)",
                     r"dropped:\w+@CppTemplateCaller:(precompile|benchmark)")
"""Generated C++ that does not compile: the whole compile fails, the CPP choice compiled alone
fails, or autotuning drops the CPP choice (with ATen in the set)."""


def _with_config(**changes: object) -> Callable[[Case], Case]:
    """Untrigger: the same case with these inductor config keys set."""
    return lambda case: _replace(case, config={**case.config_dict, **changes})


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        name="mm-out-dtype-row-vector-dtype",
        oracles=("numerics",),
        signatures=(r"output-meta:mm_out_dtype(@.+)?",),
        applies=lambda c: (c.device == "cuda" and c.op == "mm_out_dtype" and bool(c.config_dict.get("coordinate_descent_tuning"))
                           and any(min(a.shape[0], b.shape[1]) <= 1 for a, b, *_ in _calls(c))),
        untrigger=_with_config(coordinate_descent_tuning=False),
        tracking="repros/mm_out_dtype_row_vector_dtype.py (not yet filed upstream): with coordinate-descent "
                 "tuning, an mm with out_dtype=float32 and one row (or column) comes back in the input dtype",
        torch_versions=("2.11",),
        devices=("cuda",),
    ),
    KnownBug(
        name="pad-mm-output-padded-strides",
        oracles=("numerics",),
        signatures=(r"output-strides:(mm|addmm|bmm|baddbmm|matmul|mm_plus_mm)(@.+)?",),
        applies=lambda c: c.device == "cuda" and c.config_dict.get("shape_padding", True) is not False,
        untrigger=_with_config(shape_padding=False),
        tracking="repros/pad_mm_output_padded_strides.py (not yet filed upstream): shape padding returns a padded "
                 "view as the graph output (only its stride order is kept), not eager's dense strides",
        torch_versions=("2.11",),
        devices=("cuda",),
    ),
    KnownBug(
        name="aten-cpu-baddbmm-zero-alpha-uninitialized",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:baddbmm:\w+(@aten::baddbmm)?",),  # any consumer chain
        applies=lambda c: _cpu_half_baddbmm(c) and c.params_dict.get("beta") == 0.0,
        untrigger=lambda c: _replace(c, params={**c.params_dict, "alpha": 1.0}),
        tracking="repros/aten_baddbmm_zero_alpha_beta.py (not yet filed upstream): ATen's CPU bf16/fp16 "
                 "baddbmm with alpha=0 and beta=0 leaves the output uninitialized where oneDNN bf16 matmul is used "
                 "(torch.ops.mkldnn._is_mkldnn_bf16_supported()); extern calls inherit it. Eager need not show it: "
                 "its output may land in zeroed memory (a seed-2 CPU campaign: eager right, compiled 2.5e38 off)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
        lives_in=ATEN,
        eager_shows=False,
    ),
    KnownBug(
        name="aten-cpu-baddbmm-zero-alpha-wrong",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:baddbmm:\w+(@aten::baddbmm)?",),  # any consumer chain
        applies=lambda c: _cpu_half_baddbmm(c) and c.params_dict.get("beta") != 0.0,
        untrigger=lambda c: _replace(c, params={**c.params_dict, "alpha": 1.0}),
        tracking="repros/aten_baddbmm_zero_alpha_beta.py (not yet filed upstream): ATen's CPU bf16/fp16 "
                 "baddbmm with alpha=0 and a nonzero beta is wrong on an AVX-512 Xeon (max error 1.5 on a "
                 "(6, 65) x (65, 40) product); eager shows it on the same inputs",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="aten-cpu-bf16-bmm-odd-k-inf-nan",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:(bmm|baddbmm|matmul):\w+(@aten::\w+)?",),
        applies=_bf16_batched_odd_k_nonfinite,
        untrigger=_in_float32,
        tracking="repros/aten_bf16_bmm_odd_k_inf_nan.py (not yet filed upstream; found by the README's CPU "
                 "campaign on an AVX-512 Xeon): ATen's CPU bf16 bmm (a batch of 2 or more) returns NaN where the "
                 "exact product is +-inf when A has an inf in its last column and K is odd (oneDNN's bf16 "
                 "kernels pair K: the inf meets a zero pad); eager and extern calls alike",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="aten-cpu-bf16-amx-nan-in-finite-rows",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:(bmm|baddbmm|matmul):\w+(@aten::\w+)?",),
        applies=_bf16_nonfinite_on_amx,
        untrigger=_in_float32,
        tracking="repros/aten_bf16_amx_nan_in_finite_rows.py (not yet filed upstream; found by the property tests "
                 "on an AMX Xeon): ATen's CPU bf16 bmm and mm put NaN into output rows whose inputs are all finite "
                 "when other rows of A hold NaN/inf (M = 146, K = 208; 32 x 64 is right); eager and extern calls alike",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="mm-epilogue-zero-scalar-nonfinite",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:(addmm|baddbmm):\w+(@.+)?",),  # any value mode's judging: NaN is the fingerprint
        applies=lambda c: (c.device == "cuda" and c.op in ("addmm", "baddbmm")
                           and 0.0 in (c.params_dict.get("alpha"), c.params_dict.get("beta"))),
        untrigger=lambda c: _replace(c, params={k: 1.0 if k in ("alpha", "beta") and v == 0.0 else v
                                                for k, v in c.params_dict.items()}),
        tracking="repros/mm_epilogue_zero_scalar_nonfinite.py (not yet filed for max-autotune; the same fault in "
                 "inductor's addmm decomposition: https://github.com/pytorch/pytorch/issues/196596): the autotuned "
                 "addmm/baddbmm epilogue computes alpha * (a @ b) + beta * input, so a zero scalar's term still "
                 "turns inf/NaN into NaN where eager ignores it",
        torch_versions=("2.11",),
        devices=("cuda",),
        lives_in=TEMPLATE,
        fingerprint=nan_where_finite,
    ),
    KnownBug(
        name="aten-int-mm-expanded-operand",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:int_mm:\w+(@aten::_int_mm)?",),  # any consumer chain
        applies=_int_mm_short_leading_dim,
        untrigger=_dense_int_mm_operands,
        tracking="https://github.com/pytorch/pytorch/issues/195066 (fix PR https://github.com/pytorch/pytorch/pull/194682; "
                 "repros/eager_int_mm_expanded_operand.py): ATen's CPU _int_mm returns garbage when an operand's "
                 "leading dimension is shorter than its rows (hosts whose oneDNN int8 GEMM path takes it; not AMD Zen 3 "
                 "with AVX2 only); compiled code inherits it through the extern kernel",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="aten-int-mm-expanded-operand-dense-other",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:int_mm:\w+(@aten::_int_mm)?",),
        applies=_int_mm_short_leading_dim,
        untrigger=_dense_int_mm_operands,
        tracking="repros/aten_int_mm_expanded_operand_dense_other.py (the cause of "
                 "https://github.com/pytorch/pytorch/issues/195066, found by a CPU campaign on an AMD Zen 5): "
                 "with A of row stride 0, ATen's CPU _int_mm is right for a strided B (eager) and garbage once B "
                 "is dense, which is what inductor hands the extern kernel after copying B; the ATen kernel's bug, "
                 "not inductor's, though eager does not show it on the case's own inputs",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=ATEN,
        eager_shows=False,
    ),
    KnownBug(
        name="triton-mm-template-small-m-block-k-128",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@triton::mm)?",),
        messages=(r"^addmm call\d/out\d (bfloat16|float16)", rf"\[{TRITON_BLOCK_K_128}"),  # autotuned, or that config
        applies=_triton_small_m_half_addmm,
        untrigger=_without_triton_block_k_128,
        tracking="repros/triton_addmm_alpha_beta_m1.py (not yet filed upstream): the BLOCK_K=128, BLOCK_M=16, "
                 "BLOCK_N=16 config of triton::mm is wrong for fp16 addmm with M=1, K=177",
        torch_versions=("2.11",),
        devices=("cuda",),
        lives_in=TEMPLATE,
    ),
    KnownBug(
        name="cpp-gemm-dynamic-recompile-crash",
        oracles=("crash",),
        signatures=(r"crash:ModuleNotFoundError:select_algorithm\.py:\w+", r"crash:TypeError:select_algorithm\.py:\w+"),
        messages=(r"No module named 'triton'", r"as_strided\(\): argument 'stride'"),
        applies=lambda c: c.device == "cpu" and "CPP" in _backends(c) and bool(c.second_call or c.dynamic or c.mark_dynamic),
        untrigger=_static,
        tracking="repros/cpp_dynamic_recompile_crash.py (not yet filed upstream): benchmarking the CPP "
                 "choices of a dynamic-shape recompile imports triton / passes symbolic strides",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-k0-crash",
        oracles=("crash",),
        signatures=(r"crash:TypeError:codegen/cpp_gemm_template\.py:get_cache_blocking",),
        messages=(r"Cannot convert complex to float",),
        applies=lambda c: _frozen_cpp(c) and c.inputs[0].shape[-1] == 0,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_k0_crash.py (not yet filed upstream): get_cache_blocking "
                 "raises 'Cannot convert complex to float' for K == 0",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-n0-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"division by zero", r"failed to (compile|run)"),
        applies=lambda c: _frozen_cpp(c) and c.inputs[1].shape[-1] == 0,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_n0_compile_error.py (not yet filed upstream): the kernel's "
                 "constexpr Nt_blocks is 0 and num_Nt_blocks divides by it; the C++ does not compile",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-m0-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"division by zero", r"failed to (compile|run)"),
        applies=lambda c: _frozen_cpp(c) and not (c.dynamic or c.mark_dynamic) and any(a.shape[-2] == 0 for a, *_ in _calls(c)),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_m0_compile_error.py (not yet filed upstream; found by the README's CPU "
                 "campaign): with M == 0 the kernel's constexpr Mc_blocks is 0 and num_Mc_blocks divides by it",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-n0-dynamic-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm)",),
        applies=lambda c: (_frozen_cpp(c) and "ATEN" in _backends(c) and 0 in c.inputs[1].shape[-2:]
                           and c.inputs[0].dtype in HALF and bool(c.dynamic or c.mark_dynamic or c.second_call)),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_n0_dynamic_sigfpe.py (not yet filed upstream): with M symbolic the CPP "
                 "kernel's division by the zero number of N blocks (or K blocks: a K == 0 weight dies the same "
                 "way, seen in a CPU campaign) happens at run time, while it is benchmarked",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-half-linear-empty-weight-onednn",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:[\w/.]+:\w+",),
        messages=(r"could not create a primitive descriptor",),
        applies=lambda c: 0 in c.inputs[1].shape and (_frozen_linear(c, HALF) or _frozen_linear(c, ("float32",))
                                                      and bool(c.dynamic or c.mark_dynamic or c.second_call)),
        untrigger=_unfrozen,
        tracking="repros/freezing_half_linear_empty_weight_onednn.py (not yet filed upstream): freezing packs a "
                 "bf16/fp16 weight (or, with M dynamic, a float32 one) with K == 0 or N == 0 for oneDNN's inner "
                 "product, which cannot build it (hosts with oneDNN bf16/fp16; float32 with dynamic M on any)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-linear-n0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm)",),
        applies=lambda c: (_frozen_linear(c, ("float32",)) and c.inputs[1].shape[-1] == 0
                           and any(a.shape[0] > 128 for a, *_ in _calls(c))),
        untrigger=_unfrozen,
        tracking="repros/freezing_mkl_linear_n0_sigfpe.py (not yet filed upstream): freezing a float32 "
                 "mm weight with N == 0 for MKL's linear divides by zero (SIGFPE) once M > 128",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-linear-m0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm)",),
        applies=lambda c: _frozen_linear(c, ("float32",)) and any(a.shape[0] == 0 for a, *_ in _calls(c))
        and c.inputs[1].shape[0] * c.inputs[1].shape[1] >= MKL_M0_PACK_MIN_WEIGHT,
        untrigger=_unfrozen,
        tracking="repros/freezing_mkl_linear_m0_sigfpe_plain.py (not yet filed upstream; found by CI on an "
                 "AVX-512 Xeon): freezing packs a float32 weight for MKL with batch size M == 0 "
                 "(torch.ops.mkl._mkl_reorder_linear_weight(w, 0)) and the process dies with SIGFPE",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-empty-dim-crash",
        oracles=("crash",),
        signatures=(r"crash:AssertionError:codegen/cpp_template_kernel\.py:\w+", r"crash:ZeroDivisionError:[\w/.]+:\w+",
                    r"crash:TypeError:codegen/cpp_gemm_template\.py:get_cache_blocking"),
        messages=(r"View\(", r"division by zero|modulo by zero", r"Cannot convert complex to float"),
        applies=lambda c: _cpu_cpp_batched(c) and any(0 in (a.shape[-2], a.shape[-1], b.shape[-1]) for a, b, *_ in _calls(c)),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_empty_dim_crash.py (not yet filed upstream): lowering a bmm with CPP "
                 "choices and M, N or K == 0 raises AssertionError (View) or ZeroDivisionError (with K == 0 "
                 "and symbolic sizes, get_cache_blocking's L2 / (Mr * Kt_bytes) is sympy's complex infinity: "
                 "TypeError)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-epilogue-input-mutation-crash",
        oracles=("crash", "numerics"),
        signatures=(r"crash:AssertionError:ir\.py:indexer",
                    r"choice-crash:\w+@CppTemplateCaller:AssertionError"),  # the CPP choice alone, when ATen won
        applies=lambda c: _cpu_cpp_batched(c) and "mutate_input" in c.consumers and len(c.consumers) > 1,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_epilogue_input_mutation_crash.py (not yet filed upstream): a CPP bmm "
                 "with a pointwise epilogue, then an in-place mutation of its input: AssertionError in ir.py",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-dynamic-batch-stride-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"ks\d+. was not declared", r"failed to (compile|run)"),
        applies=lambda c: (_cpu_cpp_batched(c) and c.op != "baddbmm" and not c.dynamic and len(c.inputs[0].shape) == 3
                           and bool(c.second_call) and c.second_call[0].stride[0] != c.inputs[0].stride[0]),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_dynamic_batch_stride_compile_error.py (not yet filed upstream): the "
                 "recompile makes x's batch stride symbolic; the CPP kernel uses it undeclared",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-size1-batch-stride-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"ks\d+. was not declared", r"failed to (compile|run)"),
        applies=lambda c: (_cpu_cpp_batched(c) and c.op == "bmm" and not c.dynamic and len(c.inputs[0].shape) == 3
                           and c.inputs[0].shape[0] == 1 and c.inputs[0].stride[0] != _span(c.inputs[0])
                           and any(i == 0 for i, _ in c.mark_dynamic)),
        untrigger=lambda c: _with_input(c, 0, lambda t: TensorSpec(t.shape, (_span(t), *t.stride[1:]), t.offset, t.dtype)),
        tracking="repros/cpp_bmm_dynamic_batch_stride_compile_error.py (not yet filed upstream; the same cause, "
                 "found by a CPU campaign): x has one batch whose stride is not the dense one and a marked-dynamic "
                 "dim, so its batch stride is symbolic; the CPP kernel uses it undeclared",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-half-bmm-m1-repeated-product-compile-error",
        oracles=("crash",),
        signatures=CPP_COMPILE_ERROR[:1],
        messages=(r"conflicting declaration .*tmp_acc\d+_vec",),
        applies=_half_row_product_twice,
        untrigger=_without_cat_mm_rows,
        tracking="repros/cpp_half_bmm_m1_repeated_product_compile_error.py (not yet filed upstream; found by a "
                 "10-minute CPU campaign): the same fp16/bf16 bmm with M == 1 twice in one graph (here "
                 "torch.cat([a @ b, a @ b], dim=-2)): the C++ kernel declares `tmp_acc0_vec` twice",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="addmm-scalar-bias-indexerror",
        oracles=("crash",),
        signatures=(r"crash:IndexError:kernel/mm\.py:tuned_addmm",),
        messages=(r"list index out of range",),
        applies=lambda c: c.op == "addmm" and c.inputs[2].shape == (),
        untrigger=_scalar_to_vector_bias,
        tracking="https://github.com/pytorch/pytorch/issues/197107 (fix PR https://github.com/pytorch/pytorch/pull/197214; "
                 "repros/addmm_scalar_bias_indexerror.py): tuned_addmm reads inp.get_stride()[0] before checking the "
                 "bias rank",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-weight-storage-offset",
        oracles=("numerics",),
        # any choice's single-choice compile: the program's other selections (a cat's mm) still pick CPP
        signatures=(rf"{WRONG_VALUES}:(mm|addmm|bmm|baddbmm):\w+(@.+)?",),
        applies=lambda c: _frozen_cpp(c) and c.inputs[1].offset != 0,
        untrigger=_weight_at_offset_zero,
        tracking="repros/cpp_gemm_frozen_weight_offset.py (not yet filed upstream; "
                 "related: https://github.com/pytorch/pytorch/pull/159233): the CPP GEMM template reads a "
                 "frozen weight from the start of its storage (with NaN there, the result is NaN)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
)


def process_killer(case: Case, torch_version: str, registry: tuple[KnownBug, ...] = KNOWN_BUGS) -> KnownBug | None:
    """The known bug that would kill a process running `case` (so only an isolated worker may)."""
    return next((b for b in registry if "process" in b.oracles and case.device in b.devices and b.applies(case)
                 and any(torch_version.startswith(p) for p in b.torch_versions)), None)


def candidates(violations: list[Violation], case: Case, torch_version: str,
               registry: tuple[KnownBug, ...] = KNOWN_BUGS,
               checks: Mapping[str, OutputCheck] | None = None) -> list[tuple[Violation, KnownBug | None]]:
    """Each violation with the registered bug whose region, signature, message and choice it
    matches and, where `checks` (OutputCheck by label) holds the output it judged, whose deviation
    it shows (KnownBug.fits); None: none does. A match still has to vanish without the trigger to
    count as known."""
    found = checks or {}
    return [(v, next((b for b in registry if b.matches(v, case, torch_version) and b.fits(v, found.get(v.output))),
                     None)) for v in violations]


EAGER_AGREES = KnownBug(
    name=EAGER_AGREES_NAME, oracles=("numerics",), signatures=(f"{EAGER_AGREED}.*",), applies=lambda c: True,
    untrigger=lambda c: c, torch_versions=("",), devices=("cpu", "cuda"),
    tracking="eager and compiled agree, the float64 reference differs: an ATen kernel's deviation, or an "
             "accumulator's range or rounding the reference does not model (not an inductor bug)")
"""Not in KNOWN_BUGS: what explains a REFERENCE_DIFFERS violation no registered ATen bug explains."""
