"""The Case model: exact JSON round-trip and one-line errors for bad input."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings

from fuzz.run.values import materialize
from strategies.case import Case, CaseError, TensorSpec
from strategies.cases import cases


@settings(max_examples=300)
@given(case=cases(device="cpu") | cases(device="cuda"))
def test_case_round_trips_through_json_exactly(case: Case) -> None:
    assert Case.loads(case.dumps()) == case
    assert Case.loads(case.dumps()).dumps() == case.dumps()


@given(case=cases(device="cpu"))
def test_storage_size_is_one_past_the_last_element_a_view_reaches(case: Case) -> None:
    """storage_size() against the largest index the view touches, enumerated element by element."""
    import itertools

    for t in case.inputs + case.second_call:
        if 0 in t.shape:
            assert t.storage_size() == t.offset
            continue
        reached = max(t.offset + sum(i * s for i, s in zip(index, t.stride, strict=True))
                      for index in itertools.product(*(range(d) for d in t.shape)))
        assert t.storage_size() == reached + 1


def _valid() -> dict:
    return {
        "op": "mm", "device": "cpu", "config": {"max_autotune": True}, "value_mode": "normal", "seed": 1,
        "params": {}, "frozen_weights": False, "tf32": False, "dynamic": False,
        "inputs": [{"shape": [2, 3], "stride": [3, 1], "offset": 0, "dtype": "float32"},
                   {"shape": [3, 4], "stride": [4, 1], "offset": 0, "dtype": "float32"}]}


def _buffer(shape: tuple[int, int], stride: tuple[int, int]) -> dict:
    return {"shape": list(shape), "stride": list(stride), "offset": 0, "dtype": "float32"}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(op="conv"), "unknown op 'conv'"),
    (lambda d: d["inputs"][0].update(dtype="complex64"), "unsupported dtype 'complex64'"),
    (lambda d: d["config"].update(not_a_knob=1), "unknown inductor config key 'not_a_knob'"),
    (lambda d: d.update(device="tpu"), "unknown device 'tpu'"),
    (lambda d: d.update(extra=1), "unknown field 'extra'"),
    (lambda d: d.pop("op"), "missing field 'op'"),
    (lambda d: d.update(consumers=["sort"]), "unknown consumer 'sort'"),
    (lambda d: d.update(mark_dynamic=[[5, 0]]), "mark_dynamic names input 5"),
    (lambda d: d["inputs"].pop(), "mm takes 2 inputs, got 1"),
    (lambda d: d.update(params={"alpha": 2}), "unknown parameter 'alpha' for mm"),
    (lambda d: d["inputs"][0].update(stride=[1]), "differ in rank"),
    (lambda d: d.update(shared_storage=[0, 2]), "shared_storage [0, 2] must name distinct inputs"),
    (lambda d: (d.update(shared_storage=[0, 1]), d["inputs"][1].update(dtype="float16")),
     "inputs in shared_storage must have one dtype"),
    (lambda d: d.update(spelling="baddbmm"), "mm has no spelling 'baddbmm'"),
    (lambda d: d.update(backward=True, frozen_weights=True), "with frozen weights"),
    (lambda d: d.update(backward=True, value_mode="nonfinite"), "not nonfinite"),
    (lambda d: d.update(backward=True, consumers=["gelu"]), "not 'gelu'"),
    (lambda d: (d.update(backward=True), [t.update(dtype="float8_e4m3fn") for t in d["inputs"]]),
     "float32, float16 or"),
    (lambda d: d.update(backward=True, op="int_mm", inputs=[{**t, "dtype": "int8"} for t in d["inputs"]]),
     "not int_mm"),
    (lambda d: d.update(spelling="out"), "mm takes 3 inputs (the out= buffer last), got 2"),
    (lambda d: (d.update(spelling="out"), d["inputs"].append(_buffer((4, 2), (2, 1)))),
     "has the result's shape (2, 4)"),
    (lambda d: (d.update(spelling="out"), d["inputs"].append(_buffer((2, 4), (1, 2)))),
     "the out= buffer is contiguous"),
    (lambda d: (d.update(spelling="out", frozen_weights=True), d["inputs"].append(_buffer((2, 4), (4, 1)))),
     "no frozen weights"),
    (lambda d: (d.update(spelling="out", shared_storage=[0, 2]), d["inputs"].append(_buffer((2, 4), (4, 1)))),
     "a storage of its own"),
    (lambda d: (d.update(spelling="out", consumers=["add", "relu_"]), d["inputs"].append(_buffer((2, 4), (4, 1)))),
     "relu_ may only be the first step"),
    (lambda d: d.update(prologue=["neg", "upcast_bfloat16"]), "an upcast is the prologue's first step"),
    (lambda d: d.update(prologue=["upcast_float16", "upcast_bfloat16"]), "and its only one"),
    (lambda d: (d.update(prologue=["upcast_float16"]), [t.update(dtype="float16") for t in d["inputs"]]),
     "feeds a float32 op"),
    (lambda d: d.update(prologue=["upcast_float16"], shared_storage=[0, 1]), "its own storage"),
])
def test_bad_case_is_one_clear_line(mutate, message) -> None:
    data = _valid()
    assert Case.from_json(data).op == "mm"
    mutate(data)
    with pytest.raises(CaseError) as err:
        Case.from_json(data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_corrupt_json_is_one_clear_line() -> None:
    with pytest.raises(CaseError, match="not valid JSON"):
        Case.loads('{"op": "mm", "inputs": [')


def test_optional_fields_default_so_older_findings_load() -> None:
    data = _valid()
    for key in ("seed", "consumers", "every_choice", "second_call"):
        data.pop(key, None)
    case = Case.from_json(data)
    assert case.seed == 0 and case.consumers == () and not case.every_choice


def test_case_vocabulary_matches_the_programs() -> None:
    from fuzz.run import programs, steps
    from strategies import vocabulary as model

    assert set(model.OPS) == set(programs.OPS) and set(model.CONSUMERS) == set(steps.CONSUMERS)
    assert {(op, s) for op, spellings in model.SPELLINGS.items() for s in spellings if s != "call"} \
        == set(programs.SPELLED)


def test_a_spelled_bias_add_takes_no_scalars() -> None:
    bias = TensorSpec((4,), (1,), 0, "float32")
    data = {**_valid(), "op": "addmm", "spelling": "linear", "params": {"alpha": 1.0, "beta": 0.5}}
    data["inputs"] = [*data["inputs"], bias.to_json()]
    with pytest.raises(CaseError, match="alpha and beta must be 1"):
        Case.from_json(data)
    assert Case.from_json({**data, "params": {"alpha": 1.0, "beta": 1.0}}).spelling == "linear"


def test_shared_storage_inputs_alias_one_storage_that_fits_them_all() -> None:
    from fuzz.run.values import materialize

    data = _valid() | {"shared_storage": [1, 0]}
    data["inputs"][0].update(offset=20)  # x0 reaches past x1's own storage
    a, b = materialize(Case.from_json(data))
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert a.untyped_storage().nbytes() == 4 * 26  # the larger of the two views' storages
    assert torch.equal(b.flatten()[:4], a.as_strided((4,), (1,), 0))  # the same numbers seen through both
    apart = materialize(Case.from_json(_valid()))
    assert apart[0].untyped_storage().data_ptr() != apart[1].untyped_storage().data_ptr()


def test_property_tests_are_hypothesis_tests() -> None:
    """pytest's Hypothesis plugin (statistics, per-parameter database keys) and tools such as
    HypoFuzz only see tests that carry @given themselves."""
    from hypothesis import is_hypothesis_test

    from tests.properties import test_properties

    assert is_hypothesis_test(test_properties.test_op_passes_all_oracles)


def test_nan_and_inf_only_reach_inputs_where_they_are_defined() -> None:
    """No NaN/inf inside a view of an operand that alpha == 0 multiplies, also when it aliases the
    storage of an input that may hold them (a CPU campaign's false positive: baddbmm's batch1 and
    batch2 sharing the bias's storage)."""
    from fuzz.run.values import _may_be_nonfinite, materialize

    case = Case.make(op="baddbmm", device="cpu", value_mode="nonfinite", seed=2936, params={"alpha": 0.0, "beta": 1.0},
                     shared_storage=(1, 0, 2), config={},
                     inputs=(TensorSpec((8, 52, 127), (6604, 127, 1), 3, "float32"),
                             TensorSpec((8, 127, 24), (12192, 96, 2), 0, "float32"),
                             TensorSpec((1, 24), (24, 1), 17, "float32")))
    x0, x1, _ = materialize(case)  # the bias (which beta == 1 reads) lies inside x0's elements
    assert not _may_be_nonfinite(case, 0) and x0.isfinite().all() and x1.isfinite().all()
    alone = Case.make(**{**{f: getattr(case, f) for f in ("op", "device", "value_mode", "seed", "inputs")},
                         "params": case.params_dict, "config": {}})
    assert not materialize(alone)[2].isfinite().all()  # unshared, the bias holds NaN/inf


def test_an_upcast_holds_x0_in_its_narrower_dtype_in_both_calls() -> None:
    x, w = TensorSpec((2, 3), (3, 1), 0, "float32"), TensorSpec((3, 4), (4, 1), 0, "float32")
    case = Case.make(op="mm", inputs=(x, w), second_call=(x, w), device="cpu", config={},
                     prologue=("upcast_float16", "neg"))
    assert [t.dtype for t in case.held(case.inputs)] == [t.dtype for t in case.held(case.second_call)] == \
        ["float16", "float32"]
    assert [t.dtype for t in materialize(case)] == [torch.float16, torch.float32]
    assert dataclasses.replace(case, prologue=("neg",)).held(case.inputs) == case.inputs
