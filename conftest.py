"""pytest setup: Hypothesis profiles, one inductor/Triton cache and one GPU per xdist worker,
`--repro-dir`, and the `fuzz_session` fixture."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
from hypothesis import HealthCheck, settings

_SLOW = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile("dev", max_examples=15, deadline=None, suppress_health_check=_SLOW)
settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=_SLOW)
settings.register_profile("gpu", max_examples=40, deadline=None, print_blob=True, suppress_health_check=_SLOW)
settings.register_profile("nightly", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=_SLOW)


def _gpu_count() -> int:
    """Visible NVIDIA GPUs, counted without initializing CUDA in this process."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    if shutil.which("nvidia-smi") is None:
        return 0
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    return sum(line.startswith("GPU ") for line in out.splitlines())


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--repro-dir", default=None, metavar="DIR",
                     help="write a standalone repro script (torch only) for every failing case into DIR")


def pytest_configure(config: pytest.Config) -> None:
    """Runs in each xdist worker before CUDA initializes: pin its GPU and give it its own caches."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    root = os.path.join(tempfile.gettempdir(), f"mm-fuzz-{os.getuid()}")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(root, "inductor", worker))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(root, "triton", worker))
    gpus = _gpu_count()
    if worker.startswith("gw") and gpus > 1:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [d.strip() for d in visible.split(",")] if visible else [str(i) for i in range(gpus)]
        os.environ["CUDA_VISIBLE_DEVICES"] = ids[int(worker[2:]) % len(ids)]
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile("ci" if os.environ.get("CI") else ("gpu" if gpus else "dev"))


@pytest.fixture(scope="session")
def fuzz_session():  # type: ignore[no-untyped-def]
    from fuzz.session import FuzzSession

    return FuzzSession()
