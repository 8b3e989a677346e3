"""pytest setup: Hypothesis profiles and a pinned pool of drawn literals, one inductor/Triton cache
and one GPU per xdist worker, a bounded teardown, `--repro-dir`, the reject-rate check of property
tests, and the `fuzz_session` fixture."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
from hypothesis import settings

from fuzz.engine.machine import core_window, visible_gpu_ids
from fuzz.engine.stream import pin_local_constants
from fuzz.tools.profiles import default_profile, register_profiles

register_profiles()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--repro-dir", default=None, metavar="DIR",
                     help="write a standalone repro script (torch only) for every failing case into DIR")


def pytest_configure(config: pytest.Config) -> None:
    """Runs in each xdist worker before CUDA initializes: pin its GPU and give it its own caches."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    root = os.path.join(tempfile.gettempdir(), f"mm-fuzz-{os.getuid()}")
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(root, "inductor", worker))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(root, "triton", worker))
    gpus = visible_gpu_ids()
    if worker.startswith("gw") and len(gpus) > 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[int(worker[2:]) % len(gpus)]
    share_the_cores(worker)
    if getattr(config.option, "maxschedchunk", "") is None:  # xdist's, not given: small chunks
        config.option.maxschedchunk = XDIST_CHUNK
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile(default_profile(len(gpus)))


def pytest_unconfigure(config: pytest.Config) -> None:
    """An xdist worker shuts inductor's compile pools down itself, killing one that hangs (see
    fuzz.probe.inductor.stop_compile_pools), and says which: its teardown must end."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if worker.startswith("gw"):
        from fuzz.probe.inductor import stop_compile_pools

        for line in stop_compile_pools():
            print(f"{worker}: killed an inductor compile pool that did not shut down: {line}", file=sys.__stderr__)


@pytest.hookimpl(trylast=True)  # after Hypothesis's plugin has ended its initialization
def pytest_sessionstart(session: pytest.Session) -> None:
    """A derandomized draw (the `ci` profile, the distribution tests) must not depend on the tests
    the worker ran before it: pin Hypothesis's pool of drawn literals."""
    pin_local_constants()


def share_the_cores(worker: str) -> None:
    """An xdist worker, and every process it starts (campaigns, repros, inductor's compile pool), runs
    on its own window of the cores with as many OpenMP and compile threads: 16 workers each sizing
    their threads for the whole machine ran a CPU-only test 15 times slower than alone (H200)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or workers <= 1 or not hasattr(os, "sched_setaffinity"):
        return
    import torch

    cores = core_window(int(worker[2:]), workers, sorted(os.sched_getaffinity(0)))
    os.sched_setaffinity(0, cores)
    torch.set_num_threads(len(cores))


XDIST_CHUNK = 2
"""How many tests xdist's `load` scheduler hands a worker at once (its `--maxschedchunk`, unless the
command line gives one). By default it sends each worker a quarter of its share first (7 of 509
tests with 16 workers) and refills up to half of what is left per worker: in the slowest-first
order one H200 worker got seven slow tests in a row and ran 476 s while most were idle after 125 s
(the run's durations replayed through xdist's rules: 538 s as the tests are marked now, 226 s with
chunks of 2; 195 s is the mean per worker)."""

SLOW_FIRST = ("campaign", "slow")
"""Markers of the longest tests, which start first so that no worker begins one near the end."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first (xdist hands them out in this order, XDIST_CHUNK at a time); tests
    marked `gpu` need a CUDA GPU: skipped without one (`pytest -m gpu` selects them)."""
    items.sort(key=lambda item: next((i for i, m in enumerate(SLOW_FIRST) if item.get_closest_marker(m)),
                                     len(SLOW_FIRST)))
    if visible_gpu_ids():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """After a passing `reject_ceiling` test (all its Hypothesis examples), check its op's reject
    rate over its own cases (not those other tests of this xdist worker ran)."""
    ceiling = item.get_closest_marker("reject_ceiling") is not None
    if ceiling:
        from tests.checking import forget_tally

        forget_tally(item.callspec.params["op"])
    result = yield
    if ceiling:
        from tests.checking import assert_reject_rate_within_ceiling

        assert_reject_rate_within_ceiling(item.callspec.params["op"])
    return result


@pytest.fixture(scope="session")
def fuzz_session():
    from fuzz.probe.speedups import speed_up_compiles
    from fuzz.run.session import FuzzSession

    speed_up_compiles()  # the campaign workers' compile speed-ups, for the property tests too
    return FuzzSession()
