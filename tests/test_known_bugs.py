"""The known-bug registry: a registered bug still reproduces (reported, not failed), and it
explains only its own region of cases."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fuzz.known_bugs import KNOWN_BUGS
from fuzz.session import FuzzSession
from strategies.case import Case, TensorSpec

CPP_OFFSET = next(b for b in KNOWN_BUGS if b.name == "cpp-gemm-frozen-weight-storage-offset")


def offset_weight_case(backends: str) -> Case:
    return Case.make(op="bmm", device="cpu", value_mode="exact_int", seed=1, frozen_weights=True, every_choice=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": backends},
                     inputs=(TensorSpec((2, 16, 8), (128, 8, 1), 0, "float32"),
                             TensorSpec((2, 8, 32), (256, 32, 1), 5, "float32")))


affected = pytest.mark.skipif(not any(torch.__version__.startswith(v) for v in CPP_OFFSET.torch_versions),
                              reason="the registry says this torch is not affected")


@affected
def test_cpp_gemm_offset_weight_bug_still_reproduces_and_is_explained() -> None:
    verdict = FuzzSession().evaluate(offset_weight_case("CPP,ATEN"))
    assert verdict.violations == []  # every_choice: the CPP choice runs alone, whichever wins autotuning
    assert {bug.name for _, bug in verdict.known} == {CPP_OFFSET.name}


@affected
def test_registry_explains_nothing_outside_its_region() -> None:
    verdict = FuzzSession().evaluate(offset_weight_case("ATEN"))
    assert verdict.violations == [] and verdict.known == []
    unregistered = dataclasses.replace(CPP_OFFSET, torch_versions=("0.0",))
    from fuzz.known_bugs import split_known
    from oracles import check_all

    found = check_all(FuzzSession().evaluate(offset_weight_case("CPP,ATEN")).observation)
    new, known = split_known(found, offset_weight_case("CPP,ATEN"), "2.13.0", registry=(unregistered,))
    assert known == [] and {v.oracle for v in new} == {"numerics"}
