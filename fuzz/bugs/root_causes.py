"""Findings grouped by root cause, for upstream issue drafts (fuzz/bugs/issue_drafts.py).

A group is one likely fix. Findings a triaged root cause covers (ROOT_CAUSES, by their known-bug
entry) form its group; any other finding joins those with the same symptom (exception type and
innermost inductor frame, kind of wrong result and kernel family, or way the process died) and
the same trigger (empty dims, freezing, dynamic shapes, the backend its plain repro needs).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from fuzz.store.findings import Finding
from oracles.signature import Signature


@dataclasses.dataclass(frozen=True)
class RootCause:
    """A triaged cause: the known bugs (registry names) one fix would close, where it likely lies,
    and, for an observation that is not worth filing as is, why."""

    key: str
    title: str
    bugs: tuple[str, ...]
    location: str
    not_a_bug: str = ""


ROOT_CAUSES: tuple[RootCause, ...] = (
    RootCause("cpp-template-empty-dims",
              "[inductor][cpu] max-autotune offers CPP GEMM/BMM template choices for M, N or K == 0, which crash "
              "or emit C++ that does not compile",
              ("cpp-gemm-frozen-k0-crash", "cpp-gemm-frozen-n0-compile-error", "cpp-gemm-frozen-m0-compile-error",
               "cpp-bmm-empty-dim-crash", "cpp-gemm-frozen-n0-dynamic-sigfpe", "cpp-gemm-linear-binary-m0-crash"),
              "torch/_inductor/kernel/mm.py (tuned_mm, tuned_addmm), kernel/bmm.py (tuned_bmm) and "
              "mkldnn_lowerings.py (linear_binary) add CPP template choices without the `is_nonzero` guard every "
              "other template gets, and `use_cpp_gemm_template` (torch/_inductor/utils.py) never checks K == 0"),
    RootCause("freezing-packs-integer-weights",
              "[inductor][cpu] freezing packs an integer linear weight for MKL, which refuses it (RuntimeError: "
              "reorder_linear_weight: weight's dtype should be float)",
              ("freezing-mkl-pack-integer-weight-crash",),
              "torch/_inductor/fx_passes/mkldnn_fusion.py: `_is_packable_linear` returns False for float64 "
              "operands only, so an integer mm/addmm with a constant weight is packed"),
    RootCause("cpp-gemm-int8-without-quantization",
              "[inductor][cpu] max-autotune offers the CPP GEMM template to a plain int8/uint8 product, whose "
              "lowering then looks up a quantized weight's compensation constant (KeyError '..._BMatrixCompens')",
              ("cpp-gemm-int8-product-compensation-crash",),
              "torch/_inductor/utils.py `use_cpp_gemm_template` allows uint8/int8 operands (meant for the "
              "quantized linears, whose lowering in mkldnn_lowerings.py adds `<W>_BMatrixCompens`), and "
              "codegen/cpp_gemm_template.py `_get_compensation_node` assumes the constant exists"),
    RootCause("cpu-bmm-vector-sum-dtype",
              "[inductor][cpu] a bmm with M == 1 or N == 1 on integer operands returns int64 (the lowering's "
              "sum promotes)",
              ("cpu-bmm-vector-sum-promotes-integers",),
              "torch/_inductor/kernel/bmm.py tuned_bmm: the CPU memory-bound branch returns "
              "`L.sum_(L.mul(mat1, mat2), axis=2)` for any dtype (its CUDA branch checks _BMM_DOT_DECOMPOSE_DTYPES)"),
    RootCause("cpp-template-symbolic-strides",
              "[inductor][cpu] max-autotune CPP GEMM/BMM templates break when a recompile makes an input stride "
              "symbolic",
              ("cpp-bmm-dynamic-batch-stride-compile-error", "cpp-bmm-size1-batch-stride-compile-error",
               "cpp-gemm-dynamic-recompile-crash"),
              "the CPP template kernel does not declare stride symbols it indexes with "
              "(torch/_inductor/codegen/cpp_template_kernel.py), and benchmarking its choices materializes "
              "example inputs from symbolic strides (torch/_inductor/select_algorithm.py)"),
    RootCause("freezing-packs-empty-weights",
              "[inductor][cpu] freezing packs a linear weight with K == 0 or N == 0, or for an input with M == 0, "
              "for oneDNN / MKL, which fails (RuntimeError) or kills the process (SIGFPE)",
              ("freezing-half-linear-empty-weight-onednn", "freezing-mkl-linear-n0-sigfpe",
               "freezing-mkl-linear-m0-sigfpe"),
              "torch/_inductor/fx_passes/mkldnn_fusion.py: `_is_packable_linear` accepts empty weights and batches"),
    RootCause("cpp-gemm-frozen-weight-offset",
              "[inductor][cpu] CPP GEMM template reads a frozen weight from the start of its storage, ignoring "
              "its storage offset (wrong results)",
              ("cpp-gemm-frozen-weight-storage-offset", "cpp-gemm-frozen-sliced-weight"),  # a slice: an offset view
              "torch/_inductor/codegen/cpp_gemm_template.py, the constant-weight path (normalize_shapes re-views "
              "W with the view's size, stride and offset before blocking it); pytorch#159233, in 2.13, fixed the "
              "offset of non-constant weights only (_maybe_remove_storage_offset)"),
    RootCause("addmm-unfuse-bias-zero-scalar",
              "[inductor][cuda] addmm unfused before a pointwise use multiplies by a zero alpha/beta, so inf/NaN "
              "in the ignored term turns into NaN",
              ("addmm-unfuse-bias-zero-scalar-nonfinite",),
              "torch/_inductor/fx_passes/post_grad.py: unfuse_bias_add_to_pointwise's replacement computes "
              "`alpha * mm_result` and `beta * inp` for any alpha/beta != 1, zeros included"),
    RootCause("concat-linear-addmm",
              "[inductor][cpu] freezing's concat-linear fusion of three addmm calls drops alpha/beta and "
              "concatenates 2-D biases along the wrong dim",
              ("concat-linear-addmm-ignores-scalars", "concat-linear-2d-bias-crash"),
              "torch/_inductor/fx_passes/freezing_patterns.py: addmm_fuse_pattern_second matches addmm with "
              "scalar kwargs, and addmm_fuse_replacement_second computes `torch.cat((b1, b2, b3))` (dim 0) and "
              "`aten.addmm(cat_b, inp, cat_w)` without beta/alpha"),
    RootCause("decompose-mm-pass-addmm-scalars",
              "[inductor] decompose_mm_pass rewrites addmm into a mul + sum + add that drops alpha and beta "
              "(wrong results)",
              ("decompose-mm-pass-addmm-ignores-scalars",),
              "torch/_inductor/fx_passes/decompose_mem_bound_mm.py: decompose_addmm's pattern "
              "`CallFunction(aten.addmm, Arg(), Arg(), Arg())` also matches addmm with beta/alpha kwargs, and its "
              "replacement `sum(mat2[:, :, None] * mat3[None, :, :], dim=-2) + mat1` ignores them"),
    RootCause("fx-graph-cache-frozen-packed-weight",
              "[inductor][cpu] FX graph cache hit for a frozen model of the same architecture reuses values of the "
              "model first compiled: the CPP GEMM template's packed weight, an inlined 0-d parameter (wrong results)",
              ("fx-graph-cache-frozen-cpp-packed-weight", "fx-graph-cache-frozen-0d-param"),
              "torch/_inductor/codecache.py (FxGraphCachePickler: a non-inlined frozen parameter is keyed by its "
              "metadata only) with torch/_inductor/codegen/cpp_gemm_template.py (prep_weight packs the weight's "
              "values into a new graph constant, which the cached module keeps)"),
    RootCause("dynamic-output-view-of-mutated-input-offset",
              "[inductor] with dynamic shapes, `buf[..., :n]` of a buffer the program mutates (out=, copy_) and "
              "returns comes back at offset 0 of the buffer's storage, not at the buffer's own offset (wrong results)",
              ("dynamic-out-buffer-narrow-view-offset",),
              "torch/_functorch/_aot_autograd (regenerating an output that aliases a mutated input from the "
              "compiled output, which inductor returns as a view of its own copy at offset 0: "
              "`reinterpret_tensor(buf1, (s0, s1, (1 + s2) // 2), ..., 0)`); aot_eager and static shapes are right"),
    RootCause("binary-folding-addmm-scalars",
              "[inductor] freezing's linear binary folding folds an add of a weight-derived constant into addmm "
              "as if beta = alpha = 1 (wrong results)",
              ("binary-folding-addmm-ignores-scalars",),
              "torch/_inductor/fx_passes/binary_folding.py (enable_linear_binary_folding), the addmm case"),
    RootCause("binary-folding-batched-linear-order",
              "[inductor] freezing's linear binary folding of `x @ W + W[:1]` with a batched x inserts the folded "
              "bias above the weight slice it reads (crash: 'referenced nonexistent value')",
              ("binary-folding-batched-linear-reorders-graph",),
              "torch/_inductor/fx_passes/binary_folding.py, folded_op: `graph.inserting_before(reshape_node)` for the "
              "new addmm and its bias, whatever the position of `other` (the add's constant operand)"),
    RootCause("woq-int8-pattern-unchecked",
              "[inductor][cpu] the weight-only int8 pattern rewrites `(x @ w.t().to(x.dtype)) * scale` to "
              "_weight_int8pack_mm without checking the scale's shape or its operands' layouts",
              ("woq-int8-inlined-scale-crash", "woq-int8-noncontiguous-operand-crash"),
              "torch/_inductor/fx_passes/quantization.py: `_is_valid_woq_optimization_pattern` checks dtypes only, "
              "and the woq lowering passes the activation, the frozen weight and the scale as they are"),
    RootCause("woq-int8-k0-reshape",
              "[inductor][cpu] the weight-only int8 lowering reshapes the activation to [-1, K]: with K == 0 "
              "it divides by zero",
              ("woq-int8-k0-reshape-crash",),
              "torch/_inductor/fx_passes/quantization.py: `_register_woq_lowering`'s `x_shape = [-1, "
              "origin_x_size[-1]]` (view's resolve_negative_size cannot infer -1 for an empty tensor)"),
    RootCause("aten-weight-int8pack-mm-k-segfault",
              "[aten][cpu] _weight_int8pack_mm with bfloat16 activations dies (SIGSEGV) when K is not a multiple "
              "of 16",
              ("woq-int8pack-mm-k-not-16-segfault",),
              "aten/src/ATen/native/cpu/int8mm_kernel.cpp (eager too); inductor's woq pattern reaches it for any K"),
    RootCause("freezing-discard-integer-parameter",
              "[inductor][cpu] freezing_discard_parameters raises for an integer Parameter",
              ("freezing-discard-integer-parameter",),
              "torch/_inductor/freezing.py: invalidate_eager_modules calls requires_grad_(True) on the erased copy "
              "of every Parameter"),
    RootCause("cpp-bmm-epilogue-input-mutation",
              "[inductor][cpu] CPP BMM template with a pointwise epilogue, then an in-place mutation of the bmm "
              "input: AssertionError in ir.py",
              ("cpp-bmm-epilogue-input-mutation-crash",),
              "epilogue fusion into the CPP BMM template (torch/_inductor/codegen/cpp_bmm_template.py)"),
    RootCause("addmm-scalar-bias",
              "[inductor] max-autotune addmm with a 0-d bias: IndexError in tuned_addmm (2.13), an assertion on "
              "the frozen constant bias with M == 0 (2.11)",
              ("addmm-scalar-bias-indexerror", "addmm-frozen-scalar-bias-m0-assert"),
              "torch/_inductor/kernel/mm.py: tuned_addmm reads inp.get_stride()[0] before checking the bias rank, "
              "and (2.11) its empty-problem path passes the unexpanded 0-d bias to aten_addmm"),
    RootCause("aten-int-mm-short-leading-dim",
              "torch._int_mm on CPU returns garbage when an operand's leading dimension is shorter than it needs",
              ("aten-int-mm-expanded-operand", "aten-int-mm-expanded-operand-dense-other"),
              "aten/src/ATen/native/mkldnn/Matmul.cpp (_mkldnn_gemm_i8i8i32_with_blas takes lda/ldb from strides)"),
    RootCause("aten-baddbmm-zero-alpha",
              "torch.baddbmm on CPU in bf16/fp16 with alpha=0 (and beta=0) returns uninitialized memory",
              ("aten-cpu-baddbmm-zero-alpha-uninitialized", "aten-cpu-baddbmm-zero-alpha-wrong"),
              "ATen's CPU baddbmm for reduced-precision dtypes (aten/src/ATen/native/LinearAlgebra.cpp)"),
    RootCause("aten-bf16-bmm-odd-k-inf",
              "torch.bmm on CPU in bf16 returns NaN where the exact product is +-inf (an inf in A's last column, "
              "odd K, a batch of 2 or more)",
              ("aten-cpu-bf16-bmm-odd-k-inf-nan",),
              "oneDNN's bf16 batched matmul on AVX-512 (aten/src/ATen/native/mkldnn/Matmul.cpp): K is paired, the "
              "inf likely meets a zero pad"),
    RootCause("aten-bf16-amx-nan-in-finite-rows",
              "torch.bmm / torch.mm on CPU in bf16 put NaN into rows whose inputs are finite when other rows hold "
              "NaN/inf (AMX Xeon)",
              ("aten-cpu-bf16-amx-nan-in-finite-rows",),
              "oneDNN's bf16 matmul with AMX tiles (aten/src/ATen/native/mkldnn/Matmul.cpp): a NaN of one row "
              "likely reaches others through a blocked or padded tile"),
    RootCause("mm-epilogue-zero-scalar",
              "[inductor][cuda] max-autotune addmm/baddbmm with alpha=0 or beta=0 propagates inf/NaN from the term "
              "eager ignores",
              ("mm-epilogue-zero-scalar-nonfinite", "addmm-cpu-decomposition-zero-scalar-nonfinite"),
              "torch/_inductor/kernel/mm_common.py: addmm_epilogue multiplies by a zero alpha/beta instead of "
              "dropping the term (the addmm decomposition has the same fault: pytorch#196596, fix PR #196600 open)"),
    RootCause("triton-mm-small-m-block-k-128",
              "[inductor] Triton mm template config BLOCK_K=128, num_warps=1 computes a wrong fp16 addmm for M=1",
              ("triton-mm-template-small-m-block-k-128",),
              "the generated Triton kernel (torch/_inductor/kernel/mm.py's mm template) or Triton itself: "
              "see the standalone kernel script"),
    RootCause("pad-mm-output-padded-strides",
              "[inductor][cuda] shape padding returns a padded view as a bmm output: its strides differ from eager's",
              ("pad-mm-output-padded-strides",),
              "torch/_inductor/fx_passes/pad_mm.py slices the padded product back; torch/_inductor/graph.py then "
              "keeps only the stride order of the (now view) output, against keep_output_stride"),
    RootCause("cpp-half-reduction-accumulator-redeclared",
              "[inductor][cpu] two identical fp16/bf16 reductions in one graph (the same bmm with M == 1 or N == 1 "
              "twice; a backward that sums one gradient over the rows twice): the C++ kernel declares its vector "
              "accumulator twice (conflicting declaration, does not compile)",
              ("cpp-half-bmm-m1-repeated-product-compile-error",),
              "the CPP reduction codegen (torch/_inductor/codegen/cpp.py) for two identical fused reductions (a "
              "decomposed M == 1 bmm, torch/_inductor/decomposition.py, twice; or the backward of x + b + c[:1, :]): "
              "both name their half-precision accumulator `at_BFloat16_tmp_acc0_vec` (float32 compiles)"),
    RootCause("mm-out-dtype-row-vector",
              "[inductor][cuda] torch.mm with out_dtype=float32 and one row returns the input dtype under "
              "coordinate-descent tuning",
              ("mm-out-dtype-row-vector-dtype",),
              "torch/_inductor/decomposition.py: the mm decomposition for M == 1 or N == 1 "
              "(coordinate_descent_tuning) does not honour out_dtype"),
)


@dataclasses.dataclass
class Group:
    """Findings one fix would close."""

    key: str
    title: str
    findings: list[Finding]
    cause: RootCause | None = None

    @property
    def representative(self) -> Finding:
        """The finding whose plain repro leads the draft: confirmed, then reproduced, then shortest."""
        def rank(f: Finding) -> tuple[int, int, int]:
            plain = plain_of(f)
            return (not plain.get("confirmed"), not plain.get("reproduced"), len(f.key))
        return min(self.findings, key=rank)


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else empty (records written by other versions may differ)."""
    return value if isinstance(value, dict) else {}


def plain_of(f: Finding) -> dict[str, Any]:
    """What the export recorded of the finding's plain repro (empty when nothing was)."""
    return as_dict(as_dict(f.repro).get("plain"))


def _dims(case: dict[str, Any]) -> dict[str, int]:
    """M, N, K of the case's first product (nothing for a malformed case)."""
    try:
        a, b = (list(t["shape"]) for t in case["inputs"][:2])
        return {"M": a[-2] if len(a) > 1 else 1, "K": a[-1] if a else 1, "N": b[-1] if b else 1}
    except (KeyError, TypeError, ValueError):
        return {}


def trigger(f: Finding) -> tuple[str, ...]:
    """What the failure needs beyond the op: empty dims, freezing, dynamic shapes, the backend set."""
    case, form = as_dict(f.best_case), as_dict(plain_of(f).get("form"))
    empty = [d for d, n in _dims(case).items() if n == 0]
    parts = [f"{'/'.join(empty)} == 0"] if empty else []
    if form.get("frozen", case.get("frozen_weights")):
        parts.append("frozen weights")
    if case.get("dynamic") or case.get("mark_dynamic") or case.get("second_call"):
        parts.append("dynamic shapes")
    backends = as_dict(form.get("patch")).get("max_autotune_gemm_backends")
    return tuple(parts + ([f"backends {backends}"] if backends else []))


def symptom(f: Finding) -> str:
    """The failure without op, dtype or call: exception type and innermost frame, kind of wrong
    result and kernel family, or the worker's death."""
    if f.oracle == "crash":
        return f.signature
    sig = Signature.parse(f.signature)
    if f.oracle == "process":
        return ":".join((sig.kind, *sig.subject[:-1]))  # without the op
    return f"{f.oracle}:{sig.kind}" + (f"@{sig.at}" if sig.choice else "")


def group_findings(findings: Iterable[Finding]) -> list[Group]:
    """Root-cause groups: triaged causes by known bug, the rest by symptom and trigger."""
    by_bug = {bug: cause for cause in ROOT_CAUSES for bug in cause.bugs}
    groups: dict[str, Group] = {}
    for f in findings:
        cause = by_bug.get(as_dict(f.known_bug).get("name", ""))
        if cause is not None:
            key, title = cause.key, cause.title
        else:
            key = re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join((symptom(f),) + trigger(f))).strip("-").lower()[:100]
            title = _title(f)
        groups.setdefault(key, Group(key, title, [], cause)).findings.append(f)
    return sorted(groups.values(), key=lambda g: g.key)


def _title(f: Finding) -> str:
    """The issue title of an untriaged finding's group, from its signature."""
    op = f.op
    how = 'torch.compile(mode="max-autotune")' if as_dict(plain_of(f).get("form")).get("mode") else "torch.compile"
    sig = Signature.parse(f.signature)
    first = sig.subject[0] if sig.subject else ""
    if f.oracle == "crash":
        return f"[inductor] {how} of {op}: {first} in {':'.join(sig.subject[1:])}"
    if f.oracle == "process":
        return f"[inductor] {how} of {op} kills the process ({sig.kind} {first})"
    if sig.kind == "dropped":
        stage = "compile" if sig.detail == "precompile" else "run"
        return (f"[inductor] {how} of {op}: the {sig.choice} choice fails to {stage} while autotuning (dropped "
                "silently; alone it raises)")
    what = {"output-strides": "other strides than eager", "output-meta": "another shape or dtype than eager",
            "choice-crash": f"a {sig.detail} compiling one kernel choice"}.get(sig.kind, "wrong values")
    return f"[inductor] {how} of {op} gives {what}" + (f" ({sig.at})" if sig.choice else "")
