"""`python -m fuzz bench --noise`: the new findings clean campaigns report on this machine.

On an unmodified torch every new finding of a campaign is noise until triaged: an oracle mistake
to fix, or a real bug to register with its plain repro (README "Known bugs"). The noise benchmark
runs clean campaigns of one budget with different seeds, one after another (or side by side, the
machine's workers shared among them), each `python -m fuzz run` in a subprocess with an output
directory of its own (no shared store, no repro checks: they would only lengthen each campaign;
`python -m fuzz export DIR` checks a campaign's repros afterwards), and prints per campaign its
seed, cases, exit status, wall time and new findings (key and message);
the last line is `noise: N new finding(s) in M campaign(s)`."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fuzz.engine.children import REPO_ROOT, python_env
from fuzz.store.findings import Finding, FindingsStore, campaign_totals, load_campaign


class NoiseError(Exception):
    """The benchmark cannot start (e.g. a campaign directory is not fresh); the message is one line."""


@dataclasses.dataclass
class CampaignRun:
    """One clean campaign of the benchmark, as it ended."""

    seed: int
    out: Path
    status: int
    seconds: float
    cases: int
    new: list[Finding]

    @property
    def finished(self) -> bool:
        """The campaign ended as `run` does: exit 1 with new findings, 0 without (a traceback is 1 too)."""
        return self.status == (1 if self.new else 0)

    def lines(self) -> list[str]:
        minutes, seconds = divmod(round(self.seconds), 60)
        head = (f"seed {self.seed}: {self.cases} cases, exit {self.status}, {minutes}:{seconds:02d} wall, "
                f"{len(self.new)} new finding(s)" + ("" if self.finished else ": did NOT finish (see its log)"))
        return [head] + [f"    NEW {f.key}: {(f.best_message.splitlines() or [''])[0][:200]}" for f in self.new]


def campaign_command(budget_s: float, seed: int, out: Path, device: str, workers: int | None = None) -> list[str]:
    """`python -m fuzz run` for one clean campaign into `out` (with the campaign's default workers unless given)."""
    return ([sys.executable, "-m", "fuzz", "run", "--budget", f"{budget_s:g}s", "--seed", str(seed), "--out", str(out),
             "--device", device, "--store", "", "--no-export", "--progress", "plain"]
            + ([] if workers is None else ["--workers", str(workers)]))


def start(budget_s: float, seed: int, out: Path, device: str, workers: int | None) -> subprocess.Popen[bytes]:
    """Start one campaign (its output in `out`.log)."""
    with open(out.with_name(out.name + ".log"), "w", encoding="utf-8") as log:
        return subprocess.Popen(campaign_command(budget_s, seed, out, device, workers), cwd=REPO_ROOT,
                                env=python_env({}), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def ended(seed: int, out: Path, status: int, seconds: float) -> CampaignRun:
    """What the campaign in `out` found, once it ended with `status` after `seconds`."""

    def warn(message: str) -> None:
        print(f"warning: {message}", file=sys.stderr)

    cases = campaign_totals([load_campaign(out, warn)])["cases"]
    return CampaignRun(seed, out, status, seconds, cases, [f for f in FindingsStore(out, warn) if f.is_new])


def noise(budget_s: float, seeds: Sequence[int], root: Path, device: str, log: Callable[[str], None],
          side_by_side_workers: int | None = None) -> list[CampaignRun]:
    """Run a clean campaign of `budget_s` per seed into `root`/seed-N, one after another with the
    campaign's default workers, or all at once with `side_by_side_workers` each; print each as it
    ends and the total last. NoiseError when a campaign directory already exists."""
    outs = [(root / f"seed-{seed}").resolve() for seed in seeds]
    if used := [out for out in outs if out.exists()]:
        raise NoiseError(f"{used[0]} exists: the noise benchmark runs clean campaigns (give a fresh --out)")
    root.mkdir(parents=True, exist_ok=True)
    log(f"noise: {len(seeds)} clean campaign(s) of {budget_s:g}s on {device}, seeds "
        f"{', '.join(map(str, seeds))}, in {root.resolve()} (each campaign's output in seed-N.log)")
    runs = []
    if side_by_side_workers is None:
        for seed, out in zip(seeds, outs, strict=True):
            began = time.monotonic()
            status = start(budget_s, seed, out, device, None).wait()
            runs.append(ended(seed, out, status, time.monotonic() - began))
            for line in runs[-1].lines():
                log(line)
    else:
        began = time.monotonic()
        started = [start(budget_s, seed, out, device, side_by_side_workers)
                   for seed, out in zip(seeds, outs, strict=True)]
        for seed, out, process in zip(seeds, outs, started, strict=True):
            runs.append(ended(seed, out, process.wait(), time.monotonic() - began))
            for line in runs[-1].lines():
                log(line)
    log(summary(runs))
    return runs


def summary(runs: Sequence[CampaignRun]) -> str:
    failed = [r for r in runs if not r.finished]
    return (f"noise: {sum(len(r.new) for r in runs)} new finding(s) in {len(runs)} campaign(s)"
            + (f"; {len(failed)} campaign(s) did not finish (see seed-N.log)" if failed else ""))


def exit_status(runs: Sequence[CampaignRun]) -> int:
    """1 when a campaign found something new, else 2 when one did not finish, else 0."""
    return 1 if any(r.new for r in runs) else 2 if not all(r.finished for r in runs) else 0
