"""The known-bug registry: a registered bug still reproduces (reported, not failed), and it
explains only its own region of cases."""

from __future__ import annotations

import dataclasses
import warnings

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


def test_a_crash_is_explained_only_by_the_bug_with_its_signature() -> None:
    """A dynamic CPP addmm with a 0-dim bias lies in two bugs' regions; its IndexError is the
    scalar-bias bug's, and a crash neither bug produces stays unexplained."""
    from fuzz.known_bugs import split_known
    from oracles.model import Violation

    matrix = TensorSpec((3, 4), (4, 1), 0, "float32")
    case = Case.make(op="addmm", device="cpu", dynamic=True, config={"max_autotune_gemm_backends": "ATEN,CPP"},
                     inputs=(matrix, TensorSpec((4, 5), (5, 1), 0, "float32"), TensorSpec((), (), 0, "float32")))
    index_error = Violation("crash", "crash", "crash:IndexError:kernel/mm.py:tuned_addmm", "m")
    no_triton = Violation("crash", "crash", "crash:ModuleNotFoundError:select_algorithm.py:benchmark_choices", "m")
    other = Violation("crash", "crash", "crash:RuntimeError:kernel/mm.py:tuned_addmm", "m")
    new, known = split_known([index_error, no_triton, other], case, "2.13.0")
    assert [(v.signature, bug.name) for v, bug in known] == [
        (index_error.signature, "addmm-scalar-bias-indexerror"), (no_triton.signature, "cpp-gemm-dynamic-recompile-crash")]
    assert new == [other]


def test_int_mm_region_matches_aten_on_the_strides_it_was_fitted_on() -> None:
    """The ATen CPU _int_mm region (row-major with a short row stride, or column-major with a short
    column stride) against eager on a stride grid: it misses no wrong result."""
    from fuzz.known_bugs import _short_leading_dimension

    gen = torch.Generator().manual_seed(0)
    missed = []
    for rows, cols in [(13, 1), (8, 8), (1, 13), (3, 13)]:
        for s_row in (0, 1, 2, 13):
            for s_col in (0, 1, 2, 13):
                x = torch.as_strided(torch.randint(-3, 4, (400,), generator=gen, dtype=torch.int8), (rows, cols),
                                     (s_row, s_col))
                a = torch.randint(-3, 4, (17, rows), generator=gen, dtype=torch.int8)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "int_mm_out_cpu failed, switching to BLAS gemm"
                    wrong = not torch.equal(torch._int_mm(a, x), a.int() @ x.int())
                if wrong and not _short_leading_dimension(TensorSpec((rows, cols), (s_row, s_col), 0, "int8")):
                    missed.append(((rows, cols), (s_row, s_col)))
    assert missed == []


def test_a_bug_seen_through_a_single_choice_compile_is_explained_in_both_oracles() -> None:
    from fuzz.known_bugs import split_known
    from oracles.model import Violation

    case = Case.make(op="mm", device="cpu", frozen_weights=True, every_choice=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP"},
                     inputs=(TensorSpec((3, 4), (4, 1), 0, "float32"), TensorSpec((4, 0), (1, 1), 0, "float32")))
    whole = Violation("crash", "crash", "crash:CalledProcessError:cpp_builder.py:_run_compile_cmd", "m")
    alone = Violation("numerics", "crash", "choice-crash:mm@CppTemplateCaller:CalledProcessError", "m")
    other = Violation("numerics", "crash", "choice-crash:mm@ExternKernelCaller:RuntimeError", "m")
    new, known = split_known([whole, alone, other], case, "2.13.0")
    assert {bug.name for _, bug in known} == {"cpp-gemm-frozen-n0-compile-error"} and len(known) == 2
    assert new == [other]


def test_every_known_bug_names_a_repro_that_exists() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for bug in KNOWN_BUGS:
        script = bug.tracking.split()[0]
        assert script.startswith("repros/") and (root / script).is_file(), bug.name


@pytest.mark.skipif(not torch.__version__.startswith("2.13"), reason="the registry lists this bug for 2.13")
def test_property_tests_never_run_a_case_that_would_kill_their_process() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable

    from tests.checking import assert_case_passes

    case = Case.make(op="mm", device="cpu", frozen_weights=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
                     inputs=(TensorSpec((129, 4), (4, 1), 0, "float32"), TensorSpec((4, 0), (1, 1), 0, "float32")))

    class NeverRun:
        def evaluate(self, case: Case) -> None:
            raise AssertionError("the SIGFPE case ran in-process")

    @settings(max_examples=3, database=None)
    @given(st.just(case))
    def check(c: Case) -> None:
        assert_case_passes(c, NeverRun(), None)  # type: ignore[arg-type]

    with pytest.warns(UserWarning, match="freezing-mkl-linear-n0-sigfpe would kill"), pytest.raises(Unsatisfiable):
        check()
