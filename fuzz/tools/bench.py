"""`python -m fuzz bench`: the suite's campaign engine against a naive loop, on one fixed-seed
workload, in one run.

The workload is a list of cases the strategies draw for the machine's device from a fixed seed. The
naive baseline runs them in order in one plain process, each with a fresh `torch.compile` and
inductor's caches off (`force_disable_caches`, empty cache directories; a warm-cache case's own FX
graph cache on, as the suite's), applying the same oracles (FuzzSession.evaluate), for the budget;
its time ends with the last case that ended within it. The suite then runs the very cases the naive
loop finished (cases differ widely in cost), longest first by the naive loop's time for each (a
campaign's stream of cases never runs dry, so the rate must not count workers idle at the end of a
finite list waiting for one last slow case), through the campaign's isolated workers
(fuzz.engine.executor.Executor: N per GPU, or N on the CPU), all sharing one warm code cache (the
caches that skip lowering stay off in both), timed from when every worker is ready to the end of its
last case: a campaign overlaps start-up with its budget, so the bench measures the rate it then runs
at, and reports start-up apart. Each side also reports how busy the cores and the GPU were
(fuzz/tools/utilization.py)."""

from __future__ import annotations

import dataclasses
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz.engine.children import python_env
from fuzz.engine.executor import Executor
from fuzz.engine.machine import usable_cpus, visible_gpu_ids
from fuzz.engine.worker import serialize_verdict
from fuzz.probe.plants import PLANT_ENV
from fuzz.probe.timing import INDUCTOR_PHASES
from fuzz.tools.utilization import Utilization

WORKLOAD = 1500
"""Cases drawn for a benchmark: more than the naive loop finishes in a few minutes."""
SUITE_CAP = 2.0
"""A suite side may take this many naive budgets for the naive side's cases (it is cut there)."""
PHASES = ("eager and reference", *INDUCTOR_PHASES, "compile and run", "single-choice compiles", "known-bug re-runs",
          "oracles")


@dataclasses.dataclass
class Side:
    """What one side of the benchmark did within its budget."""

    name: str
    cases: int = 0  # cases that ended within the budget
    seconds: float = 0.0  # to the end of its last case (from when every worker was ready), else the budget
    startup_s: float = 0.0  # until every worker was ready
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    utilization: str = ""  # how busy the cores and the GPU were while it ran
    verdicts: dict[int, str] = dataclasses.field(default_factory=dict)  # case index -> verdict_digest
    durations: dict[int, float] = dataclasses.field(default_factory=dict)  # case index -> its seconds
    found: int | None = None  # with a planted bug: the case that showed a finding it causes (the loop stops there)
    wall_s: float = 0.0  # the naive loop's process, from its launch to its exit

    @property
    def per_minute(self) -> float:
        return 60 * self.cases / self.seconds if self.seconds else 0.0

    def add(self, index: int, verdict: dict[str, Any]) -> None:
        """Count case `index`, whose serialized verdict (fuzz.engine.worker.serialize_verdict) is `verdict`."""
        self.cases += 1
        self.verdicts[index] = verdict_digest(verdict)
        self.durations[index] = float(verdict.get("seconds", 0.0))
        for phase, seconds in verdict.get("timings", {}).items():
            self.phases[phase] = self.phases.get(phase, 0.0) + seconds


def verdict_digest(verdict: dict[str, Any]) -> str:
    """What a case was judged: rejected, or its new findings' signatures and the known bugs seen."""
    if verdict.get("rejected"):
        return "rejected"
    found = sorted(v["signature"] for v in verdict.get("violations", []))
    known = sorted(k["bug"]["name"] for k in verdict.get("known", []))
    return ", ".join(found + [f"known:{k}" for k in known]) or "pass"


def disagreements(naive: Side, side: Side) -> list[str]:
    """The cases both sides ran whose verdicts differ, one line each."""
    return [f"case {i}: naive {naive.verdicts[i]!r}, {side.name} {side.verdicts[i]!r}"
            for i in sorted(side.verdicts) if i in naive.verdicts and naive.verdicts[i] != side.verdicts[i]]


def workload(device: str, seed: int, n: int) -> list[dict[str, Any]]:
    """`n` cases the strategies draw on `device` from `seed` (the same list every time)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    from strategies.cases import cases

    drawn: list[dict[str, Any]] = []

    @with_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=cases(device=device))
    def collect(case: Any) -> None:
        drawn.append(case.to_json())

    collect()
    return drawn


def run_naive(cases: list[dict[str, Any]], budget_s: float, device: str, plant: str = "") -> Side:
    """The baseline, in a fresh process with every inductor cache off (and the bug `plant` names
    planted: fuzz.probe.plants)."""
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-naive-") as scratch:
        spec = Path(scratch) / "cases.json"
        spec.write_text(json.dumps({"cases": cases, "budget_s": budget_s}))
        env = python_env({PLANT_ENV: plant, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
                          "TORCHINDUCTOR_CACHE_DIR": str(Path(scratch) / "inductor"),
                          "TRITON_CACHE_DIR": str(Path(scratch) / "triton")})
        gpus = visible_gpu_ids() if device == "cuda" else []
        gpu = gpus[0] if gpus else None
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        busy = Utilization(gpu).start()  # its few seconds of start-up included
        launched = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", f"import fuzz.tools.bench as b; b.naive_main({str(spec)!r})"],
                              check=False, env=env, capture_output=True, text=True)
        wall_s = time.monotonic() - launched
        busy.stop()
        out = Path(str(spec) + ".out")
        if not out.is_file():
            raise RuntimeError(f"the naive loop failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        data = json.loads(out.read_text())
    verdicts = {int(i): v for i, v in data["verdicts"].items()}
    durations = {int(i): s for i, s in data["durations"].items()}
    return Side("naive", data["cases"], data["seconds"], data["startup_s"], data["phases"], busy.summary(), verdicts,
                durations, data["found"], wall_s)


def naive_main(spec_path: str) -> None:
    """The naive loop itself (run by `run_naive` in its own process); with a planted bug, it stops
    at the first case showing a finding the bug causes."""
    began = time.monotonic()

    from fuzz.probe.inductor import config_patch
    from fuzz.probe.plants import apply_from_env
    from fuzz.run.session import FuzzSession
    from strategies.case import Case

    spec = json.loads(Path(spec_path).read_text())
    plant = apply_from_env()
    session = FuzzSession()
    side = Side("naive", startup_s=time.monotonic() - began)
    start = time.monotonic()
    for index, case_json in enumerate(spec["cases"]):
        case_began, case = time.monotonic(), Case.from_json(case_json)
        with config_patch({"force_disable_caches": not case.warm_cache}):  # a warm-cache case: its own FX cache
            verdict = session.evaluate(case)
        if time.monotonic() - start > spec["budget_s"]:
            break
        side.add(index, serialize_verdict(verdict, time.monotonic() - case_began))
        side.seconds = time.monotonic() - start  # to the end of its last case, as the suite's
        if plant is not None and any(plant.caused(v.oracle, v.signature) for v in verdict.violations):
            side.found = index
            break
    Path(spec_path + ".out").write_text(json.dumps(dataclasses.asdict(side)))


def run_suite(cases: list[tuple[int, dict[str, Any]]], budget_s: float, workers: int, device: str,
              log: Callable[[str], None]) -> Side:
    """The campaign engine's workers, `workers` of them per GPU (or on the CPU), fed the (index, case)
    list in order until it is done or the budget is spent; its time runs from when every worker is
    ready to the end of the last case (the budget when not every case ended within it)."""
    gpus = visible_gpu_ids() if device == "cuda" else []
    plan = [gpus[i % len(gpus)] for i in range(workers * len(gpus))] if gpus else [""] * workers
    threads = max(1, usable_cpus() // len(plan))
    side, lock = Side(f"suite x{workers}", seconds=budget_s), threading.Lock()
    todo = queue.Queue[tuple[int, dict[str, Any]]]()
    for index, case in cases:
        todo.put((index, case))
    began, start, last, errors = time.monotonic(), [0.0], [0.0], list[str]()
    busy = Utilization(gpus[0] if len(gpus) == 1 else None)

    def all_ready() -> None:
        start[0] = time.monotonic()
        side.startup_s = start[0] - began
        busy.start()

    ready = threading.Barrier(len(plan), action=all_ready)
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-bench-") as scratch:
        def work(index: int, gpu: str) -> None:
            executor = Executor(index, log_dir=Path(scratch) / "logs", gpu=gpu, cache_dir=Path(scratch) / "caches",
                                compile_threads=threads)
            try:
                executor.start()
                ready.wait()
                while time.monotonic() - start[0] < budget_s:
                    try:
                        n, case = todo.get_nowait()
                    except queue.Empty:
                        return
                    outcome = executor.run(case)
                    with lock:
                        if time.monotonic() - start[0] <= budget_s and outcome.verdict is not None:
                            side.add(n, outcome.verdict)
                            last[0] = time.monotonic()
            except threading.BrokenBarrierError:
                return
            except Exception as e:  # noqa: BLE001 - reported once every thread has ended
                errors.append(f"worker {index}: {e}")
                ready.abort()
            finally:
                executor.stop()

        pool = [threading.Thread(target=work, args=(i, gpu), daemon=True) for i, gpu in enumerate(plan)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    if errors:
        raise RuntimeError(f"{side.name} could not run: {errors[0]}")
    side.utilization = busy.stop().summary()
    if side.cases == len(cases):
        side.seconds = last[0] - start[0]
    log(f"{side.name}: {side.cases} of {len(cases)} cases in {side.seconds:.0f}s ({side.per_minute:.1f}/min), "
        f"start-up {side.startup_s:.0f}s; {side.utilization}")
    return side


def breakdown(sides: list[Side]) -> str:
    """A Markdown table: seconds per case in each phase, per side."""
    rows = ["| phase | " + " | ".join(s.name for s in sides) + " |", "|---|" + "---|" * len(sides)]
    for phase in PHASES:
        per_case = (f"{s.phases.get(phase, 0.0) / max(s.cases, 1):.2f}" for s in sides)
        rows.append(f"| {phase} | " + " | ".join(per_case) + " |")
    rows.append("| worker start-up (once) | " + " | ".join(f"{s.startup_s:.1f}" for s in sides) + " |")
    return "\n".join(rows)


def bench(budget_s: float, workers: list[int], device: str, seed: int, log: Callable[[str], None]) -> list[Side]:
    """Run the workload through the naive loop for the budget, then the very cases it finished
    through the suite with each worker count (cases differ in cost: every side gets the same ones),
    longest first."""
    cases = workload(device, seed, WORKLOAD)
    log(f"workload: {len(cases)} cases drawn on {device} from seed {seed}; budget {budget_s:g}s for the naive loop")
    naive = run_naive(cases, budget_s, device)
    log(f"naive: {naive.cases} cases in {naive.seconds:.0f}s ({naive.per_minute:.1f}/min), "
        f"start-up {naive.startup_s:.0f}s; {naive.utilization}")
    return [naive] + [run_suite(longest_first(cases, naive), SUITE_CAP * budget_s, n, device, log) for n in workers]


def longest_first(cases: list[dict[str, Any]], naive: Side) -> list[tuple[int, dict[str, Any]]]:
    """The cases the naive loop finished, as (index, case), the longest it took first."""
    return sorted(((i, cases[i]) for i in naive.verdicts), key=lambda item: -naive.durations[item[0]])


def summary(sides: list[Side]) -> str:
    naive, best = sides[0], max(sides[1:], key=lambda s: s.per_minute)
    curve = ", ".join(f"{s.name.split()[-1]}: {s.per_minute:.1f}/min" for s in sides[1:])
    ratio = best.per_minute / naive.per_minute if naive.per_minute else float("inf")
    agreement = "\n".join(f"verdicts of {s.name}: {n - len(d)} of {n} cases as the naive loop judged them"
                          + "".join(f"\n  {line}" for line in d)
                          for s in sides[1:]
                          for d, n in [(disagreements(naive, s), len(naive.verdicts.keys() & s.verdicts))])
    return (f"workers per device: {curve}\n\n{breakdown(sides)}\n\n{agreement}\n\n"
            f"speedup: {ratio:.1f}x over naive "
            f"(cases/min {best.per_minute:.1f} vs {naive.per_minute:.1f}, {best.name})")
