"""The planted-bug catalogue (fuzz.probe.plants): each plant names the findings it causes and no
others, undoes what it planted, is planted by a test of tests/planted (which proves that a real
case fails with it and passes without), and an unknown name is one clear line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fuzz.probe.plants import PLANT_ENV, PLANTS, PlantError, apply_from_env, plant_named

PLANTED_TESTS = Path(__file__).resolve().parents[1] / "planted"
CAUSES: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    # plant: (findings it causes, findings it does not)
    "gate-never-fixes": ([("layout_spec", "flexible-when-gated:bmm")], [("layout_spec", "fixed-when-allowed:mm")]),
    "gate-always-fixes": ([("layout_spec", "fixed-when-allowed:mm")], [("layout_spec", "flexible-when-gated:mm")]),
    "mm-wrong-for-m8": ([("numerics", "exact-mismatch:mm:float32"), ("numerics", "tolerance:mm:bfloat16@aten::mm")],
                        [("numerics", "reference-differs:tolerance:mm:float32"), ("numerics", "output-strides:mm"),
                         ("crash", "crash:IndexError:x.py:f")]),
    "mm-wrong-in-backward": ([("numerics", "tolerance:mm.grad:float32"), ("numerics", "nonfinite:bmm.grad:float16")],
                             [("numerics", "tolerance:mm:float32"),
                              ("numerics", "reference-differs:tolerance:mm.grad:float32")]),
    "mm-drops-a-k-term": ([("numerics", "tolerance:mm:bfloat16")], [("layout_spec", "fixed-when-allowed:mm")]),
    "mm-transposed-output": ([("numerics", "output-strides:mm"), ("numerics", "output-stride-order:mm"),
                              ("numerics", "tolerance:mm:bfloat16")], [("numerics", "output-aliasing:mm")]),
    "mm-extern-hashed": ([("src_hash", "extern-hash:aten::mm")], [("src_hash", "not-source-sha256:triton::mm")]),
    "addmm-beta-zero-bias": ([("numerics", "nonfinite:addmm:float32")],
                             [("numerics", "nonfinite:mm:float32"), ("numerics", "tolerance:addmm:float32"),
                              ("numerics", "reference-differs:nonfinite:addmm:float32")]),
    "selection-hook-silent": ([("observed", "unselected:mm")], [("observed", "no-lowering:mm")]),
    "input-update-dropped": ([("numerics", "exact-mismatch:mm:float32"), ("numerics", "tolerance:addmm:bfloat16")],
                             [("numerics", "reference-differs:exact-mismatch:mm:float32"),
                              ("crash", "crash:X:y.py:z")]),
    "view-passed-row-major": ([("numerics", "exact-mismatch:mm:float32"), ("numerics", "nonfinite:bmm:float16")],
                              [("numerics", "reference-differs:tolerance:bmm:float32"),
                               ("observed", "no-lowering:mm")]),
    "upcast-reads-float16": ([("numerics", "exact-mismatch:mm:float32"), ("numerics", "tolerance:addmm:float32")],
                             [("numerics", "reference-differs:exact-mismatch:mm:float32"),
                              ("layout_spec", "fixed-when-allowed:mm")]),
    "integer-product-through-float32": ([("numerics", "exact-mismatch:mm:int64"),
                                         ("numerics", "exact-mismatch:bmm:int32")],
                                        [("numerics", "reference-differs:exact-mismatch:mm:int64"),
                                         ("numerics", "output-meta:bmm")]),
    "bmm-lowering-raises": ([("crash", "crash:IndexError:choices.py:broken")],
                            [("crash", "crash:AssertionError:ir.py:unwrap_storage_for_input")]),
}


def test_every_plant_says_which_findings_it_causes() -> None:
    assert set(CAUSES) == set(PLANTS)
    for name, (caused, not_caused) in CAUSES.items():
        plant = PLANTS[name]
        assert plant.description and all(plant.caused(o, s) for o, s in caused), name
        assert not any(plant.caused(o, s) for o, s in not_caused), name


def test_every_plant_is_planted_by_a_planted_test() -> None:
    used = {m for p in PLANTED_TESTS.glob("test_*.py") for m in re.findall(r'plant\("([\w-]+)"\)', p.read_text())}
    assert set(PLANTS) <= used, f"plants no planted test uses: {sorted(set(PLANTS) - used)}"


def patched_attributes() -> dict[str, Any]:
    import torch
    from torch._inductor import ir, lowering, select_algorithm
    from torch._inductor.choices import InductorChoices
    from torch._inductor.kernel.mm import aten_mm

    kernels = vars(select_algorithm.extern_kernels)
    return {"hook": select_algorithm.add_preprocessing_fn, "gate": vars(InductorChoices).get("_need_to_fix_layout"),
            "configs": vars(InductorChoices).get("get_template_configs"), "hash": vars(aten_mm).get("src_hash"),
            "mutate_to": lowering.mutate_to, "view": vars(ir.ReinterpretView).get("codegen_reference"),
            "cast": lowering.lowerings[torch.ops.prims.convert_element_type.default],
            **{k: kernels.get(k) for k in ("mm", "addmm", "bias_addmm")}}


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_a_plant_changes_inductor_until_undone(name: str) -> None:
    before = patched_attributes()
    undo = PLANTS[name].apply()
    try:
        assert patched_attributes() != before
    finally:
        undo()
    assert patched_attributes() == before


def test_the_environment_names_the_plant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLANT_ENV, raising=False)
    assert apply_from_env() is None
    monkeypatch.setenv(PLANT_ENV, "no-such-bug")
    with pytest.raises(PlantError, match=r"^unknown plant 'no-such-bug' \(known: gate-never-fixes, "):
        apply_from_env()
    assert plant_named("mm-extern-hashed") is PLANTS["mm-extern-hashed"]
