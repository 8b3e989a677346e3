"""Each oracle FAILS on a planted bug (a monkeypatched inductor that misbehaves) and passes on
the real inductor: the same case is run both ways, on the CPU."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from torch._inductor.choices import InductorChoices

from fuzz.probe.catalogue_cache import template_catalogue
from fuzz.probe.plants import Plant
from fuzz.run.harness import HashLedger, run_case
from fuzz.run.session import FuzzSession
from oracles import check_all
from oracles.src_hash import check_catalogues
from strategies.case import Case, TensorSpec, contiguous_strides

Planter = Callable[[str], Plant]  # the `plant` fixture (tests/planted/conftest.py)


def spec(shape: tuple[int, ...], dtype: str = "float32") -> TensorSpec:
    return TensorSpec(shape, contiguous_strides(shape), 0, dtype)


def make_case(op: str = "mm", backends: str = "ATEN", flexible: bool = True, frozen: bool = False,
              value_mode: str = "exact_int", **config: object) -> Case:
    shapes = {"mm": [(24, 40), (40, 8)], "addmm": [(24, 40), (40, 8), (8,)], "bmm": [(3, 24, 40), (3, 40, 8)]}[op]
    return Case.make(op=op, inputs=tuple(spec(s) for s in shapes), device="cpu", value_mode=value_mode, seed=7,
                     frozen_weights=frozen, config={"max_autotune": True, "max_autotune_gemm_backends": backends,
                                                    "max_autotune_allow_flexible_layouts": flexible, **config})


def signatures(case: Case) -> set[str]:
    return {v.signature for v in check_all(run_case(case, ledger=HashLedger()))}


# --- layout soundness and spec -------------------------------------------------------------

@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_gate_that_ignores_cpp_backend_is_unsound(plant: Planter) -> None:
    case = make_case("bmm", backends="ATEN,CPP", frozen=True)  # frozen weight: CPP template choices
    assert signatures(case) == set()
    plant("gate-never-fixes")
    found = signatures(case)
    assert any(s.startswith("flexible-with-template:bmm:") for s in found), found
    assert "flexible-when-gated:bmm" in found


def test_gate_that_ignores_the_flag_is_caught(plant: Planter) -> None:
    case = make_case("bmm", backends="ATEN", flexible=False)
    assert signatures(case) == set()
    assert plant("gate-never-fixes").caused("layout_spec", "flexible-when-gated:bmm")
    assert "flexible-when-gated:bmm" in signatures(case)


def test_gate_that_always_fixes_is_a_missed_optimization(plant: Planter) -> None:
    case = make_case("mm", backends="ATEN", flexible=True)
    assert signatures(case) == set()
    assert plant("gate-always-fixes").caused("layout_spec", "fixed-when-allowed:mm")
    assert signatures(case) == {"fixed-when-allowed:mm"}


# --- numerics --------------------------------------------------------------------------------

@pytest.mark.parametrize("value_mode", ["exact_int", "normal"])
def test_extern_mm_wrong_for_some_shapes_is_caught(plant: Planter, value_mode: str) -> None:
    case = make_case("mm", value_mode=value_mode)  # M = 24: a multiple of 8
    assert signatures(case) == set()
    expected = "exact-mismatch:mm:float32" if value_mode == "exact_int" else "tolerance:mm:float32"
    assert plant("mm-wrong-for-m8").caused("numerics", expected)
    assert signatures(case) == {expected}


def test_wrong_output_strides_are_caught(plant: Planter) -> None:
    case = make_case("mm", value_mode="normal")
    assert signatures(case) == set()
    assert plant("mm-transposed-output").caused("numerics", "output-strides:mm")
    assert "output-strides:mm" in signatures(case)


# --- src_hash ---------------------------------------------------------------------------------

def test_extern_choice_with_a_hash_is_caught(plant: Planter) -> None:
    case = make_case("mm")
    assert signatures(case) == set()
    assert plant("mm-extern-hashed").caused("src_hash", "extern-hash:aten::mm")
    assert signatures(case) == {"extern-hash:aten::mm"}


def test_hash_that_changes_between_compiles_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor.kernel.bmm import aten_bmm

    counter = itertools.count()
    # with a setter that ignores: ExternKernelChoice.__init__ assigns src_hash = None (torch 2.11), and
    # a later import (b2b_gemm, during dynamo's reset) constructs one
    monkeypatch.setattr(type(aten_bmm), "src_hash",
                        property(lambda self: None if self.name != "bmm" else f"{next(counter)}",
                                 lambda self, value: None), raising=False)
    session = FuzzSession()
    first = session.evaluate(make_case("bmm"))
    second = session.evaluate(make_case("bmm"))
    assert "changed-between-compiles:aten::bmm" in {v.signature for v in second.violations}
    assert "extern-hash:aten::bmm" in {v.signature for v in first.violations}


PER_PROCESS_HASH = """
import os
from torch._inductor.select_algorithm import TritonTemplate
TritonTemplate.src_hash = property(lambda self: f"{os.getpid()}-{self.name}")
"""
NAME_HASH = """
import hashlib
from torch._inductor.select_algorithm import TritonTemplate
TritonTemplate.src_hash = property(lambda self: hashlib.sha256(self.name.encode()).hexdigest())
"""


def test_real_templates_hash_their_source_in_every_process() -> None:
    first, second = template_catalogue(), template_catalogue()
    assert {"triton::mm", "triton::bmm", "triton::mm_plus_mm"} <= set(first)
    assert check_catalogues(first, second) == []


def test_hash_that_differs_per_process_is_caught() -> None:
    found = check_catalogues(template_catalogue(PER_PROCESS_HASH), template_catalogue(PER_PROCESS_HASH))
    assert "differs-across-processes:triton::mm" in {v.signature for v in found}


def test_hash_not_of_the_source_is_caught() -> None:
    found = check_catalogues(template_catalogue(NAME_HASH), template_catalogue(NAME_HASH))
    assert "not-source-sha256:triton::mm" in {v.signature for v in found}


# --- observed (silence) and crash --------------------------------------------------------------

def test_cache_that_skips_lowering_is_reported_as_vacuous() -> None:
    case = make_case("mm", fx_graph_cache=True)  # the case re-enables the FX graph cache
    run_case(case)  # warms the cache
    assert "no-lowering:mm" in signatures(case)
    assert signatures(make_case("mm")) == set()


def test_choices_handler_bypass_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lowering that gathers choices through a method the observer does not wrap (as if the hook
    moved: a handler class of its own with the gathering code copied in) is not silent."""
    import torch._inductor.kernel.bmm as bmm_lowering
    from torch._inductor.virtualized import V

    case = make_case("bmm")
    assert signatures(case) == set()

    class Moved(InductorChoices):
        get_template_configs = InductorChoices.get_template_configs  # the unwrapped method, its own

    class Bypass:
        def __getattr__(self, name: str) -> object:
            return Moved() if name == "choices" else getattr(V, name)

    monkeypatch.setattr(bmm_lowering, "V", Bypass())
    assert signatures(case) == {"choices-bypassed:bmm"}


def test_selection_hook_that_records_nothing_is_reported(plant: Planter) -> None:
    case = make_case("mm")
    assert signatures(case) == set()
    assert plant("selection-hook-silent").caused("observed", "unselected:mm")
    assert signatures(case) == {"unselected:mm"}


def test_lowering_that_raises_is_a_crash(plant: Planter) -> None:
    case = make_case("bmm")
    assert signatures(case) == set()
    caught = plant("bmm-lowering-raises").caused
    assert [s for s in signatures(case) if caught("crash", s)], "a crash:IndexError:... finding"
