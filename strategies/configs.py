"""Inductor config patches for max-autotune GEMM lowering, restricted to what the device runs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

BACKENDS = {
    # TRITON on the CPU adds no choice but still takes part in the layout gate.
    "cpu": ("ATEN", "CPP", "ATEN,CPP", "ATEN,TRITON", "ATEN,TRITON,CPP"),
    "cuda": ("ATEN", "TRITON", "ATEN,TRITON", "ATEN,TRITON,CPP"),
}


@st.composite
def autotune_configs(draw: st.DrawFn, device: str) -> dict[str, Any]:
    """max_autotune or max_autotune_gemm, a GEMM backend set valid on `device`, the flexible-layout
    flag on or off; on CUDA the Triton search is capped (`max_mm_configs`) to bound compile time."""
    config: dict[str, Any] = {
        draw(st.sampled_from(("max_autotune", "max_autotune_gemm"))): True,
        "max_autotune_gemm_backends": draw(st.sampled_from(BACKENDS[device])),
        "max_autotune_allow_flexible_layouts": draw(st.booleans()),
    }
    if device == "cuda":
        config["test_configs.max_mm_configs"] = draw(st.sampled_from((1, 2, 4)))
    return config
