"""Workers sharing a GPU run out of its memory at times (an H200 campaign's workers died of it in
the reference and were reported as NEW crashes): the error bound's prefix sums stay near their
chunk size whatever the case's size, a reference that does not fit on the device is computed on
the CPU, and a case that ran out of memory runs once more with this worker's cache freed."""

from __future__ import annotations

import weakref
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from fuzz.run import harness, programs
from fuzz.run.session import FuzzSession
from oracles import error_model
from strategies.case import Case, TensorSpec


class PeakLiveBytes(TorchDispatchMode):
    """The most bytes that tensors made inside the mode held at once (storages counted once)."""

    def __init__(self) -> None:
        super().__init__()
        self.users: dict[int, int] = {}
        self.bytes: dict[int, int] = {}
        self.live = self.peak = 0

    def _release(self, ptr: int) -> None:
        self.users[ptr] -= 1
        if not self.users[ptr]:
            self.live -= self.bytes.pop(ptr)
            del self.users[ptr]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes():
                ptr = t.untyped_storage().data_ptr()
                if ptr not in self.users:
                    self.bytes[ptr] = t.untyped_storage().nbytes()
                    self.users[ptr] = 0
                    self.live += self.bytes[ptr]
                    self.peak = max(self.peak, self.live)
                self.users[ptr] += 1
                weakref.finalize(t, self._release, ptr)
        return out


def whole_product_prefixes(a: torch.Tensor, b: torch.Tensor) -> error_model.Prefixes:
    sums = (a[..., :, :, None] * b[..., None, :, :]).cumsum(-2)
    return error_model.Prefixes(sums.square().sum(-2).sqrt(), sums.abs().sum(-2))


@pytest.mark.parametrize("rows_per_chunk", [1, 2, 5, 64])
def test_prefix_sums_in_chunks_are_those_of_the_whole_product(monkeypatch: pytest.MonkeyPatch,
                                                              rows_per_chunk: int) -> None:
    a, b = torch.randn(3, 5, 7, dtype=torch.float64), torch.randn(3, 7, 4, dtype=torch.float64)
    monkeypatch.setattr(error_model, "PREFIX_CHUNK", rows_per_chunk * 3 * 7 * 4)
    got, want = error_model.prefixes(a, b), whole_product_prefixes(a, b)
    assert torch.equal(got.spread, want.spread) and torch.equal(got.drift, want.drift)


def test_prefix_sums_stay_near_one_chunk_whatever_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A (7, 64, 33) @ (7, 33, 40) bound with 16 rows' worth of chunk: the old code kept every
    chunk's prefix sums (and chunked rows of all batches at once), holding the whole product."""
    monkeypatch.setattr(error_model, "PREFIX_CHUNK", 16 * 33 * 40)
    a, b = torch.randn(7, 64, 33, dtype=torch.float64), torch.randn(7, 33, 40, dtype=torch.float64)
    with PeakLiveBytes() as memory:
        error_model.prefixes(a, b)
    whole = 7 * 64 * 33 * 40 * 8
    assert memory.peak <= 4 * error_model.PREFIX_CHUNK * 8 + 2 * 7 * 64 * 40 * 8 < whole / 4, (memory.peak, whole)


CASE = Case.make(op="mm", device="cpu", seed=1, value_mode="exact_int", config={"max_autotune": True,
                 "max_autotune_gemm_backends": "ATEN"},
                 inputs=(TensorSpec((4, 6), (6, 1), 0, "float32"), TensorSpec((6, 3), (3, 1), 0, "float32")))


def out_of_memory_once(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """`module.name` raises torch.OutOfMemoryError the first time it is called; the calls made."""
    real, calls = getattr(module, name), []

    def once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 880.00 MiB (planted)")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, once)
    return calls


def test_a_reference_that_does_not_fit_on_the_device_is_computed_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = out_of_memory_once(monkeypatch, programs, "expected")
    verdict = FuzzSession().evaluate(CASE)
    assert len(calls) >= 2 and not verdict.rejected and verdict.violations == []
    assert verdict.observation.results and all(r.reference.device.type == "cpu" for r in verdict.observation.results)


@pytest.mark.parametrize("where", ["eager", "compiled"])
def test_a_case_that_ran_out_of_memory_runs_once_more(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Without the second run the eager OOM reads as a rejection (the case would be lost) and the
    compiled one as a crash of inductor's (a finding that is not one)."""
    if where == "eager":
        calls = out_of_memory_once(monkeypatch, programs, "run")
    else:
        calls = out_of_memory_once(monkeypatch, torch, "compile")
    verdict = FuzzSession().evaluate(CASE)
    assert len(calls) >= 2 and not verdict.rejected and verdict.violations == [] and verdict.observation.results


def test_twice_out_of_memory_stays_what_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise torch.OutOfMemoryError("CUDA out of memory (planted)")

    monkeypatch.setattr(torch, "compile", never)
    verdict = FuzzSession().evaluate(CASE)
    assert verdict.observation.compile_failure is not None
    assert verdict.observation.compile_failure.type == "OutOfMemoryError" and verdict.violations


def test_the_worker_gives_cached_device_memory_back_after_each_case() -> None:
    import inspect

    from fuzz.engine.worker import worker_main

    loop = inspect.getsource(worker_main)
    assert loop.index("session.evaluate(case)") < loop.index("release_device_memory()") < loop.index("CaseVerdict(")
    if torch.cuda.is_available():
        x = torch.empty(1 << 28, device="cuda")
        del x
        reserved = torch.cuda.memory_reserved()
        harness.release_device_memory()
        assert torch.cuda.memory_reserved() < reserved
