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

from collections.abc import Mapping

from fuzz.bugs.entry import ATEN, EAGER_AGREED, TEMPLATE, WRONG_VALUES, KnownBug, nan_where_finite, view_moved
from fuzz.bugs.known_cpu_bugs import CPU_INDUCTOR_BUGS
from fuzz.bugs.known_weight_bugs import WEIGHT_FORM_BUGS
from fuzz.bugs.regions import (
    TRITON_BLOCK_K_128,
    bf16_batched_odd_k_nonfinite,
    bf16_nonfinite_on_amx,
    calls,
    cpu_half_baddbmm,
    decomposed_addmm_with_scalars,
    dense_int_mm_operands,
    dynamic_narrow_of_offset_out,
    in_float32,
    int_mm_short_leading_dim,
    nonzero_scalars,
    replace,
    scalar_to_vector_bias,
    static,
    triton_small_m_half_addmm,
    unfused_zero_scalar_addmm,
    with_config,
    without_config,
    without_triton_block_k_128,
)
from oracles.model import OutputCheck, Violation
from strategies.case import Case

KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        name="mm-out-dtype-row-vector-dtype",
        oracles=("numerics",),
        signatures=(r"output-meta:mm_out_dtype(@.+)?",),
        applies=lambda c: (c.device == "cuda" and c.op == "mm_out_dtype"
                           and bool(c.config_dict.get("coordinate_descent_tuning"))
                           and any(min(a.shape[0], b.shape[1]) <= 1 for a, b, *_ in calls(c))),
        untrigger=with_config(coordinate_descent_tuning=False),
        tracking="repros/mm_out_dtype_row_vector_dtype.py (not yet filed upstream): with coordinate-descent "
                 "tuning, an mm with out_dtype=float32 and one row (or column) comes back in the input dtype",
        torch_versions=("2.11",),
        devices=("cuda",),
    ),
    KnownBug(
        name="dynamic-out-buffer-narrow-view-offset",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:(mm|addmm|bmm|baddbmm):\w+", r"output-view:(mm|addmm|bmm|baddbmm)"),
        applies=dynamic_narrow_of_offset_out,
        untrigger=static,
        tracking="repros/dynamic_out_buffer_narrow_view_offset_plain.py (not yet filed upstream; a 5-minute CPU "
                 "campaign, seed 15): with dynamic shapes, a program that writes into a buffer at a storage offset "
                 "(out=, or copy_) and returns `buf[..., :n]` with n symbolic gets that view at offset 0 of the "
                 "buffer's storage (aot_eager is right; a static size, or a slice of another kind, is right; the "
                 "plain repro fails on 2.11 CPU and CUDA too, H100)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu", "cuda"),
        fingerprint=view_moved,
    ),
    KnownBug(
        name="pad-mm-output-padded-strides",
        oracles=("numerics",),
        signatures=(r"output-strides:(mm|addmm|bmm|baddbmm|matmul|mm_plus_mm)(@.+)?",),
        applies=lambda c: c.device == "cuda" and c.config_dict.get("shape_padding", True) is not False,
        untrigger=with_config(shape_padding=False),
        tracking="repros/pad_mm_output_padded_strides.py (not yet filed upstream): shape padding returns a padded "
                 "view as the graph output (only its stride order is kept), not eager's dense strides",
        torch_versions=("2.11",),
        devices=("cuda",),
    ),
    KnownBug(
        name="aten-cpu-baddbmm-zero-alpha-uninitialized",
        oracles=("numerics",),
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:baddbmm:\w+(@aten::\w+)?",),  # any consumer; any extern alone
        applies=lambda c: cpu_half_baddbmm(c) and c.params_dict.get("beta") == 0.0,
        untrigger=lambda c: replace(c, params={**c.params_dict, "alpha": 1.0}),
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
        signatures=(rf"{EAGER_AGREED}?{WRONG_VALUES}:baddbmm:\w+(@aten::\w+)?",),  # any consumer; any extern alone
        applies=lambda c: cpu_half_baddbmm(c) and c.params_dict.get("beta") != 0.0,
        untrigger=lambda c: replace(c, params={**c.params_dict, "alpha": 1.0}),
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
        applies=bf16_batched_odd_k_nonfinite,
        untrigger=in_float32,
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
        applies=bf16_nonfinite_on_amx,
        untrigger=in_float32,
        tracking="repros/aten_bf16_amx_nan_in_finite_rows.py (not yet filed upstream; found by the property tests "
                 "on an AMX Xeon): ATen's CPU bf16 bmm and mm put NaN into output rows whose inputs are all finite "
                 "when other rows of A hold NaN/inf (M = 146, K = 208; 32 x 64 is right); eager and extern calls alike",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="addmm-unfuse-bias-zero-scalar-nonfinite",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@.+)?",),  # before lowering: every choice computes it
        applies=unfused_zero_scalar_addmm,
        untrigger=nonzero_scalars,
        tracking="repros/addmm_unfuse_bias_zero_scalar_nonfinite_plain.py (not yet filed upstream): on CUDA, any "
                 "compile mode and backend, an addmm whose result feeds a pointwise op (relu) is rewritten by "
                 "post_grad.py's unfuse_bias_add_to_pointwise into `beta * input + alpha * (a @ b)`, so a zero "
                 "beta keeps NaN from input and a zero alpha turns inf in a @ b into NaN, where eager ignores "
                 "the term (torch 2.11 on an H100: 1 and 16 NaN where eager has none)",
        torch_versions=("2.11",),
        devices=("cuda",),
        fingerprint=nan_where_finite,
    ),
    KnownBug(
        name="mm-epilogue-zero-scalar-nonfinite",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:(addmm|baddbmm):\w+(@.+)?",),  # any value mode's judging: NaN is the fingerprint
        applies=lambda c: (c.device == "cuda" and c.op in ("addmm", "baddbmm")
                           and 0.0 in (c.params_dict.get("alpha"), c.params_dict.get("beta"))),
        untrigger=nonzero_scalars,
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
        applies=int_mm_short_leading_dim,
        untrigger=dense_int_mm_operands,
        tracking="https://github.com/pytorch/pytorch/issues/195066 (fix PR "
                 "https://github.com/pytorch/pytorch/pull/194682; repros/eager_int_mm_expanded_operand.py): ATen's "
                 "CPU _int_mm returns garbage when an operand's leading dimension is shorter than its rows (hosts "
                 "whose oneDNN int8 GEMM path takes it; not AMD Zen 3 with AVX2 only); compiled code inherits it "
                 "through the extern kernel",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
        lives_in=ATEN,
    ),
    KnownBug(
        name="aten-int-mm-expanded-operand-dense-other",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:int_mm:\w+(@aten::_int_mm)?",),
        applies=int_mm_short_leading_dim,
        untrigger=dense_int_mm_operands,
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
        applies=triton_small_m_half_addmm,
        untrigger=without_triton_block_k_128,
        tracking="repros/triton_addmm_alpha_beta_m1.py (not yet filed upstream): the BLOCK_K=128, BLOCK_M=16, "
                 "BLOCK_N=16 config of triton::mm is wrong for fp16 addmm with M=1, K=177",
        torch_versions=("2.11",),
        devices=("cuda",),
        lives_in=TEMPLATE,
    ),
    KnownBug(
        name="addmm-scalar-bias-indexerror",
        oracles=("crash",),
        signatures=(r"crash:IndexError:kernel/mm\.py:tuned_addmm",),
        messages=(r"list index out of range",),
        applies=lambda c: c.op == "addmm" and c.inputs[2].shape == (),
        untrigger=scalar_to_vector_bias,
        tracking="https://github.com/pytorch/pytorch/issues/197107 (fix PR "
                 "https://github.com/pytorch/pytorch/pull/197214; repros/addmm_scalar_bias_indexerror.py): "
                 "tuned_addmm reads inp.get_stride()[0] before checking the bias rank",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="addmm-cpu-decomposition-zero-scalar-nonfinite",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@.+)?",),  # any value mode's judging: NaN is the fingerprint
        applies=lambda c: (c.device == "cpu" and c.op == "addmm"
                           and 0.0 in (c.params_dict.get("alpha"), c.params_dict.get("beta"))
                           and any(a.shape[0] == 1 and max(b.shape) <= 16 for a, b, *_ in calls(c))),
        untrigger=nonzero_scalars,
        tracking="https://github.com/pytorch/pytorch/issues/196596 (fix PR https://github.com/pytorch/pytorch/pull/"
                 "196600 open; repros/addmm_cpu_decomposition_zero_scalar_nonfinite.py): inductor's CPU addmm "
                 "decomposition (M == 1, K and N <= 16, any compile mode) computes beta * input with a float "
                 "beta = 0.0, so NaN in the bias stays where eager drops it",
        torch_versions=("2.13",),
        devices=("cpu",),
        fingerprint=nan_where_finite,
    ),
    KnownBug(
        name="decompose-mm-pass-addmm-ignores-scalars",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@.+)?",),  # before lowering: every choice computes it
        applies=decomposed_addmm_with_scalars,
        untrigger=without_config("post_grad_fusion_options"),
        tracking="repros/decompose_mm_pass_addmm_ignores_scalars_plain.py (not yet filed upstream): with "
                 "post_grad_fusion_options={'decompose_mm_pass': {}}, fx_passes/decompose_mem_bound_mm.py's "
                 "decompose_addmm rewrites a CPU addmm with M == 1 (GPU: M >= 10240, K and N < 32) into "
                 "sum(x * w) + input, dropping alpha and beta (alpha = -1 gives x @ w + input; torch 2.11 on an "
                 "H100: CPU and CUDA alike)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="addmm-frozen-scalar-bias-m0-assert",
        oracles=("crash",),
        signatures=(r"crash:AssertionError:ir\.py:unwrap_storage_for_input",),
        messages=(r"ir\.Constant",),
        applies=lambda c: (c.op == "addmm" and c.frozen_weights and c.inputs[2].shape == ()
                           and any(a.shape[0] == 0 for a, *_ in calls(c))),
        untrigger=scalar_to_vector_bias,
        tracking="repros/addmm_frozen_scalar_bias_m0_assert_plain.py (not yet filed upstream; seen on torch 2.11 "
                 "only, 2.13 computes it): a frozen addmm with a 0-d bias and M == 0 takes tuned_addmm's empty "
                 "path, which passes the unexpanded constant bias to aten_addmm (AssertionError: ir.Constant)",
        torch_versions=("2.11",),
        devices=("cpu",),
    ),
    *CPU_INDUCTOR_BUGS,
    *WEIGHT_FORM_BUGS,
)


def process_killer(case: Case, torch_version: str, registry: tuple[KnownBug, ...] = KNOWN_BUGS) -> KnownBug | None:
    """The known bug that would kill a process running `case` (so only an isolated worker may)."""
    return next((b for b in registry if "process" in b.oracles and case.device in b.devices and b.applies(case)
                 and any(torch_version.startswith(p) for p in b.torch_versions)), None)


def candidates(violations: list[Violation], case: Case, torch_version: str,
               registry: tuple[KnownBug, ...] = KNOWN_BUGS,
               checks: Mapping[str, OutputCheck] | None = None,
               selections: int = 1) -> list[tuple[Violation, KnownBug | None]]:
    """Each violation with the first registered bug that fits it (`fitting`); None: none does."""
    return [(v, next(iter(fitting(v, case, torch_version, registry, checks, selections)), None)) for v in violations]


def fitting(violation: Violation, case: Case, torch_version: str, registry: tuple[KnownBug, ...] = KNOWN_BUGS,
            checks: Mapping[str, OutputCheck] | None = None, selections: int = 1) -> list[KnownBug]:
    """The registered bugs whose region, signature, message and choice `violation` matches and,
    where `checks` (OutputCheck by label) holds the output it judged, whose deviation it shows
    (KnownBug.fits, told whether the program made other autotuned `selections`), in registry
    order. A match still has to vanish without the trigger to count as known."""
    found, others = checks or {}, selections > 1
    return [b for b in registry if b.matches(violation, case, torch_version)
            and b.fits(violation, found.get(violation.output), others)]
