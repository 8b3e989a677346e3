"""What this machine gives a campaign's workers: its GPUs and cores, found without initializing CUDA
here, the code caches they share, and each worker's share of them (the environment it starts with)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fuzz.probe.catalogue_cache import CATALOGUE_DIR_ENV

GPU_LOCK_ENV = "MM_FUZZ_GPU_BENCHMARK_LOCK"
"""The lock file the workers of one GPU time kernels under (fuzz.probe.speedups.serialize_gpu_benchmarks)."""


def visible_gpu_ids() -> list[str]:
    """Ids of the visible NVIDIA GPUs, found without initializing CUDA in this process."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in out.splitlines() if line.startswith("GPU "))]


def sees_gpus(gpu: str | None) -> bool:
    """Whether a worker started with CUDA_VISIBLE_DEVICES=`gpu` sees a GPU ("" hides them, None inherits)."""
    return bool(gpu) if gpu is not None else bool(visible_gpu_ids())


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, e.g. under taskset), not the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def core_window(index: int, workers: int, cores: list[int]) -> list[int]:
    """The cores worker `index` of `workers` processes sharing `cores` runs on: its own slice and the
    next one (each core serves two workers), so that a worker left alone at the end of a run has two."""
    if workers <= 1 or len(cores) <= 1:
        return list(cores)
    share = max(1, len(cores) // workers)
    start = (index * len(cores) // workers) % len(cores)
    return sorted({cores[(start + k) % len(cores)] for k in range(min(len(cores), 2 * share))})


def cache_root() -> Path:
    """Per-user scratch for inductor / Triton caches (not the findings dir: CI uploads that)."""
    return Path(tempfile.gettempdir()) / f"mm-fuzz-{os.getuid()}" / "campaign"


def repro_caches() -> dict[str, str]:
    """The code caches of repro checks: the workers' (`cache_root()`), for every run of every check
    (the script and its plain form's candidates). A cached kernel is the code a fresh compile would
    produce and a failed compile is never cached, so a run fails or passes as with empty caches, and
    loads the kernels the campaign compiled for the same case (measured: a frozen CPP addmm, 15 s
    cold, 6 s warm on 2 cores). The caches a check's compile may write that skip lowering (inductor's
    defaults: the FX graph and autotune caches) are off in the workers, so nothing flows back."""
    root = cache_root()
    return {"TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"), "TRITON_CACHE_DIR": str(root / "triton")}


def worker_env(caches: Path, gpu: str | None, compile_threads: int | None, coverage_dir: Path | None) -> dict[str, str]:
    """The environment a worker starts with (on top of its parent's): the code caches in `caches`,
    its GPU (CUDA_VISIBLE_DEVICES=`gpu`, None: inherited) and its share of the cores for compiles."""
    # One code cache for all the workers of a machine: inductor's and Triton's caches are keyed by the
    # kernel's source and compile command and locked per key (the way inductor shares them between all
    # of a user's processes by default), so a kernel one worker compiled is loaded, not rebuilt, by the
    # others; the caches that skip lowering or selection stay off (fuzz.probe.observe.LOWERING_SKIPPING_CACHES).
    env = {"TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton"),
           CATALOGUE_DIR_ENV: str(caches / "catalogues"), "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
    if compile_threads is not None:  # workers sharing a machine split its cores for kernel compiles
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
        if compile_threads < usable_cpus() and "OMP_WAIT_POLICY" not in os.environ:
            env["OMP_WAIT_POLICY"] = "PASSIVE"  # an idle OpenMP thread sleeps instead of spinning on a shared core
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
        env[GPU_LOCK_ENV] = str(caches / f"gpu{gpu}.benchmark.lock")
    if coverage_dir is not None:
        env["MM_FUZZ_COVERAGE_DIR"] = str(coverage_dir)
    return env
