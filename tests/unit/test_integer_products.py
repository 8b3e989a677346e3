"""Integer products (mm-family ops on int64 ... uint8 operands, CPU): the Case model's rules, values
that no result or step overflows, and the two inductor bugs they found, explained by their entries
only where their trigger holds."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import itertools
import multiprocessing

import pytest
import torch

from fuzz.bugs.known_bugs import KNOWN_BUGS
from fuzz.run.programs import source
from fuzz.run.session import FuzzSession
from fuzz.run.values import integer_range, materialize
from strategies.case import Case, CaseError, TensorSpec, contiguous_strides
from strategies.vocabulary import INTEGER_BITS, INTEGER_DTYPES, INTEGER_HEADROOM_BITS
from tests.cases import affected_by

REGIONS = {bug.name: bug for bug in KNOWN_BUGS}


def spec(shape: tuple[int, ...], dtype: str) -> TensorSpec:
    return TensorSpec(shape, contiguous_strides(shape), 0, dtype)


def product(op: str = "bmm", dtype: str = "uint8", k: int = 7, backends: str = "ATEN,CPP", **fields: object) -> Case:
    shapes = {"bmm": ((2, 5, k), (2, k, 3)), "mm": ((5, k), (k, 3)), "addmm": ((5, k), (k, 3), (3,))}[op]
    fields = {"value_mode": "large", "config": {"max_autotune": True, "max_autotune_gemm_backends": backends}, **fields}
    return Case.make(op=op, device="cpu", seed=1, inputs=tuple(spec(s, dtype) for s in shapes), **fields)


@pytest.mark.parametrize(("fields", "message"), [
    ({"device": "cuda"}, "runs on the CPU"),
    ({"value_mode": "normal"}, "value modes exact_int, large"),
    ({"params": {"alpha": 0.5}}, "are integers"),
    ({"params": {"alpha": -1.0}}, "not negative for uint8"),
    ({"consumers": ("gelu",)}, "not 'gelu'"),
    ({"consumers": ("projections",)}, "not 'projections'"),
    ({"prologue": ("neg",)}, "not 'neg'"),
])
def test_an_integer_product_takes_only_what_eager_computes_exactly(fields: dict[str, object], message: str) -> None:
    base = product("addmm", "uint8", backends="ATEN")
    with pytest.raises(CaseError, match=message):
        Case.make(**{**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)},
                     "config": base.config_dict, "params": base.params_dict, **fields})
    assert Case.loads(base.dumps()) == base


@pytest.mark.parametrize(("dtype", "mode"), itertools.product(INTEGER_DTYPES, ("exact_int", "large")))
def test_integer_values_leave_every_product_and_step_inside_the_dtype(dtype: str, mode: str) -> None:
    """The worst case of the values (every input at the range's end), for the largest K the
    strategies draw: the product, doubled by the addmm scalars and twice by steps, still fits."""
    k = min(300, 2 ** (INTEGER_BITS[dtype] - INTEGER_HEADROOM_BITS))
    case = dataclasses.replace(product("mm", dtype, k, "ATEN"), value_mode=mode)
    low, high = integer_range(case)
    top = max(abs(low), high - 1)
    assert high - 1 >= 1 and (low == 0) == (dtype == "uint8")
    limit = min(torch.iinfo(getattr(torch, dtype)).max, 2**53)
    assert 8 * k * top**2 + 8 * top <= limit
    x0 = materialize(case)[0]
    assert x0.dtype == getattr(torch, dtype) and int(x0.min()) >= low and int(x0.max()) < high


def test_integer_scalars_are_passed_as_integers() -> None:
    case = product("addmm", "int64", backends="ATEN", params={"alpha": 2.0, "beta": -1.0})
    assert "beta=-1, alpha=2)" in source(case)


@affected_by("freezing-mkl-pack-integer-weight-crash")
def test_a_frozen_integer_linear_is_the_mkl_packing_entry_and_unfrozen_passes() -> None:
    bug = REGIONS["freezing-mkl-pack-integer-weight-crash"]
    frozen = product("mm", "int32", backends="ATEN", frozen_weights=True, value_mode="exact_int")
    assert bug.applies(frozen) and not bug.applies(bug.untrigger(frozen))
    scaled = product("addmm", "int32", backends="ATEN", frozen_weights=True, params={"alpha": 2.0})
    assert not bug.applies(scaled)  # mkldnn's linear takes alpha == 1 only: not packed
    second = dataclasses.replace(scaled, consumers=("cat_mm_cols",))  # but its x0 @ x1[..., :n] is
    assert bug.applies(second)  # (a 5-minute campaign's 'new' crash, seed 14, in constant folding)
    assert [b.name for _, b in FuzzSession().evaluate(second).known] == [bug.name]
    spelled = Case.make(op="addmm", device="cpu", value_mode="exact_int", seed=2, frozen_weights=True,
                        spelling="operator",
                        inputs=(spec((5, 7), "int32"), spec((7, 3), "int32"), spec((1, 3), "int32")),
                        config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    assert bug.applies(spelled)  # `a @ b + bias`: the mm is packed, whatever the bias
    assert [b.name for _, b in FuzzSession().evaluate(spelled).known] == [bug.name]
    verdict = FuzzSession().evaluate(frozen)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == [bug.name]
    assert FuzzSession().evaluate(bug.untrigger(frozen)).violations == []


@affected_by("freezing-mkl-pack-integer-weight-crash")
def test_a_frozen_uint8_linear_of_a_dynamic_batch_is_the_mkl_packing_entry() -> None:
    """A 5-minute CPU noise campaign's 'new' finding (seed 1), shrunk: oneDNN packs the uint8 weight
    of a dynamic batch and fails to create its inner product ('could not create a primitive
    descriptor'), the entry's third symptom."""
    case = dataclasses.replace(product("mm", "uint8", k=16, backends="ATEN", frozen_weights=True),
                               mark_dynamic=((0, 0),))
    verdict = FuzzSession().evaluate(case)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == ["freezing-mkl-pack-integer-weight-crash"]
    assert "primitive descriptor" in verdict.known[0][0].message


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
@affected_by("cpp-gemm-int8-product-compensation-crash")
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_an_int8_bmm_with_cpp_choices_is_the_compensation_entry(dtype: str) -> None:
    bug = REGIONS["cpp-gemm-int8-product-compensation-crash"]
    case = product("bmm", dtype)
    assert bug.applies(case) and not bug.applies(product("bmm", "int16"))
    verdict = FuzzSession().evaluate(case)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == [bug.name]
    assert FuzzSession().evaluate(bug.untrigger(case)).violations == []
    wider = FuzzSession().evaluate(product("bmm", "int16"))  # the template is not offered: compiles, exact
    assert wider.violations == [] and wider.known == []


@affected_by("cpu-bmm-vector-sum-promotes-integers")
def test_an_integer_bmm_of_one_row_is_the_vector_sum_entry_and_int64_passes() -> None:
    """The entry explains an int64 result of the operands' shape (its fingerprint), and the same case
    in int64, or with no size-1 dim, compiles to the operands' dtype."""
    bug = REGIONS["cpu-bmm-vector-sum-promotes-integers"]
    row = Case.make(op="bmm", device="cpu", value_mode="exact_int", seed=1,
                    inputs=(spec((2, 1, 7), "int32"), spec((2, 7, 3), "int32")),
                    config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    assert bug.applies(row) and not bug.applies(bug.untrigger(row))
    verdict = FuzzSession().evaluate(row)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == [bug.name]
    assert FuzzSession().evaluate(bug.untrigger(row)).violations == []
    rows = dataclasses.replace(row, inputs=(spec((2, 2, 7), "int32"), spec((2, 7, 3), "int32")))
    assert not bug.applies(rows) and FuzzSession().evaluate(rows).violations == []


def test_a_fused_integer_weight_is_padded_with_the_dtypes_largest_value() -> None:
    """A fused (qkv-style) integer weight: the other thirds cannot hold NaN; they hold the dtype's
    largest value, the case runs (eager too) and a correct kernel, which reads its third only, passes."""
    case = product("addmm", "int16", backends="ATEN", frozen_weights=True, weight_form="fused",
                   params={"alpha": 2.0})  # alpha != 1: freezing does not pack it (no mkl crash)
    verdict = FuzzSession().evaluate(case)
    assert not verdict.rejected and verdict.violations == [] and verdict.known == []


def _known_in_a_fresh_process(case_json: str) -> list[str]:
    """The known bugs a case's verdict names, evaluated as the first case of a fresh process."""
    return [bug.name for _, bug in FuzzSession().evaluate(Case.loads(case_json)).known]


@affected_by("freezing-mkl-pack-integer-weight-crash")
def test_the_first_case_of_a_process_does_not_decide_its_weight_packing() -> None:
    """Inductor registers freezing's weight packing at a process's first freezing compile, only if
    cpp.weight_prepack is on then; the harness registers it as the default config does, so a case
    with weight_prepack=False packs (and meets the packing bug) as first case and as hundredth."""
    case = product("mm", "int32", backends="ATEN", frozen_weights=True,
                   config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN", "cpp.weight_prepack": False})
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
        first = fresh.submit(_known_in_a_fresh_process, case.dumps()).result(timeout=300)
    assert first == ["freezing-mkl-pack-integer-weight-crash"] == _known_in_a_fresh_process(case.dumps())


def test_a_baddbmm_spelled_with_the_operator_is_a_bmm_of_the_vector_sum_region() -> None:
    """A 3-minute campaign's 'new' finding (seed 1): `x0 @ x1 + x2` of int8 with M == 1 is a bmm
    (tuned_bmm decomposes it), `torch.baddbmm` is not (its own lowering keeps the dtype)."""
    bug = REGIONS["cpu-bmm-vector-sum-promotes-integers"]
    spec3 = (spec((3, 1, 8), "int8"), spec((3, 8, 5), "int8"), spec((1, 1, 5), "int8"))
    fields = {"value_mode": "exact_int", "config": {"max_autotune": True, "max_autotune_gemm_backends": "ATEN"}}
    operator = Case.make(op="baddbmm", device="cpu", inputs=spec3, spelling="operator", **fields)
    assert bug.applies(operator) and not bug.applies(dataclasses.replace(operator, spelling="call"))


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
@affected_by("cpu-bmm-vector-sum-promotes-integers")
def test_a_batched_programs_second_product_of_one_column_is_the_vector_sum_entry() -> None:
    """A 5-minute CPU campaign's 'new' finding, shrunk: a baddbmm (whose own lowering keeps int32)
    followed by cat_mm_rows, whose `x0 @ x1` is a bmm with N == 1: int64 after the cat."""
    bug = REGIONS["cpu-bmm-vector-sum-promotes-integers"]
    case = Case.make(op="baddbmm", device="cpu", value_mode="exact_int", seed=3, consumers=("cat_mm_rows",),
                     params={"alpha": 1.0, "beta": 2.0},
                     inputs=(spec((2, 3, 4), "int32"), spec((2, 4, 1), "int32"), spec((), "int32")),
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    assert bug.applies(case) and not bug.applies(dataclasses.replace(case, consumers=()))
    verdict = FuzzSession().evaluate(case)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == [bug.name]


@affected_by("cpp-gemm-int8-product-compensation-crash")
def test_a_frozen_int8_linear_of_a_dynamic_batch_is_the_compensation_entry() -> None:
    """A 5-minute CPU campaign's 'new' finding (seed 2), shrunk: oneDNN packs an int8 weight (its
    packing takes int8, for a dynamic batch), and the CPP template's add_choices indexes the
    quantized linear's scale inputs (IndexError): the same template taking a plain int8 product."""
    bug = REGIONS["cpp-gemm-int8-product-compensation-crash"]
    case = Case.make(op="mm", device="cpu", value_mode="exact_int", seed=174, frozen_weights=True, dynamic=True,
                     inputs=(TensorSpec((15, 8), (0, 1), 0, "int8"), TensorSpec((8, 5), (11, 1), 0, "int8")),
                     config={"max_autotune": True, "max_autotune_gemm_backends": "CPP"})
    assert bug.applies(case)
    verdict = FuzzSession().evaluate(case)
    assert verdict.violations == [] and [b.name for _, b in verdict.known] == [bug.name]
