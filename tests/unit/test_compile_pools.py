"""An xdist worker's teardown ends: a compile pool that does not shut down is killed, one that
does is left to its own shutdown."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from fuzz.probe.inductor import stop_compile_pools


class Pool:
    """A pool whose shutdown waits for its sidecar process, as a SubprocPool's does."""

    def __init__(self, seconds: float) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        self.shut = False

    def shutdown(self) -> None:
        self.process.wait()
        self.shut = True


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[Pool]:
    """The pool set stop_compile_pools reads, in place of inductor's."""
    found: list[Pool] = []
    monkeypatch.setitem(sys.modules, "torch._inductor.async_compile", types.SimpleNamespace(_pool_set=found))
    return found


def test_a_pool_that_hangs_is_killed_and_named(pools: list[Pool]) -> None:
    pools.append(Pool(600))
    killed = stop_compile_pools(wait_s=0.5)
    assert len(killed) == 1 and f"pid {pools[0].process.pid}" in killed[0]
    assert pools[0].process.returncode == -9 and pools[0].shut


def test_a_pool_that_shuts_down_is_not_killed(pools: list[Pool]) -> None:
    pools.append(Pool(0))
    assert stop_compile_pools(wait_s=30) == []
    assert pools[0].process.returncode == 0 and pools[0].shut
