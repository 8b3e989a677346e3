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

from fuzz.bugs.entry import ATEN, EAGER_AGREED, HALF, TEMPLATE, WRONG_VALUES, KnownBug, nan_where_finite
from oracles.model import OutputCheck, Violation
from strategies.case import Case, TensorSpec

# ruff's isort puts one name a line: these 27 would push the registry past the 400-line limit
# isort: off
from fuzz.bugs.regions import (
    CPP_COMPILE_ERROR, MKL_M0_PACK_MIN_WEIGHT, TRITON_BLOCK_K_128, backends, bf16_batched_odd_k_nonfinite,
    bf16_nonfinite_on_amx, calls, cpu_cpp_batched, cpu_half_baddbmm, dense_int_mm_operands, frozen_cpp,
    frozen_linear, half_row_product_twice, in_float32, int_mm_short_leading_dim, replace, scalar_to_vector_bias,
    span, static, triton_small_m_half_addmm, unfrozen, weight_at_offset_zero, with_config, with_input,
    without_backend, without_cat_mm_rows, without_triton_block_k_128,
)
# isort: on


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
        name="mm-epilogue-zero-scalar-nonfinite",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:(addmm|baddbmm):\w+(@.+)?",),  # any value mode's judging: NaN is the fingerprint
        applies=lambda c: (c.device == "cuda" and c.op in ("addmm", "baddbmm")
                           and 0.0 in (c.params_dict.get("alpha"), c.params_dict.get("beta"))),
        untrigger=lambda c: replace(c, params={k: 1.0 if k in ("alpha", "beta") and v == 0.0 else v
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
        name="cpp-gemm-dynamic-recompile-crash",
        oracles=("crash",),
        signatures=(r"crash:ModuleNotFoundError:select_algorithm\.py:\w+", r"crash:TypeError:select_algorithm\.py:\w+"),
        messages=(r"No module named 'triton'", r"as_strided\(\): argument 'stride'"),
        applies=lambda c: (c.device == "cpu" and "CPP" in backends(c)
                           and bool(c.second_call or c.dynamic or c.mark_dynamic)),
        untrigger=static,
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
        applies=lambda c: frozen_cpp(c) and c.inputs[0].shape[-1] == 0,
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
        applies=lambda c: frozen_cpp(c) and c.inputs[1].shape[-1] == 0,
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
        applies=lambda c: (frozen_cpp(c) and not (c.dynamic or c.mark_dynamic)
                           and any(a.shape[-2] == 0 for a, *_ in calls(c))),
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
        applies=lambda c: (frozen_cpp(c) and "ATEN" in backends(c) and 0 in c.inputs[1].shape[-2:]
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
        applies=lambda c: 0 in c.inputs[1].shape and (frozen_linear(c, HALF) or (frozen_linear(c, ("float32",))
                                                      and bool(c.dynamic or c.mark_dynamic or c.second_call))),
        untrigger=unfrozen,
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
        applies=lambda c: (frozen_linear(c, ("float32",)) and c.inputs[1].shape[-1] == 0
                           and any(a.shape[0] > 128 for a, *_ in calls(c))),
        untrigger=unfrozen,
        tracking="repros/freezing_mkl_linear_n0_sigfpe.py (not yet filed upstream): freezing a float32 "
                 "mm weight with N == 0 for MKL's linear divides by zero (SIGFPE) once M > 128",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-linear-m0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm)",),
        applies=lambda c: frozen_linear(c, ("float32",)) and any(a.shape[0] == 0 for a, *_ in calls(c))
        and c.inputs[1].shape[0] * c.inputs[1].shape[1] >= MKL_M0_PACK_MIN_WEIGHT,
        untrigger=unfrozen,
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
        applies=lambda c: (cpu_cpp_batched(c)
                           and any(0 in (a.shape[-2], a.shape[-1], b.shape[-1]) for a, b, *_ in calls(c))),
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
        applies=lambda c: cpu_cpp_batched(c) and "mutate_input" in c.consumers and len(c.consumers) > 1,
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
        applies=lambda c: (cpu_cpp_batched(c) and c.op != "baddbmm" and not c.dynamic and len(c.inputs[0].shape) == 3
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
        applies=lambda c: (cpu_cpp_batched(c) and c.op == "bmm" and not c.dynamic and len(c.inputs[0].shape) == 3
                           and c.inputs[0].shape[0] == 1 and c.inputs[0].stride[0] != span(c.inputs[0])
                           and any(i == 0 for i, _ in c.mark_dynamic)),
        untrigger=lambda c: with_input(c, 0,
                                       lambda t: TensorSpec(t.shape, (span(t), *t.stride[1:]), t.offset, t.dtype)),
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
        applies=half_row_product_twice,
        untrigger=without_cat_mm_rows,
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
        untrigger=scalar_to_vector_bias,
        tracking="https://github.com/pytorch/pytorch/issues/197107 (fix PR "
                 "https://github.com/pytorch/pytorch/pull/197214; repros/addmm_scalar_bias_indexerror.py): "
                 "tuned_addmm reads inp.get_stride()[0] before checking the bias rank",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-weight-storage-offset",
        oracles=("numerics",),
        # any choice's single-choice compile: the program's other selections (a cat's mm) still pick CPP
        signatures=(rf"{WRONG_VALUES}:(mm|addmm|bmm|baddbmm):\w+(@.+)?",),
        applies=lambda c: frozen_cpp(c) and c.inputs[1].offset != 0,
        untrigger=weight_at_offset_zero,
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
