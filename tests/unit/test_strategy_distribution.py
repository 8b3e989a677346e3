"""The strategies reach every region they claim to: each op, dtype, value mode, consumer step,
stride kind, dynamic mode (per size family), aliasing and config knob shows up in a few hundred
draws (no compiling); and so does each known bug's trigger region, which the bug's own trigger
removal leaves (the re-run that confirms a known bug then tests that bug, not a neighbour)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.bugs.known_bugs import KNOWN_BUGS
from strategies.case import Case
from strategies.cases import DEVICE_OPS, case_features, cases, ops_for
from strategies.configs import BACKENDS, device_knobs
from strategies.dynamic import SIZE_FAMILIES
from strategies.vocabulary import (
    CONSUMERS,
    FLOAT_PRODUCT_OPS,
    INTEGER_DTYPES,
    INTEGER_VALUE_MODES,
    PROLOGUE_STEPS,
    SPELLINGS,
    WEIGHT_FORMS,
)


def drawn(device: str, n: int) -> set[str]:
    """The features of `n` cases of each op the device runs (each op apart: a rare region of one op,
    e.g. an int8 weight form of a frozen mm, is not left to how one long draw happens to spread)."""
    seen: set[str] = set()
    for op in ops_for(device):
        _collect(seen, op, device, n)
    return seen


def _collect(seen: set[str], op: str, device: str, n: int) -> None:
    @settings(max_examples=n, database=None, deadline=None, derandomize=True,  # a fixed draw: no flaky miss
              suppress_health_check=list(HealthCheck))
    @given(case=cases(op=op, device=device))
    def collect(case: Case) -> None:
        seen.update(case_features(case))
        for bug in KNOWN_BUGS:
            if bug.applies(case):
                seen.add(f"known-region:{bug.name}")
                variant = bug.untrigger(case)
                assert Case.loads(variant.dumps()) == variant
                assert not bug.applies(variant), (bug.name, case.dumps())

    collect()


EXPECTED: dict[str, Callable[[], set[str]]] = {
    "cpu": lambda: ({f"op:{op}" for op in DEVICE_OPS["cpu"]} | {f"consumer:{c}" for c in CONSUMERS}
                    | {f"backends:{b}" for b in BACKENDS["cpu"]}
                    | {f"knob:{k}" for k in device_knobs("cpu", frozen=True)}
                    | {"knob:cpp_wrapper", "frozen", "zero-size", "dynamic", "every_choice:True", "dtype:int8",
                       "dtype:float16", "dtype:bfloat16", "frozen-dynamic", "frozen-shared", "dynamic-op:int_mm"}
                    | {f"frozen-op:{op}" for op in ("mm", "addmm", "matmul", "mm_plus_mm")}
                    | {f"weight_form:{f}" for f in WEIGHT_FORMS[1:]}
                    | {f"dtype:{d}" for d in INTEGER_DTYPES} | {f"integer-op:{op}" for op in FLOAT_PRODUCT_OPS}
                    | {f"integer-value:{mode}" for mode in INTEGER_VALUE_MODES} | {"integer-frozen"}
                    | {f"known-region:{name}"
                       for name in ("cpp-gemm-frozen-weight-storage-offset", "cpp-bmm-empty-dim-crash",
                                    "addmm-scalar-bias-indexerror", "aten-int-mm-expanded-operand",
                                    "cpp-gemm-dynamic-recompile-crash", "freezing-mkl-pack-integer-weight-crash",
                                    "cpp-gemm-int8-product-compensation-crash",
                                    "cpu-bmm-vector-sum-promotes-integers")}),
    "cuda": lambda: ({f"op:{op}" for op in DEVICE_OPS["cuda"]} | {f"backends:{b}" for b in BACKENDS["cuda"]}
                     | {f"knob:{k}" for k in device_knobs("cuda", frozen=False)}
                     | {"tf32", "dtype:float8_e4m3fn", "dtype:float8_e5m2"}),
}
COMMON = {*(f"{mode}:{family}" for mode in ("mark_dynamic", "second_call") for family in SIZE_FAMILIES),
          "shared_storage", "warm_cache", "no_max_autotune", "value:exact_int", "value:normal", "value:large",
          "value:sparse", "value:nonfinite",
          "stride:expanded", "stride:nondense", "stride:transposed", "stride:batch_inner", "stride:offset",
          "knob:test_configs.max_mm_configs", "backward"} \
    | {f"backward-op:{op}" for op in FLOAT_PRODUCT_OPS} | {f"prologue:{step}" for step in PROLOGUE_STEPS} \
    | {f"spelling:{op}:{spelling}" for op, spellings in SPELLINGS.items() if op in DEVICE_OPS["cpu"]
       for spelling in spellings}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_region_is_drawn(device: str) -> None:
    want = EXPECTED[device]() | (COMMON - ({"knob:test_configs.max_mm_configs"} if device == "cpu" else set()))
    missing = want - drawn(device, 300)
    assert not missing, f"never drawn on {device}: {sorted(missing)}"
