"""`python -m fuzz bench --time-to-find`: how long until a broken inductor is caught.

Each planted bug of the catalogue (fuzz.probe.plants) is planted in turn, in two runs of at most
the cap each: the naive loop (fuzz.tools.bench.run_naive: the workload's cases in order, one
process, a fresh compile per case) stops at the first case showing a finding the plant causes;
the suite is a real campaign (`python -m fuzz run --seed S --no-export`, the plant named in its
workers' environment), stopped at the first such finding in its findings directory. Both are
timed from their process's launch, start-up included. A plant not found within the cap counts as
the cap (shown as `>CAP`). Prints a table per plant, the median and the worst per side, and a last
line `time to find: suite median Xs (worst Ys), naive median Zs (worst Ws): N.Nx`."""

from __future__ import annotations

import dataclasses
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fuzz.engine.children import REPO_ROOT, python_env
from fuzz.engine.noise import campaign_command
from fuzz.probe.plants import PLANT_ENV, Plant
from fuzz.store.findings import FindingsStore
from fuzz.tools.bench import WORKLOAD, run_naive, workload

POLL_S = 0.5
"""How often the suite side's findings directory is read."""


class TimeToFindError(RuntimeError):
    """A side could not run (e.g. the campaign exited before the cap); the message is one line."""


@dataclasses.dataclass
class Timing:
    """One plant's time to find on each side (None: not found within the cap)."""

    plant: str
    naive_s: float | None
    naive_cases: int
    suite_s: float | None


def fmt(seconds: float | None, cap_s: float) -> str:
    return f">{cap_s:.0f}s" if seconds is None else f"{seconds:.0f}s"


@dataclasses.dataclass(frozen=True)
class Spread:
    """The median and the worst of one side's times, a miss counted as the cap."""

    median: float
    median_is_lower_bound: bool  # the median rests on a miss
    worst: float | None  # None: a miss

    @classmethod
    def of(cls, times: Sequence[float | None], cap_s: float) -> Spread:
        capped = sorted(cap_s if t is None else t for t in times)
        return cls(statistics.median(capped), capped[len(capped) // 2] >= cap_s,
                   None if None in times else capped[-1])

    def text(self, cap_s: float) -> tuple[str, str]:
        """The median and the worst as text (`>` marks a lower bound)."""
        return f"{'>' if self.median_is_lower_bound else ''}{self.median:.0f}s", fmt(self.worst, cap_s)


def ratio(naive_s: float, suite_s: float, naive_lower_bound: bool, suite_lower_bound: bool) -> str:
    """naive / suite, `>` when only the naive time is a lower bound, `?` when the suite's is."""
    if suite_lower_bound:
        return "?"
    return f"{'>' if naive_lower_bound else ''}{naive_s / max(suite_s, 1e-9):.1f}x"


def table(timings: Sequence[Timing], cap_s: float) -> str:
    """A Markdown table (one row per plant), then the median and worst lines and the last line."""
    rows = ["| planted bug | naive loop | suite | naive / suite |", "|---|---|---|---|"]
    for t in timings:
        naive_s, suite_s = (cap_s if t.naive_s is None else t.naive_s), (cap_s if t.suite_s is None else t.suite_s)
        rows.append(f"| {t.plant} | {fmt(t.naive_s, cap_s)} ({t.naive_cases} cases) | {fmt(t.suite_s, cap_s)} | "
                    f"{ratio(naive_s, suite_s, t.naive_s is None, t.suite_s is None)} |")
    naive, suite = Spread.of([t.naive_s for t in timings], cap_s), Spread.of([t.suite_s for t in timings], cap_s)
    (n_med, n_worst), (s_med, s_worst) = naive.text(cap_s), suite.text(cap_s)
    return "\n".join(rows + [
        "", f"median: naive {n_med}, suite {s_med}", f"worst: naive {n_worst}, suite {s_worst}",
        f"time to find: suite median {s_med} (worst {s_worst}), naive median {n_med} (worst {n_worst}): "
        f"{ratio(naive.median, suite.median, naive.median_is_lower_bound, suite.median_is_lower_bound)}"])


def first_caused(out: Path, plant: Plant) -> str:
    """The key of a new finding in campaign directory `out` that `plant` causes ("" when none yet)."""
    return next((f.key for f in FindingsStore(out) if f.is_new and plant.caused(f.oracle, f.signature)), "")


def suite_time(plant: Plant, cap_s: float, seed: int, out: Path, device: str) -> float | None:
    """Seconds from a campaign's launch, with `plant` planted, to its first finding the plant
    causes (None: not within `cap_s`); the campaign (its whole process group) is killed then."""
    with open(out.with_name(out.name + ".log"), "w", encoding="utf-8") as log:
        launched = time.monotonic()
        proc = subprocess.Popen(campaign_command(cap_s + 60, seed, out, device), cwd=REPO_ROOT,
                                env=python_env({PLANT_ENV: plant.name}), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while (elapsed := time.monotonic() - launched) < cap_s:
            if first_caused(out, plant):
                return elapsed
            if proc.poll() is not None:
                raise TimeToFindError(f"the campaign with {plant.name} planted exited ({proc.returncode}) "
                                      f"within the cap; see {log.name}")
            time.sleep(POLL_S)
        return None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def time_to_find(plants: Sequence[Plant], cap_s: float, seed: int, device: str, log: Callable[[str], None],
                 root: Path | None = None) -> list[Timing]:
    """Plant each bug in turn and time both sides (the naive loop first), the campaigns in
    `root`/PLANT (default: a new temporary directory, kept); `log` gets one line per plant."""
    cases = workload(device, seed, WORKLOAD)
    root = (root or Path(tempfile.mkdtemp(prefix="mm-fuzz-ttf-"))).resolve()
    if used := [root / p.name for p in plants if (root / p.name).exists()]:
        raise TimeToFindError(f"{used[0]} exists: each plant's campaign starts clean (give a fresh --out)")
    root.mkdir(parents=True, exist_ok=True)
    log(f"time to find: {len(plants)} planted bug(s) on {device}, seed {seed}, cap {cap_s:g}s per side; "
        f"campaigns in {root}")
    timings = []
    for plant in plants:
        naive = run_naive(cases, cap_s, device, plant.name)
        naive_s = naive.wall_s if naive.found is not None and naive.wall_s <= cap_s else None
        suite_s = suite_time(plant, cap_s, seed, root / plant.name, device)
        timings.append(Timing(plant.name, naive_s, naive.cases, suite_s))
        log(f"{plant.name}: naive {fmt(naive_s, cap_s)} ({naive.cases} cases), suite {fmt(suite_s, cap_s)}")
    return timings
