"""Oracles as pure functions over hand-made observations: the branches a CPU compile cannot
reach (Triton choices) and the documented layout gate, case by case."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from oracles import layout, numerics, observed, src_hash
from oracles.error_model import rounding
from oracles.model import ChoiceRecord, Gate, Observation, OutputCheck, SelectionEvent, TensorMeta
from strategies.case import Case, TensorSpec

CASE = Case.make(op="mm", device="cuda", config={"max_autotune": True},
                 inputs=(TensorSpec((2, 2), (2, 1), 0, "float16"), TensorSpec((2, 2), (2, 1), 0, "float16")))
SHA = "a" * 64


def extern(layout_name: str = "FlexibleLayout") -> ChoiceRecord:
    return ChoiceRecord("extern", "aten::mm", "ExternKernelChoice", layout_name, None, True)


def triton(layout_name: str = "FixedLayout", value: str | None = SHA) -> ChoiceRecord:
    return ChoiceRecord("template", "triton::mm", "TritonTemplate", layout_name, value, True)


def gate(flag: bool = True, backends: tuple[str, ...] = ("ATEN", "TRITON"), autotune: bool = True) -> Gate:
    return Gate(autotune, False, flag, backends, "cuda", False)


def obs_with(*choices: ChoiceRecord, g: Gate | None = None, source: str = "template_configs") -> Observation:
    return Observation(case=CASE, selections=[SelectionEvent(source, "mm", choices, g or gate())],
                       catalogue={"triton::mm": {"src_hash": SHA, "source_sha256": SHA}})


def sigs(violations: list) -> set[str]:
    return {v.signature for v in violations}


def test_flexible_extern_beside_triton_template_is_unsound() -> None:
    assert sigs(layout.check_soundness(obs_with(extern(), triton()))) == {"flexible-with-template:mm:TritonTemplate"}
    assert layout.check_soundness(obs_with(extern("FixedLayout"), triton())) == []
    assert layout.check_soundness(obs_with(extern())) == []


@pytest.mark.parametrize("g, all_extern, fixed", [
    (gate(flag=True), True, False),
    (gate(flag=True), False, True),
    (gate(flag=False), True, True),
    (gate(flag=True, backends=("ATEN", "CPP")), True, True),
    (gate(flag=True, backends=("ATEN", "CUTLASS")), True, True),
    (gate(flag=True, backends=("CK",)), True, True),
    (gate(flag=False, autotune=False), True, False),  # mm/addmm stay flexible without max-autotune
])
def test_layout_gate_table(g: Gate, all_extern: bool, fixed: bool) -> None:
    assert layout.layout_must_be_fixed(g, "mm", all_extern) is fixed


def test_gate_without_autotune_fixes_other_ops_unless_flagged() -> None:
    assert layout.layout_must_be_fixed(gate(flag=False, autotune=False), "bmm", True)
    assert not layout.layout_must_be_fixed(gate(flag=True, autotune=False), "bmm", True)


def test_spec_reports_both_directions() -> None:
    assert sigs(layout.check_spec(obs_with(extern("FixedLayout")))) == {"fixed-when-allowed:mm"}
    assert sigs(layout.check_spec(obs_with(extern(), g=gate(flag=False)))) == {"flexible-when-gated:mm"}
    assert layout.check_spec(obs_with(extern())) == []
    assert layout.check_spec(obs_with(extern("FixedLayout"), triton())) == []


def test_spec_judges_the_candidates_the_gate_saw_not_only_the_choices_built() -> None:
    """A Triton candidate that builds no choice (K == 0: its rendering divides by zero) still fixes
    the extern choice's layout, as the gate documents; an unbuilt extern candidate does not."""
    def event(*unbuilt: str) -> Observation:
        return Observation(case=CASE, selections=[SelectionEvent(
            "template_configs", "mm", (extern("FixedLayout"),), gate(), unbuilt=unbuilt)])
    assert layout.check_spec(event("TritonTemplate")) == []
    assert sigs(layout.check_spec(event("ExternKernelChoice"))) == {"fixed-when-allowed:mm"}
    assert sigs(layout.check_spec(event())) == {"fixed-when-allowed:mm"}


def test_triton_hash_checked_against_the_catalogue() -> None:
    assert src_hash.check(obs_with(triton())) == []
    assert sigs(src_hash.check(obs_with(triton(value="b" * 64)))) == {"differs-across-processes:triton::mm"}
    bad_source = obs_with(triton())
    bad_source.catalogue = {"triton::mm": {"src_hash": SHA, "source_sha256": "c" * 64}}
    assert sigs(src_hash.check(bad_source)) == {"not-source-sha256:triton::mm"}
    unknown = obs_with(triton())
    unknown.catalogue = {}
    assert sigs(src_hash.check(unknown)) == {"not-in-catalogue:triton::mm"}


def test_triton_hash_must_not_change_between_compiles() -> None:
    later = obs_with(triton())
    later.earlier_hashes = {"triton::mm": "d" * 64}
    assert sigs(src_hash.check(later)) == {"changed-between-compiles:triton::mm"}


def _meta(t: torch.Tensor, is_view: bool = False, aliases: tuple[str, ...] = ()) -> TensorMeta:
    return TensorMeta(tuple(t.stride()), t.storage_offset(), is_view, aliases)


def _numeric_obs(compiled: torch.Tensor, exact: bool, ref: torch.Tensor | None = None) -> Observation:
    ref = torch.tensor([[3.0, -1.0], [0.5, 2.0]], dtype=torch.float64) if ref is None else ref
    bound = rounding(ref, torch.float16)  # a correct kernel: one rounding to float16
    eager = ref.half()
    return Observation(case=CASE, results=[OutputCheck("call0/out0", eager, compiled, ref, bound, exact, None,
                                                       _meta(eager), _meta(compiled))])


def test_numerics_exact_and_tolerance_modes() -> None:
    good = torch.tensor([[3.0, -1.0], [0.5, 2.0]]).half()
    assert numerics.check(_numeric_obs(good, exact=True)) == []
    off_by_ulp = good.clone()
    off_by_ulp[0, 0] = 3.0 + 2.0**-9  # the next float16 after 3
    assert sigs(numerics.check(_numeric_obs(off_by_ulp, exact=True))) == {"exact-mismatch:mm:float16"}
    assert sigs(numerics.check(_numeric_obs(off_by_ulp, exact=False))) == {"tolerance:mm:float16"}  # 1 ulp > 1/2 ulp
    half_ulp = torch.tensor([[3.0 + 2.0**-10, -1.0], [0.5, 2.0]], dtype=torch.float64)  # rounds to 3 or the next
    assert numerics.check(_numeric_obs(off_by_ulp, exact=False, ref=half_ulp)) == []
    assert numerics.check(_numeric_obs(good, exact=False, ref=half_ulp)) == []
    wrong = good.clone()
    wrong[1, 1] = 2.5
    assert sigs(numerics.check(_numeric_obs(wrong, exact=False))) == {"tolerance:mm:float16"}
    nan = good.clone()
    nan[0, 1] = float("nan")
    assert sigs(numerics.check(_numeric_obs(nan, exact=False))) == {"nonfinite:mm:float16"}
    assert numerics.error_ratio(_numeric_obs(nan, exact=False)) == float("inf")


def test_an_exact_case_wants_nan_exactly_where_the_exact_result_has_it() -> None:
    """A bias with NaN and beta == 1, alpha == 0: exact, and NaN is the exact result there (a CPU
    campaign's false positive compared NaN with NaN as unequal)."""
    ref = torch.tensor([[3.0, float("nan")], [0.5, 2.0]], dtype=torch.float64)
    same = ref.half()
    assert numerics.check(_numeric_obs(same, exact=True, ref=ref)) == []
    moved = torch.tensor([[float("nan"), 1.0], [0.5, 2.0]]).half()
    assert sigs(numerics.check(_numeric_obs(moved, exact=True, ref=ref))) == {"exact-mismatch:mm:float16"}


def test_nan_and_inf_must_sit_where_the_reference_has_them() -> None:
    ref = torch.tensor([[float("nan"), float("inf")], [float("-inf"), 2.0]], dtype=torch.float64)
    right = ref.half()
    assert numerics.check(_numeric_obs(right, exact=False, ref=ref)) == []
    for i, j, value in [(0, 0, 1.0), (0, 1, float("nan")), (1, 0, float("inf")), (1, 1, float("inf"))]:
        wrong = right.clone()
        wrong[i, j] = value
        assert sigs(numerics.check(_numeric_obs(wrong, exact=False, ref=ref))) >= {"nonfinite:mm:float16"}, (i, j)


def test_a_value_past_the_dtype_may_overflow_to_its_own_infinity_only() -> None:
    ref = torch.tensor([[70000.0, -70000.0]], dtype=torch.float64)  # beyond float16's 65504
    assert numerics.check(_numeric_obs(torch.tensor([[float("inf"), float("-inf")]]).half(), False, ref)) == []
    wrong = torch.tensor([[float("-inf"), float("-inf")]]).half()
    assert sigs(numerics.check(_numeric_obs(wrong, False, ref))) == {"nonfinite:mm:float16"}


def test_numerics_checks_shape_dtype_strides_and_aliasing() -> None:
    good = torch.tensor([[3.0, -1.0], [0.5, 2.0]]).half()
    assert sigs(numerics.check(_numeric_obs(good.float(), exact=True))) == {"output-meta:mm"}
    assert sigs(numerics.check(_numeric_obs(good.t().contiguous().t(), exact=True))) == {"output-strides:mm"}
    offset = _numeric_obs(good, exact=True)
    offset.results[0].compiled_meta = TensorMeta((2, 1), 4, False)  # a fresh tensor at an offset
    assert sigs(numerics.check(offset)) == {"output-strides:mm"}
    view = _numeric_obs(good, exact=True)
    view.results[0].eager_meta = TensorMeta((2, 1), 0, True)
    view.results[0].compiled_meta = TensorMeta((4, 1), 2, False)  # a view: only the stride order is promised
    assert numerics.check(view) == []
    view.results[0].compiled_meta = TensorMeta((1, 2), 0, False)
    assert sigs(numerics.check(view)) == {"output-stride-order:mm"}
    alias = _numeric_obs(good, exact=True)
    alias.results[0].eager_meta = TensorMeta((2, 1), 0, False, ("out1",))  # eager returns the same tensor twice
    assert sigs(numerics.check(alias)) == {"output-aliasing:mm"}
    of_input = _numeric_obs(good, exact=True)  # a view of the caller's out= buffer (in2), at its offset 1
    of_input.results[0].eager_meta = TensorMeta((2, 1), 1, True, ("in2",))
    of_input.results[0].compiled_meta = TensorMeta((2, 1), 1, True, ("in2",))
    assert numerics.check(of_input) == []
    of_input.results[0].compiled_meta = TensorMeta((2, 1), 0, True, ("in2",))  # where a view of the input sits
    assert sigs(numerics.check(of_input)) == {"output-view:mm"}
    of_input.results[0].compiled_meta = TensorMeta((4, 1), 1, True, ("in2",))
    assert sigs(numerics.check(of_input)) == {"output-view:mm"}


def test_single_choice_results_are_named_by_their_template() -> None:
    obs = _numeric_obs(torch.tensor([[3.0, -1.0], [0.5, 9.0]]).half(), exact=True)
    obs.results[0].choice = triton()
    assert sigs(numerics.check(obs)) == {"exact-mismatch:mm:float16@triton::mm"}


def test_silence_is_a_failure_but_decomposition_is_not() -> None:
    never_lowered = Observation(case=CASE, post_grad_targets=None)
    assert sigs(observed.check_observed(never_lowered)) == {"no-lowering:mm"}
    decomposed = Observation(case=CASE, post_grad_targets=[])
    assert observed.check_observed(decomposed) == []
    unselected = Observation(case=CASE, post_grad_targets=["aten.mm"])
    assert sigs(observed.check_observed(unselected)) == {"unselected:mm"}


def test_rounding_into_subnormals_is_within_the_bound_but_more_is_not() -> None:
    tiny = torch.tensor([[1e-6]], dtype=torch.float64)  # float16 subnormal range: spacing 2**-24
    assert numerics.check(_numeric_obs(torch.tensor([[1e-6]]).half(), False, tiny)) == []  # one rounding
    assert sigs(numerics.check(_numeric_obs(torch.tensor([[1e-6 + 4 * 2.0**-24]]).half(), False, tiny))) \
        == {"tolerance:mm:float16"}


def test_where_an_earlier_step_may_overflow_any_value_is_allowed_and_nowhere_else() -> None:
    """A chain_mm of large values: float32 partial sums of y @ y^T pass float32's range where the
    float64 result fits (a CPU campaign's false positive: eager and every kernel give inf/NaN there)."""
    from fuzz.run import programs
    from fuzz.run.values import materialize
    from oracles.error_model import KernelModel

    case = Case.make(op="mm", device="cpu", value_mode="large", seed=1, consumers=("chain_mm",), config={},
                     inputs=(TensorSpec((8, 76), (1, 8), 0, "float32"), TensorSpec((76, 129), (129, 1), 0, "float32")))
    tensors = materialize(case)
    tensors[0][:4] *= 2.0**-80  # rows whose products stay far inside float32's range
    want = programs.expected(case, [t.double() for t in tensors], KernelModel())
    eager, ref, bound = programs.run(case, tensors)[0], want.values[0], want.bounds[0]
    unbounded = ~torch.isfinite(bound)
    assert (~torch.isfinite(eager) & torch.isfinite(ref)).any() and bool(unbounded[~torch.isfinite(eager)].all())

    def check(got: torch.Tensor) -> set[str]:
        return sigs(numerics.check(Observation(case=case, results=[
            OutputCheck("call0/out0", eager, got, ref, bound, False, None, _meta(eager), _meta(got))])))

    assert check(eager) == set()
    bounded = torch.isfinite(bound).flatten().nonzero()[0, 0]
    wrong = eager.clone()
    wrong.view(-1)[bounded] = float("nan")
    assert check(wrong) == {"nonfinite:mm:float32"}


@pytest.mark.parametrize(("weight_stride", "must"), [((1, 21), True), ((256, 1), True), ((2, 84), False)])
def test_a_frozen_weight_without_a_unit_stride_need_not_get_the_cpp_template(weight_stride: tuple[int, int],
                                                                            must: bool) -> None:
    """Measured on 2.13: inductor offers the CPP GEMM template for a packed linear only when the
    (N, K) weight has a unit stride (a CPU campaign reported the (2, 84) one as missing)."""
    from oracles import templates
    from oracles.model import Operand

    event = SelectionEvent("autotune", "packed_linear", (extern(),), Gate(False, True, False, ("CPP",), "cpu", False),
                           operands=(Operand((3, 256), (256, 1), "float32"), Operand((1459233, 1), (1, 0), "float32"),
                                     Operand((21, 256), weight_stride, "float32")), out_dtype="float32", device="cpu")
    assert ("CPP" in templates.must_offer(event)) == must
    assert sigs(templates.check(Observation(case=CASE, selections=[event]))) == ({"missing:packed_linear:CPP"} if must
                                                                                  else set())


def test_a_single_choice_compile_is_judged_with_the_choices_of_the_programs_other_selections() -> None:
    """A cat's mm still autotunes while the first mm is kept to its Triton choice: on the H200 the
    cat's cuBLAS mm (bf16 split-K partials allowed) put 253x the Triton-only bound into the output."""
    from fuzz.run.harness import kernel_model, single_choice_plan

    def autotune(graph: int, *choices: ChoiceRecord) -> SelectionEvent:
        return SelectionEvent("autotune", "mm", choices, gate(), graph)

    first, cat_mm = autotune(0, triton(), extern()), autotune(0, extern(), triton())
    recompiled_first, single = autotune(1, triton(), extern()), autotune(0, extern())
    plan = single_choice_plan([first, cat_mm, single, recompiled_first])
    assert [(s, event) for s, event, _ in plan] == [(0, first), (1, cat_mm)]
    assert plan[0][2] == [extern(), triton(), extern()]  # the cat's and the lone selection's, not graph 1's first
    case = dataclasses.replace(CASE, reduced_precision=True)
    assert not kernel_model(case, [triton()]).half_partials
    assert kernel_model(case, [triton(), *plan[0][2]]).half_partials


@pytest.mark.parametrize(("k", "cap", "must"), [(31, None, True), (31, 2, False), (33, 2, True), (16, None, False)])
def test_mm_plus_mm_needs_a_k_past_the_block_k_of_the_configs_a_cap_leaves(k: int, cap: int | None,
                                                                        must: bool) -> None:
    """mm_plus_mm's Triton configs need BLOCK_K < K; under a cap on configs 2.11 keeps only its first
    configs (BLOCK_K 32) before dropping those, so K = 31 with two configs got no Triton choice on the
    H200."""
    from oracles import templates
    from oracles.model import Operand

    a, b = Operand((30, k), (k, 1), "float16"), Operand((k, 5), (5, 1), "float16")
    event = SelectionEvent("autotune", "mm_plus_mm", (extern(),), Gate(False, True, True, ("ATEN", "TRITON"), "cuda",
                                                                       False, cap),
                           operands=(a, b, a, b), out_dtype="float16", device="cuda")
    assert ("TRITON" in templates.must_offer(event)) == must


def _nudged(obs: Observation, times: float) -> Observation:
    """`obs` with its first output's worst element moved `times` its bound from the reference."""
    check = obs.results[0]
    ref, bound = check.reference, check.bound
    i = int(torch.where(torch.isfinite(bound) & torch.isfinite(ref), bound, 0).flatten().argmax())
    got = check.compiled.clone()
    got.view(-1)[i] = float(ref.flatten()[i] + times * bound.flatten()[i])
    return dataclasses.replace(obs, results=[dataclasses.replace(check, compiled=got), *obs.results[1:]])


def test_gelu_may_err_by_a_few_units_of_its_input_not_only_of_its_result() -> None:
    """gelu(y) = y/2 (1 + erf(y/sqrt 2)): erf's error times |y|/2 scales with |y|, not with the
    result. A 5-minute CPU campaign's frozen mm + bias row + gelu (K = 1) came out 1.05 times the
    bound that counted only roundings of gelu's result: inductor's fused kernel erred by 5.9u|y| at
    y = -0.37, where gelu(y) = -0.13."""
    from fuzz.run.harness import HashLedger, run_case

    case = Case.from_json({
        "config": {"max_autotune": False, "max_autotune_gemm": False, "max_autotune_gemm_backends": "ATEN,CPP",
                   "max_autotune_allow_flexible_layouts": False},
        "consumers": ["add_bias_row", "to_float32", "gelu"], "device": "cpu", "frozen_weights": True,
        "inputs": [{"dtype": "float32", "offset": 0, "shape": [8, 1], "stride": [6, 1]},
                   {"dtype": "float32", "offset": 1, "shape": [1, 33], "stride": [33, 1]}],
        "op": "mm", "prologue": ["relu", "relu"], "seed": 0, "value_mode": "normal"})
    obs = run_case(case, ledger=HashLedger())
    assert obs.results and numerics.check(obs) == []
    assert sigs(numerics.check(_nudged(obs, 1.5))) == {"tolerance:mm:float32"}  # just past the bound: caught


def test_a_bias_row_folded_into_the_linears_bias_may_round_there() -> None:
    """Freezing's binary folding computes `F.linear(x, W, b) + W[:1]` as x @ W + (b + W[:1]): the
    folded bias is rounded first, which may be far larger than y + row (a 10-minute CPU campaign's
    fp16 case, 1.1 to 1.39 times a bound of one rounding of the sum)."""
    from fuzz.run.harness import HashLedger, run_case

    case = Case.from_json({
        "config": {"coordinate_descent_tuning": True, "cpp.gemm_max_k_slices": 0, "enable_linear_binary_folding": True,
                   "max_autotune": True, "max_autotune_allow_flexible_layouts": True,
                   "max_autotune_gemm_backends": "ATEN"},
        "consumers": ["add_bias_row"], "device": "cpu", "frozen_weights": True, "op": "addmm", "seed": 40108,
        "inputs": [{"dtype": "float16", "offset": 0, "shape": [48, 8], "stride": [32, 2]},
                   {"dtype": "float16", "offset": 0, "shape": [8, 129], "stride": [130, 1]},
                   {"dtype": "float16", "offset": 0, "shape": [1, 129], "stride": [516, 2]}],
        "params": {"alpha": 1.0, "beta": 1.0}, "spelling": "linear", "value_mode": "tiny"})
    obs = run_case(case, ledger=HashLedger())
    assert obs.results and numerics.check(obs) == []
    assert sigs(numerics.check(_nudged(obs, 1.5))) == {"tolerance:addmm:float16"}  # just past the bound: caught
