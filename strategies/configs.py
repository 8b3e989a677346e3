"""Inductor config patches for max-autotune GEMM lowering, restricted to what the device runs.

Each knob here changes how an mm-family node is lowered, rewritten, padded, decomposed or
autotuned (README, "Inductor options"). A knob is drawn only where the installed torch has it
(`installed`: some exist in one of the two torch versions the suite runs on), and an optional knob
drawn is set to a value other than inductor's default (its absence is the default), so that a
config shrinks to inductor's defaults by dropping keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from strategies.choices import rarely

BACKENDS = {
    # TRITON on the CPU adds no choice but still takes part in the layout gate.
    # Inductor's default set first: a config shrinks to inductor's defaults.
    "cpu": ("ATEN,TRITON,CPP", "ATEN", "CPP", "ATEN,CPP", "ATEN,TRITON"),
    "cuda": ("ATEN,TRITON,CPP", "ATEN", "TRITON", "ATEN,TRITON"),
}
AUTOTUNE_MODES = ("neither",) + ("max_autotune", "max_autotune_gemm") * 5
"""1 in 11 configs is a plain compile ("neither": ATen only), where the layout gate takes its other
branch (mm and addmm historically flexible, other ops only with the flag); it comes first, so that
a config shrinks to inductor's defaults."""
OPTIONAL_KNOBS = {
    "epilogue_fusion": st.booleans(),
    "benchmark_epilogue_fusion": st.booleans(),
    "autotune_fallback_to_aten": st.booleans(),  # read by neither 2.11 nor 2.13 (deprecated)
    "coordinate_descent_tuning": st.booleans(),
    "pattern_matcher": st.just(False),  # no post-grad rewrites: no pad-mm, mkldnn linears, addmm unfusing
    "epilogue_fusion_first": st.just(True),
    "deterministic": st.just(True),  # no benchmarking: a heuristic picks the choice
}
"""Knobs of both devices."""
CPU_KNOBS = {
    "cpp.gemm_max_k_slices": st.sampled_from((0, 2)),  # default 1; 0: unlimited K slices
    "post_grad_fusion_options": st.just({"decompose_mm_pass": {}}),  # mm with M <= 1 into mul + sum
}
FROZEN_KNOBS = {
    "freezing_discard_parameters": st.just(True),  # the eager parameters dropped after freezing
    "cpp.weight_prepack": st.just(False),  # no CPP GEMM template (packing: fuzz.probe.inductor.init_freezing_patterns)
    "cpp.enable_concat_linear": st.just(True),
    "cpp.enable_grouped_gemm_template": st.just(True),
    "enable_linear_binary_folding": st.just(True),
}
"""CPU knobs that act on frozen weights only (drawn for frozen cases)."""
CUDA_KNOBS = {
    "max_autotune_gemm_search_space": st.sampled_from(("DEFAULT", "EXHAUSTIVE")),
    "triton.enable_persistent_tma_matmul": st.booleans(),
    "triton.num_decompose_k_splits": st.sampled_from((10, 0, 2)),  # inductor's default first
    "shape_padding": st.just(False),
    "force_shape_pad": st.just(True),  # pad whenever pad-mm can, without benchmarking
    "b2b_gemm_pass": st.just(True),  # (a @ b) @ c as one back-to-back kernel
    "permute_fusion": st.just(True),  # linear/matmul/bmm + permute (pre-grad, not on the CPU)
    "keep_addmm_fused_for_half_dtypes": st.just(False),  # 2.13: fp16/bf16 addmm unfused before pointwise uses
    "force_same_precision": st.just(True),  # 2.11: no TF32 Triton config where cuBLAS would not use TF32
    "max_autotune_prune_choices_based_on_shared_mem": st.just(True),
    "max_epilogue_benchmarked_choices": st.just(2),
    "prologue_fusion": st.just(False),
    "triton.autotune_cublasLt": st.just(False),  # no cuBLASLt bias addmm choice
    "triton.use_block_ptr": st.just(True),
    "triton.enable_template_tma_store": st.just(True),
    "triton.enable_tma_load_for_template_epilogue": st.just(True),  # 2.13
}


def installed(knobs: Mapping[str, st.SearchStrategy[Any]]) -> dict[str, st.SearchStrategy[Any]]:
    """The knobs the installed torch's inductor config has."""
    from fuzz.probe.inductor import inductor_config_keys  # the probe reads the installed config

    return {key: value for key, value in knobs.items() if key in inductor_config_keys()}


def device_knobs(device: str, frozen: bool) -> dict[str, st.SearchStrategy[Any]]:
    """The optional knobs a case on `device` (with frozen weights or not) may draw."""
    if device == "cuda":
        return installed({**OPTIONAL_KNOBS, **CUDA_KNOBS})
    return installed({**OPTIONAL_KNOBS, **CPU_KNOBS, **(FROZEN_KNOBS if frozen else {})})


@st.composite
def autotune_configs(draw: st.DrawFn, device: str, frozen: bool = False) -> dict[str, Any]:
    """max_autotune or max_autotune_gemm (rarely neither), a GEMM backend set valid on `device`,
    the flexible-layout flag on or off, and up to three of the device's optional knobs (those for
    frozen weights only when `frozen`); on CUDA `max_mm_configs` caps compile time, on CPU rarely
    the C++ wrapper."""
    mode = draw(st.sampled_from(AUTOTUNE_MODES))
    config: dict[str, Any] = {
        **({"max_autotune": False, "max_autotune_gemm": False} if mode == "neither" else {mode: True}),
        "max_autotune_gemm_backends": draw(st.sampled_from(BACKENDS[device])),
        "max_autotune_allow_flexible_layouts": draw(st.booleans()),
    }
    knobs = device_knobs(device, frozen)
    for key in draw(st.lists(st.sampled_from(sorted(knobs)), max_size=3, unique=True)):
        config[key] = draw(knobs[key])
    if device == "cuda":
        config["test_configs.max_mm_configs"] = draw(st.sampled_from((1, 2, 4)))
    elif draw(rarely(25)):
        config["cpp_wrapper"] = True
    return config
