"""Cases and violations several test modules share (each a plain builder: call it for a fresh value)."""

from __future__ import annotations

import pytest
import torch

from fuzz.bugs.known_bugs import KNOWN_BUGS
from strategies.case import Case, TensorSpec, contiguous_strides

CRASH = {"oracle": "crash", "severity": "crash", "signature": "crash:IndexError:kernel/mm.py:tuned_addmm",
         "message": "addmm: eager ran, compiled raised IndexError: list index out of range"}


def scalar_bias_case(frozen: bool = False) -> Case:
    return Case.make(op="addmm", device="cpu", frozen_weights=frozen,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP", "epilogue_fusion": False},
                     inputs=(TensorSpec((4, 8), (8, 1), 0, "float32"), TensorSpec((8, 17), (17, 1), 0, "float32"),
                             TensorSpec((), (), 0, "float32")))


CPP_OFFSET = next(b for b in KNOWN_BUGS if b.name == "cpp-gemm-frozen-weight-storage-offset")


def offset_weight_case(backends: str, bias_offset: int = 0, weight_offset: int = 5) -> Case:
    return Case.make(op="addmm", device="cpu", value_mode="exact_int", seed=1, frozen_weights=True, every_choice=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": backends},
                     inputs=(TensorSpec((16, 8), (8, 1), 0, "float32"),
                             TensorSpec((8, 32), (32, 1), weight_offset, "float32"),
                             TensorSpec((32,), (1,), bias_offset, "float32")))


def affected_by(name: str) -> pytest.MarkDecorator:
    """Skip where the registry says the named bug is not in this torch."""
    bug = next(b for b in KNOWN_BUGS if b.name == name)
    return pytest.mark.skipif(not torch.__version__.startswith(bug.torch_versions),
                              reason=f"the registry says this torch is not affected by {name}")


affected = affected_by(CPP_OFFSET.name)


def frozen_cpp_mm() -> Case:
    spec = TensorSpec((16, 32), (32, 1), 0, "float32"), TensorSpec((32, 8), (8, 1), 0, "float32")
    return Case.make(op="mm", inputs=spec, device="cpu", seed=3, value_mode="exact_int", frozen_weights=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP"})


def small_case() -> Case:
    shapes = [(4, 8), (8, 4)]
    return Case.make(op="mm", device="cpu", value_mode="exact_int", seed=3,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
                     inputs=tuple(TensorSpec(s, contiguous_strides(s), 0, "float32") for s in shapes))
