"""A campaign from start to end: check the inputs, lock the output directory, run the coordinator
(fuzz.engine.coordinator) and its drivers (fuzz.engine.driver) for the budget, then verify repros and write the
reports. Ctrl-C or SIGTERM once: the drivers stop after their current cases, repros are verified,
reports written; twice: the drivers are killed and the reports written at once (repros not
verified). Either way the exit status says the campaign was cut short (128 + the signal)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fuzz.engine.coordinator import Coordinator
from fuzz.engine.machine import usable_cpus, visible_gpu_ids
from fuzz.store.findings import CAMPAIGN_FILE, FindingsStore, load_campaign, now, write_json_atomic
from fuzz.store.shared_store import SAMPLES_FILE, StoreError, StoreSync, is_url, open_store, read_samples


class CampaignError(Exception):
    """A fatal problem with the campaign's inputs or environment; the message is one line."""


@dataclasses.dataclass
class CampaignOptions:
    out: Path
    budget_s: float = 300.0
    seed: int = 0
    ops: tuple[str, ...] = ()  # empty: every op the device runs
    backends: tuple[str, ...] = ()  # empty: any backend set; else only sets using these backends
    dtypes: tuple[str, ...] = ()  # empty: any dtype; else the first input's dtype is one of these
    device: str | None = None  # None: CUDA when a GPU is visible, else CPU
    profile: str | None = None
    workers: int | None = None  # None: default_workers() per GPU, or on a CPU machine
    case_timeout_s: float = 300.0
    shrink_s: float = 60.0
    db: str = ""  # "": the store's examples, else OUT/examples; "none"; a directory; or redis://host:port/db
    store: str = ""  # "": none; a directory or redis://host:port/db shared by the campaign's hosts
    coverage: bool = False
    export: bool = True
    repro_s: float | None = None  # time for repro checks at the end; None: repro_time(budget_s)
    progress: str = "auto"  # auto | tty | plain | none


def repro_time(budget_s: float) -> float:
    """The default time for a campaign's repro checks: half its budget, at least two minutes (a
    check is about a minute on 2 cores; new findings go first)."""
    return max(120.0, budget_s / 2)


WORKERS_PER_CORE_OF_A_GPU = 0.75
"""Workers sharing one GPU per core that GPU's share of the machine has, at most 12: on an H200
with 16 cores, `python -m fuzz bench --workers 8,12,16` ran 81, 92 and 89 cases/min, and
`--workers 8,12` 132 and 294 in a later run (naive 28 and 38; see README "Performance").
Benchmarking only picks autotuning's winner, and the workers of one GPU time kernels one at a
time (fuzz.probe.speedups.serialize_gpu_benchmarks): every oracle sees the same choices."""


def default_workers(device: str) -> int:
    """Workers per GPU on CUDA (0.75 per core of the GPU's share, at most 12; 12 with 16 cores);
    on the CPU one per core, at most 8 (measured on 2 cores: two workers ran the bench's cases
    1.7x faster than one with both cores for its compiles)."""
    if device == "cuda":
        share = usable_cpus() // max(1, len(visible_gpu_ids()))
        return max(1, min(12, int(share * WORKERS_PER_CORE_OF_A_GPU)))
    return max(1, min(8, usable_cpus()))


def plan_workers(opts: CampaignOptions) -> list[str | None]:
    """The GPU (CUDA_VISIBLE_DEVICES value) of each worker: "" hides GPUs, None inherits."""
    gpus = visible_gpu_ids() if opts.device != "cpu" else []
    if opts.device == "cuda" and not gpus:
        raise CampaignError("--device cuda: no GPU is visible on this machine")
    if gpus:
        n = opts.workers or default_workers("cuda") * len(gpus)
        return [gpus[i % len(gpus)] for i in range(n)]
    from strategies.cases import DEVICE_OPS

    unsupported = [op for op in opts.ops if op not in DEVICE_OPS["cpu"]]
    if unsupported:
        raise CampaignError(f"--op {unsupported[0]} does not run on the CPU (it runs: {', '.join(DEVICE_OPS['cpu'])})")
    n = opts.workers or default_workers("cpu")
    return ["" if opts.device == "cpu" else None] * n


def prepare_out_dir(out: Path) -> Path:
    """Create `out` and prove it is writable; CampaignError (one line) otherwise."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise CampaignError(f"cannot write to output directory {out}: {e.strerror or e}") from None
    return out


@contextlib.contextmanager
def campaign_lock(out: Path) -> Iterator[None]:
    """One running campaign per output directory (the kernel drops the lock if it is killed)."""
    with open(out / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            raise CampaignError(f"another campaign is running in {out} (pid {f.read().strip() or '?'})") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield


class Interrupts:
    """SIGINT / SIGTERM while a campaign runs: the first stops the drivers gently, a second one
    (or any during the repro checks at the end) stops everything now."""

    def __init__(self, coordinator: Coordinator, emit: Callable[[str], None]) -> None:
        self.coordinator, self.emit = coordinator, emit
        self.signals: list[int] = []
        self.finishing = False
        self.cancel = threading.Event()  # the repro checks stop when set

    def __call__(self, signum: int, _frame: Any) -> None:
        self.signals.append(signum)
        name = signal.Signals(signum).name
        if len(self.signals) == 1 and not self.finishing:
            self.emit(f"{name}: stopping after the current cases, then checking repros and writing reports "
                      "(again to stop at once)")
            self.coordinator.request_stop()
        elif not self.cancel.is_set():
            self.emit(f"{name}: stopping now; the reports are written, the repros not checked")
            self.coordinator.abort()
            self.cancel.set()

    @property
    def exit_status(self) -> int | None:
        return 128 + self.signals[0] if self.signals else None

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def run_campaign(opts: CampaignOptions, emit: Callable[[str], None] | None = None) -> int:
    """Run a campaign into `opts.out` (resuming what is there). Returns the exit status: 1 when
    the directory holds new (unknown) findings, 0 when it does not, 128 + N when signal N cut it
    short (reports written all the same); CampaignError on bad input."""
    emit = emit or (lambda line: print(line, file=sys.stderr, flush=True))
    gpus = plan_workers(opts)
    shared = None
    try:
        if opts.store:
            shared = open_store(opts.store)
            shared.check()
        if is_url(opts.db):
            open_store(opts.db).check()
    except StoreError as e:
        raise CampaignError(str(e)) from None
    out = prepare_out_dir(opts.out)

    def warn(message: str) -> None:
        emit(f"warning: {message}")

    with campaign_lock(out):
        store = FindingsStore(out, warn)
        record = load_campaign(out, warn)
        record.setdefault("host_id", f"{socket.gethostname()}-{secrets.token_hex(3)}")
        sync = None
        if shared is not None:
            record["store"] = shared.label
            sync = StoreSync(shared, record["host_id"], emit)
            for f in store:  # a resumed host writes all it has: the store may have missed some
                sync.finding(f)
        coordinator = Coordinator(opts, store, record, emit, sync)
        resumed = f", resuming {len(record['sessions']) - 1} earlier session(s)" if len(record["sessions"]) > 1 else ""
        db = opts.db or (shared.examples_spec() if shared is not None else str(out / "examples"))
        interrupts = Interrupts(coordinator, emit)
        with interrupts.installed():
            coordinator.start(gpus, db)
            emit(f"campaign in {out}: budget {opts.budget_s:g}s, seed {opts.seed}, {len(coordinator.drivers)} "
                 f"worker(s){resumed}" + (f", store {shared.label} as host {record['host_id']}" if shared else ""))
            try:
                coordinator.loop()
            finally:
                session = coordinator.session
                session["ended"] = now()
                session["status"] = "failed" if coordinator.fatal else ("interrupted" if interrupts.signals
                                                                        else "finished")
                coordinator.sample(coordinator.coverage_now())
                coordinator.save_record()
                coordinator.progress.finish(session, store)
            if coordinator.fatal:
                if sync is not None:
                    sync.drain(timeout_s=10)  # what was found before the failure
                raise CampaignError(coordinator.fatal)
            interrupts.finishing = True
            status = finish(out, store, record, opts, emit, interrupts.cancel, sync, coordinator.coverage)
        return interrupts.exit_status or status


def finish(out: Path, store: FindingsStore, record: dict[str, Any], opts: CampaignOptions,
           emit: Callable[[str], None], cancel: threading.Event, sync: StoreSync | None,
           coverage: dict[str, Any] | None) -> int:
    """After the drivers: coverage (as last sampled), repro export (verified unless cancelled),
    reports, the shared store's last writes, the exit status."""
    from fuzz.export import report

    if coverage is not None:
        record["coverage"] = coverage
        write_json_atomic(out / CAMPAIGN_FILE, record)
    if opts.export and len(store) and not cancel.is_set():
        from fuzz.export.repro import export_findings

        time_s = repro_time(opts.budget_s) if opts.repro_s is None else opts.repro_s
        done = export_findings(store, out / "repros", emit=emit, timeout_s=max(300.0, 2 * opts.case_timeout_s),
                               cancel=cancel, time_s=time_s)
        if unchecked := sum(1 for _, _, r in done if r is not None and r.skipped and not cancel.is_set()):
            emit(f"{unchecked} repro(s) written but not checked (--repro-time {time_s:g}s spent); "
                 f"check them with: python -m fuzz export {out}")
    samples = read_samples(out / SAMPLES_FILE, lambda message: emit(f"warning: {message}"))
    paths = report.write_reports(out, list(store), [record], samples)
    emit(report.summary_line(list(store), [record]))
    emit("reports: " + ", ".join(str(p) for p in paths))
    if sync is not None:
        for f in store:
            sync.finding(f)  # with their repro results
        sync.campaign(record, sync.samples)
        if not sync.drain(timeout_s=0 if cancel.is_set() else 60):
            emit(f"warning: {sync.pending} change(s) not written to the store {sync.store.label}: run again with "
                 f"--out {out} and the same --store to write them")
        else:
            emit(f"the whole campaign: python -m fuzz report {sync.store.label}")
    return 1 if any(f.is_new for f in store) else 0
