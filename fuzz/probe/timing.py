"""Where a case's time goes: the harness's own phases (eager and float64 reference, compiles,
single-choice compiles, re-runs without a known bug's trigger, oracles) and, inside compiles,
inductor's (dynamo tracing, AOT and graph passes, lowering, autotune benchmarking, code
generation and kernel compilation), read from torch's `compilation_time_metrics`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

INDUCTOR_PHASES = ("dynamo trace", "aot and graph passes", "lowering", "autotune benchmarking",
                   "codegen and kernel compile")


class Timings:
    """Seconds per phase, accumulated over one case."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - began)

    @contextlib.contextmanager
    def compiling(self, name: str) -> Iterator[None]:
        """Time a phase that compiles, split into inductor's own phases (the rest stays `name`)."""
        before = _inductor_totals()
        began = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - began
            inside = {k: v - before.get(k, 0.0) for k, v in _inductor_totals().items()}
            for phase, seconds in inside.items():
                self.add(phase, seconds)
            self.add(name, max(0.0, spent - sum(inside.values())))


def _inductor_totals() -> dict[str, float]:
    """Cumulative seconds of inductor's phases in this process (non-overlapping buckets)."""
    from torch._dynamo.utils import compilation_time_metrics as metrics

    def total(key: str) -> float:
        return sum(metrics.get(key, ()))

    autotune = sum(sum(v) for k, v in metrics.items() if k.endswith(("_autotuning", "_precompiling")))
    user_compiler = total("OutputGraph.call_user_compiler")
    inductor = total("compile_fx_inner")
    codegen = total("GraphLowering.compile_to_module")
    lowering = total("GraphLowering.run")
    return {
        "dynamo trace": max(0.0, total("_compile.compile_inner") - user_compiler),
        "aot and graph passes": max(0.0, user_compiler - lowering - codegen),
        "lowering": max(0.0, lowering - autotune),
        "autotune benchmarking": autotune,
        "codegen and kernel compile": codegen,
    } if inductor or user_compiler else {}
