"""The GEMM backend set (`max_autotune_gemm_backends`): one parser for strategies, oracles, the
probe and the engine alike."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

KEY = "max_autotune_gemm_backends"
DEFAULT_BACKENDS = "ATEN,TRITON,CPP"  # inductor's max_autotune_gemm_backends default on both versions
MAX_AUTOTUNE_KEYS = ("max_autotune", "max_autotune_gemm")
"""Either turns on max-autotune's GEMM choices (the templates of the backend set)."""
TEMPLATE_BACKENDS = {"cpu": "CPP", "cuda": "TRITON"}
"""The backend whose generated templates a device's cases autotune against ATen."""


def parse_backends(value: object) -> tuple[str, ...]:
    """The backends a set names, upper-cased, in order, without blanks or repeats ("aten, cpp" ->
    ("ATEN", "CPP"))."""
    names = (b.strip().upper() for b in str(value).split(","))
    return tuple(dict.fromkeys(b for b in names if b))


def config_backends(config: Mapping[str, object]) -> tuple[str, ...]:
    """The backend set a config patch compiles under (inductor's default where it sets none)."""
    return parse_backends(config.get(KEY, DEFAULT_BACKENDS))


def join_backends(names: Iterable[str]) -> str:
    """The config value naming `names` (repeats dropped, order kept)."""
    return ",".join(dict.fromkeys(names))


def autotuned(config: Mapping[str, object]) -> bool:
    """Whether a config patch turns max-autotune's GEMM choices on."""
    return any(config.get(k) for k in MAX_AUTOTUNE_KEYS)
