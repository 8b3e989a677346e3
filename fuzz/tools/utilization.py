"""How busy the machine was while a benchmark side ran: the share of this process's cores (its
affinity mask, from /proc/stat) and of the GPU (nvidia-smi) in use, sampled once a second. It
says what bounds a side's throughput: cores near 100% mean compile work, not idle time."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

STAT = Path("/proc/stat")


def _cpu_ticks(cpus: set[int]) -> tuple[int, int] | None:
    """(busy, total) jiffies summed over `cpus`, or None where /proc/stat is not readable."""
    try:
        lines = STAT.read_text().splitlines()
    except OSError:
        return None
    busy = total = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(v) for v in fields[:8]]
            idle = values[3] + values[4]  # idle + iowait
            busy += sum(values) - idle
            total += sum(values)
    return busy, total


def _gpu_percent(gpu: str) -> float | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-i", gpu],
                             capture_output=True, text=True, timeout=10, check=False).stdout.strip()
        return float(out.splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


class Utilization:
    """Samples in a background thread between `start()` and `stop()`; `summary()` is one phrase."""

    def __init__(self, gpu: str | None = None, period_s: float = 1.0) -> None:
        self.cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
        self.gpu = gpu if gpu and shutil.which("nvidia-smi") else None
        self.period_s = period_s
        self.gpu_samples: list[float] = []
        self._first: tuple[int, int] | None = None
        self._last: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Utilization:
        self._first = _cpu_ticks(self.cpus)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            if self.gpu is not None and (percent := _gpu_percent(self.gpu)) is not None:
                self.gpu_samples.append(percent)

    def stop(self) -> Utilization:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join()
        self._last = _cpu_ticks(self.cpus)
        return self

    @property
    def cpu_percent(self) -> float | None:
        if self._first is None or self._last is None or self._last[1] <= self._first[1]:
            return None
        return 100.0 * (self._last[0] - self._first[0]) / (self._last[1] - self._first[1])

    @property
    def gpu_percent(self) -> float | None:
        return sum(self.gpu_samples) / len(self.gpu_samples) if self.gpu_samples else None

    def summary(self) -> str:
        parts = [f"cores busy {p:.0f}% of {len(self.cpus)}" if (p := self.cpu_percent) is not None else ""]
        parts.append(f"GPU busy {p:.0f}%" if (p := self.gpu_percent) is not None else "")
        return ", ".join(p for p in parts if p) or "utilization not measurable here"
