"""Inductor config patches for max-autotune GEMM lowering, restricted to what the device runs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from strategies.choices import rarely

BACKENDS = {
    # TRITON on the CPU adds no choice but still takes part in the layout gate.
    # Inductor's default set first: a config shrinks to inductor's defaults.
    "cpu": ("ATEN,TRITON,CPP", "ATEN", "CPP", "ATEN,CPP", "ATEN,TRITON"),
    "cuda": ("ATEN,TRITON,CPP", "ATEN", "TRITON", "ATEN,TRITON"),
}
OPTIONAL_KNOBS = {
    "epilogue_fusion": st.booleans(),
    "benchmark_epilogue_fusion": st.booleans(),
    "autotune_fallback_to_aten": st.booleans(),
    "coordinate_descent_tuning": st.booleans(),
}
AUTOTUNE_MODES = ("neither",) + ("max_autotune", "max_autotune_gemm") * 5
"""1 in 11 configs is a plain compile ("neither": ATen only), where the layout gate takes its other
branch (mm and addmm historically flexible, other ops only with the flag); it comes first, so that
a config shrinks to inductor's defaults."""
CUDA_KNOBS = {
    "max_autotune_gemm_search_space": st.sampled_from(("DEFAULT", "EXHAUSTIVE")),
    "triton.enable_persistent_tma_matmul": st.booleans(),
    "triton.num_decompose_k_splits": st.sampled_from((10, 0, 2)),  # inductor's default first
}


@st.composite
def autotune_configs(draw: st.DrawFn, device: str) -> dict[str, Any]:
    """max_autotune or max_autotune_gemm (rarely neither), a GEMM backend set valid on `device`,
    the flexible-layout flag on or off, and some of the knobs that change the candidate set or the code around it
    (epilogue fusion, fallback to ATen, coordinate descent; on CUDA the search space, persistent
    TMA matmul and decompose-k splits, with `max_mm_configs` capping compile time; on CPU rarely
    the C++ wrapper)."""
    mode = draw(st.sampled_from(AUTOTUNE_MODES))
    config: dict[str, Any] = {
        **({"max_autotune": False, "max_autotune_gemm": False} if mode == "neither" else {mode: True}),
        "max_autotune_gemm_backends": draw(st.sampled_from(BACKENDS[device])),
        "max_autotune_allow_flexible_layouts": draw(st.booleans()),
    }
    knobs = {**OPTIONAL_KNOBS, **(CUDA_KNOBS if device == "cuda" else {})}
    for key in draw(st.lists(st.sampled_from(sorted(knobs)), max_size=3, unique=True)):
        config[key] = draw(knobs[key])
    if device == "cuda":
        config["test_configs.max_mm_configs"] = draw(st.sampled_from((1, 2, 4)))
    elif draw(rarely(25)):
        config["cpp_wrapper"] = True
    return config
