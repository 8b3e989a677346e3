"""Known bugs of the frozen-weight forms users hold (strategies.vocabulary.WEIGHT_FORMS): the weight-only
int8 pattern and fused weights; part of the registry (fuzz.bugs.known_bugs.KNOWN_BUGS)."""

from __future__ import annotations

import re

from fuzz.bugs.entry import PRODUCT_OPS, PRODUCT_WRONG_VALUES, TEMPLATE, WRONG_VALUES, KnownBug
from fuzz.bugs.regions import calls, frozen_cpp, replace, scaled, with_aten, with_config, with_input
from fuzz.run.programs import OTHER_WEIGHTS
from fuzz.run.values import scale_shape
from strategies.case import Case, TensorSpec
from strategies.vocabulary import INT8_FORMS, INTEGER_DTYPES


def woq_matched(case: Case) -> bool:
    """inductor 2.13's woq pattern rewrites the case to `_weight_int8pack_mm`: an int8 weight form
    with bfloat16 activations (it checks the dtypes alone)."""
    return case.weight_form in INT8_FORMS and case.inputs[0].dtype == "bfloat16"


def woq_unmatched(case: Case) -> Case:
    """Untrigger: float16 activations, which the woq pattern leaves to the plain mm path, with ATEN
    added to a backend set that lacks it (CPP alone offers that float16 mm no choice, and a re-run
    that cannot run confirms nothing; every choice is compiled alone in it, CPP's too)."""
    return with_aten(with_input(case, 0, lambda t: TensorSpec(t.shape, t.stride, t.offset, "float16")))


INLINED_CONSTANT_ELEMENTS = 8
"""inductor inlines a frozen 1-D constant of at most this many elements as values (a Pointwise;
a 0-d one as an ir.Constant): GraphLowering.can_inline_constant."""


def inlined_scale(case: Case) -> bool:
    """The woq pattern's scale is one inductor inlines: 0-d, or 1-D of at most 8 elements (a (1,)
    scale, or per channel with N <= 8)."""
    if not woq_matched(case):
        return False
    shape = scale_shape(case)
    return shape == () or (len(shape) == 1 and shape[0] <= INLINED_CONSTANT_ELEMENTS)


def woq_operand_not_contiguous(case: Case) -> bool:
    """A case whose woq pattern matched, with an operand _weight_int8pack_mm refuses: the int8
    weight the module holds, (N, K) (input 1, a (K, N) view, transposed), not contiguous (dims of
    size 1 aside), or an activation whose rows are not unit-stride: a strided input without a
    prologue, or a prologue ending in a column-major copy."""
    if not woq_matched(case):
        return False
    (k, n), (row, col) = case.inputs[1].shape, case.inputs[1].stride
    column_major = case.prologue[-1:] == ("transposed_copy",) if case.prologue else case.inputs[0].stride[-1] != 1
    return (k > 1 and row != 1) or (n > 1 and col != k) or (k > 1 and column_major)


def zero_d_params(case: Case) -> bool:
    """The module holds a 0-d frozen parameter or buffer (a scalar bias, an int8 form's 0-d scale):
    inductor inlines its value (ir.Constant), while the FX graph cache keys it by its metadata only
    (codecache's reducer hashes the values of 1-D constants of <= 8 elements, not of 0-d ones)."""
    return any(not t.shape for t in case.inputs[1:]) or (case.weight_form in INT8_FORMS and scale_shape(case) == ())


def integer_parameter_discarded(case: Case) -> bool:
    """freezing_discard_parameters with an integer weight held as a Parameter (int_mm's int8 weights,
    an integer product's; the int8 weight forms hold buffers)."""
    return (case.frozen_weights and bool(case.config_dict.get("freezing_discard_parameters"))
            and case.weight_form not in INT8_FORMS and any(t.dtype in INTEGER_DTYPES for t in case.inputs[1:]))


WEIGHT_FORM_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        name="woq-int8-noncontiguous-operand-crash",
        oracles=("crash", "template_presence"),
        signatures=(r"crash:RuntimeError:output_code\.py:__call__",
                    r"dropped:_weight_int8pack_mm@aten::_weight_int8pack_mm:\w+"),
        messages=(r"_weight_int8pack_mm_cpu : (expect B to be contiguous|A must be contiguous on the last dimension)",
                  r"dropped aten::_weight_int8pack_mm "),
        applies=woq_operand_not_contiguous,
        untrigger=woq_unmatched,  # a contiguous weight took a segfault in _weight_int8pack_mm here: not a safe re-run
        tracking="repros/woq_int8_noncontiguous_weight_crash_plain.py (not yet filed upstream; found by a CPU "
                 "campaign test): inductor's woq pattern hands a non-contiguous int8 weight, or an activation "
                 "whose rows are strided (a transposed input, or a column-major copy computed before the op: "
                 "a seed-2 3-minute campaign, 2.13), to _weight_int8pack_mm, which requires a contiguous B and "
                 "a unit-stride A: a plain compile, or max-autotune with ATEN alone, raises; with other choices "
                 "autotuning may drop the extern one (a seed-1 3-minute campaign: ATEN alone under "
                 "max_autotune_gemm); eager runs",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-discard-integer-parameter",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:freezing\.py:invalidate_eager_modules",),
        messages=(r"only Tensors of floating point dtype can require gradients",),
        applies=integer_parameter_discarded,
        untrigger=lambda c: replace(c, config={**c.config_dict, "freezing_discard_parameters": False}),
        tracking="repros/freezing_discard_integer_parameter_plain.py (not yet filed upstream): "
                 "freezing_discard_parameters replaces every Parameter by an ErasedTensor and calls "
                 "requires_grad_(True) on it, which raises for an integer Parameter (int8, any integer dtype)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="woq-int8pack-mm-k-not-16-segfault",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGSEGV:mm",),
        applies=lambda c: woq_matched(c) and c.inputs[0].shape[-1] % 16 != 0,
        untrigger=woq_unmatched,
        tracking="repros/woq_int8pack_mm_k_segfault_plain.py (not yet filed upstream): ATen's CPU "
                 "_weight_int8pack_mm with bfloat16 activations dies (SIGSEGV) when K is not a multiple of 16, "
                 "eager too; inductor's woq pattern rewrites `(x @ w.t().to(x.dtype)) * scale` to it for any K",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="woq-int8-inlined-scale-crash",
        oracles=("crash",),
        signatures=(r"crash:AssertionError:ir\.py:unwrap_storage_for_input",
                    r"crash:AssertionError:codegen/cpp_template\.py:generate"),
        messages=(r"<class 'torch\._inductor\.ir\.(Constant|Pointwise)'>", r"_frozen_param\d+', 'buf\w+', "),
        applies=inlined_scale,
        untrigger=woq_unmatched,
        tracking="repros/woq_int8_scalar_scale_crash_plain.py (not yet filed upstream): the woq pattern "
                 "checks only the scale's dtype: a 0-d scale, or a 1-D one of at most 8 elements (a (1,) scale, "
                 "or per channel with N <= 8: a seed-2 3-minute campaign), which inductor inlines as values, "
                 "reaches _weight_int8pack_mm's lowering unrealized, and the extern kernel "
                 "(ir.Constant/Pointwise) or the CPP template's epilogue (kernel call buffers) assert",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="woq-int8-k0-reshape-crash",
        oracles=("crash",),
        signatures=(r"crash:ZeroDivisionError:ir\.py:resolve_negative_size",),
        messages=(r"division by zero",),
        applies=lambda c: woq_matched(c) and c.inputs[0].shape[-1] == 0,
        untrigger=woq_unmatched,
        tracking="repros/woq_int8_k0_reshape_crash_plain.py (not yet filed upstream; found by a 3-minute CPU "
                 "campaign, seed 3): the woq lowering reshapes the activation to [-1, K], which with K == 0 "
                 "divides by zero (any mode and backend; eager returns zeros)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-sliced-weight",
        oracles=("numerics",),
        signatures=PRODUCT_WRONG_VALUES,
        applies=lambda c: frozen_cpp(c) and c.weight_form == "fused",
        # the slice at the storage's start: the template still serves (a plain non-dense bf16 weight
        # goes to mkldnn's packed linear, no selection at all) and reads it right
        untrigger=lambda c: replace(c, weight_form="fused_first"),
        tracking="repros/cpp_gemm_frozen_sliced_weight_plain.py (not yet filed upstream): the CPP GEMM "
                 "template on a frozen weight that is a column slice of a parameter (`W[:, n:2 * n]`, a fused "
                 "qkv weight) reads it from the wrong place: wrong values (NaN where the other columns hold NaN); "
                 "float32, float16 and bfloat16; the first slice (`W[:, :n]`, at offset 0) is read right",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=TEMPLATE,
    ),
    KnownBug(
        name="binary-folding-addmm-ignores-scalars",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@.+)?",),
        applies=lambda c: (c.op == "addmm" and c.frozen_weights and "add_bias_row" in c.consumers
                           and bool(c.config_dict.get("enable_linear_binary_folding"))
                           and scaled(c)),
        untrigger=with_config(enable_linear_binary_folding=False),
        tracking="repros/binary_folding_addmm_ignores_scalars_plain.py (not yet filed upstream): with freezing "
                 "and enable_linear_binary_folding, any compile mode, `torch.addmm(b, x, W, beta=.., alpha=..) "
                 "+ W[:1]` (a constant from the frozen weight) is folded into the addmm as if beta = alpha = 1 "
                 "(torch 2.13 CPU: beta 0.5 off by 1.5, alpha 0.3 off by 309; beta = alpha = 1 exact)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="binary-folding-batched-linear-reorders-graph",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:[\w/.]+:\w+",),
        messages=(r"referenced nonexistent value",),
        applies=lambda c: (c.frozen_weights and "add_bias_row" in c.consumers
                           and bool(c.config_dict.get("enable_linear_binary_folding"))
                           and any(len(x0.shape) >= 3 and len(x1.shape) == 2 for x0, x1, *_ in calls(c))),
        untrigger=with_config(enable_linear_binary_folding=False),
        tracking="repros/binary_folding_batched_linear_reorders_graph.py (not yet filed upstream; a 5-minute "
                 "noise campaign, seed 5): with freezing and enable_linear_binary_folding, `x @ W + W[:1]` with a "
                 "batched x (the mm between two reshapes) crashes: binary_folding.py's folded_op inserts the new "
                 "bias before the reshape, above the slice it reads ('Node reshape_default referenced "
                 "nonexistent value slice_1'); a 2-D x compiles",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="fx-graph-cache-frozen-cpp-packed-weight",
        oracles=("numerics",),
        signatures=PRODUCT_WRONG_VALUES,
        messages=(re.escape(OTHER_WEIGHTS),),  # only the program loaded from the cache
        applies=lambda c: frozen_cpp(c) and c.warm_cache,
        untrigger=lambda c: replace(c, warm_cache=False),
        tracking="repros/fx_graph_cache_frozen_cpp_packed_weight_plain.py (not yet filed upstream; found by the "
                 "suite's warm-cache compile of a frozen case on other weights): with freezing and the FX graph cache "
                 "on (both inductor's defaults), a frozen weight enters the cache key by its metadata only, but the "
                 "CPP GEMM template bakes a packed copy of its values into the cached module: a second model of the "
                 "same architecture (another checkpoint, or the next block of a regionally compiled model) loads it "
                 "and computes with the first model's weights (fp16/bf16 mm, addmm, any bmm; a float32 mm's mkldnn-"
                 "packed weight makes the graph uncacheable)",
        torch_versions=("2.13",),
        devices=("cpu",),
        lives_in=TEMPLATE,
    ),
    KnownBug(
        name="fx-graph-cache-frozen-0d-param",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:({PRODUCT_OPS}|scaled_mm):\w+(@.+)?",),  # 0-d fp8 scales too
        messages=(re.escape(OTHER_WEIGHTS),),  # only the program loaded from the cache
        applies=lambda c: c.frozen_weights and c.warm_cache and zero_d_params(c),
        untrigger=lambda c: replace(c, warm_cache=False),
        tracking="repros/fx_graph_cache_frozen_0d_param_plain.py (not yet filed upstream; found by a 10-minute "
                 "CPU campaign's warm-cache compile of a frozen baddbmm): with freezing and the FX graph cache on, "
                 "any compile mode and backend, a second model whose 0-d parameter (a scalar bias) differs loads "
                 "the first one's graph, with the first model's scalar inlined (off by their difference); a "
                 "weight-only int8 linear's 0-d scale too (a 5-minute CPU campaign, seed 15)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
)
