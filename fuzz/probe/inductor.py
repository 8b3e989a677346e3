"""The handful of inductor and dynamo entry points the rest of the suite needs, so that no module
outside `fuzz.probe` touches `torch._inductor` or `torch._dynamo` itself: the installed config's
keys (a Case's config patch is validated against them), a config patch, freezing's pattern passes
set up as by default, a fresh dynamo state and dynamic-dim marks."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any


@functools.cache
def inductor_config_keys() -> frozenset[str]:
    """Every key of the installed torch._inductor.config (dotted sub-configs included)."""
    from torch._inductor import config

    return frozenset(config._config)  # type: ignore[attr-defined]  # a ConfigModule at run time; the stub is the module


def config_patch(patch: Mapping[str, Any]) -> AbstractContextManager[Any]:
    """`torch._inductor.config.patch(patch)`: the patch holds inside the `with` only."""
    from torch._inductor import config

    return config.patch(dict(patch))


@functools.cache
def init_freezing_patterns() -> None:
    """Register freezing's pattern passes as inductor's default config sets them up. Inductor does
    it once per process, at its first freezing compile, with the config of that compile: the weight
    packing patterns only if cpp.weight_prepack is on then, and later compiles keep them whatever
    their own config says (repros/weight_prepack_first_compile_decides.py). Called before every
    compile, so no case's packing depends on the cases a process ran before it."""
    from torch._inductor import config
    from torch._inductor.fx_passes import freezing_patterns

    with config.patch({"cpp.weight_prepack": True}):
        freezing_patterns.lazy_init()


def reset_dynamo() -> None:
    """A fresh dynamo state (also clears torch's compile-time metrics)."""
    import torch._dynamo

    torch._dynamo.reset()


def maybe_mark_dynamic(tensor: Any, dim: int) -> None:
    """Mark `dim` of `tensor` dynamic, where dynamo can (`torch._dynamo.maybe_mark_dynamic`)."""
    import torch._dynamo

    torch._dynamo.maybe_mark_dynamic(tensor, dim)
