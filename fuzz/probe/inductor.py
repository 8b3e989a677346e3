"""The handful of inductor and dynamo entry points the rest of the suite needs, so that no module
outside `fuzz.probe` touches `torch._inductor` or `torch._dynamo` itself: the installed config's
keys (a Case's config patch is validated against them), a config patch, a fresh dynamo state and
dynamic-dim marks."""

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


def reset_dynamo() -> None:
    """A fresh dynamo state (also clears torch's compile-time metrics)."""
    import torch._dynamo

    torch._dynamo.reset()


def maybe_mark_dynamic(tensor: Any, dim: int) -> None:
    """Mark `dim` of `tensor` dynamic, where dynamo can (`torch._dynamo.maybe_mark_dynamic`)."""
    import torch._dynamo

    torch._dynamo.maybe_mark_dynamic(tensor, dim)
