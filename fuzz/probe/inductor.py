"""The handful of inductor and dynamo entry points the rest of the suite needs, so that no module
outside `fuzz.probe` touches `torch._inductor` or `torch._dynamo` itself: the installed config's
keys (a Case's config patch is validated against them), a config patch, freezing's pattern passes
set up as by default, a fresh dynamo state, dynamic-dim marks and stopping the compile pools."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
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


def stop_compile_pools(wait_s: float = 10.0) -> list[str]:
    """Shut down this process's inductor compile-worker pools as inductor does at exit, but kill a
    pool whose processes have not ended within `wait_s` (inductor waits 300 s for each: an xdist
    teardown on torch 2.11 sat there until its time limit). One line per pool that was killed."""
    async_compile = sys.modules.get("torch._inductor.async_compile")
    killed = []
    for pool in list(getattr(async_compile, "_pool_set", ())):
        shutdown = threading.Thread(target=pool.shutdown, daemon=True)
        shutdown.start()
        shutdown.join(wait_s)
        process = getattr(pool, "process", None)  # a SubprocPool's sidecar, parent of the compile workers
        if shutdown.is_alive() and process is not None:
            workers = _children(process.pid)
            killed.append(f"{type(pool).__name__} pid {_state(process.pid)}, workers "
                          f"{', '.join(_state(pid) for pid in workers) or 'none'}")
            for pid in [*workers, process.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            shutdown.join(wait_s)
    return killed


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux's /proc; none elsewhere)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.is_file() else []


def _state(pid: int) -> str:
    """`pid` and its scheduler state letter (R running, S sleeping, D in I/O, Z zombie, T stopped)."""
    with contextlib.suppress(OSError, IndexError):
        return f"{pid} ({Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]})"
    return str(pid)
