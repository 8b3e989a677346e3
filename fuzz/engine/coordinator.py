"""A campaign's coordinator: starts the drivers, keeps the findings, samples progress.

Processes (started with a clean `python`, except a CPU machine's workers: forked from a zygote
that imported torch and inductor but never compiled):

    coordinator (Coordinator)          one per host: findings, shared store, progress, samples
      driver i (driver.driver_main)    up to 12 per GPU (or N on a CPU machine): Hypothesis, shrinking
        zygote i (zygote.zygote_main)  CPU machines: imports once, forks driver i's workers (not with --coverage)
          worker i (worker.worker_main) torch + inductor: evaluates one case at a time, isolated

They talk through pipes in the typed messages of fuzz.engine.messages.

Every sighting a driver reports goes into the output directory's findings store at once (and to
the shared store, when there is one, through `StoreSync`). Claims (which finding a driver
minimizes) are passed to every driver, and to and from the other hosts. Every `SAMPLE_S` the
campaign's state is appended to `samples.jsonl` (the dashboard's time series).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

from fuzz.engine.children import Child, spawn_python
from fuzz.engine.driver import LOG_DIR
from fuzz.engine.machine import usable_cpus
from fuzz.engine.messages import (
    CaseRan,
    Claim,
    Claimed,
    DriverConfig,
    DriverDone,
    DriverReady,
    Fatal,
    FromDriver,
    Log,
    Minimized,
    Sighted,
    Stop,
    ToDriver,
    WorkerRestarted,
)
from fuzz.store.findings import CAMPAIGN_FILE, Finding, FindingsStore, now, write_json_atomic
from fuzz.store.shared_store import SAMPLES_FILE, StoreSync
from fuzz.tools.progress import Progress

SAMPLE_S = 30.0
STOP_GRACE_S = 30.0
"""How long after the budget, `--shrink-time` and `--case-timeout` the drivers get to stop their
workers and end; then they are killed (the campaign's bound: README "Campaigns")."""


@dataclasses.dataclass
class _DriverHandle:
    index: int
    child: Child[ToDriver, FromDriver]
    done: bool = False
    device: str = ""
    deadline: float | None = None  # when its budget ends: its worker's ready time + the budget


class Coordinator:
    def __init__(self, opts: Any, store: FindingsStore, record: dict[str, Any], emit: Callable[[str], None],
                 sync: StoreSync | None = None) -> None:
        self.opts, self.store, self.record, self.emit, self.sync = opts, store, record, emit, sync
        self.session: dict[str, Any] = {
            "index": len(record["sessions"]), "started": now(), "ended": None, "status": "running",
            "seed": opts.seed, "budget_s": opts.budget_s, "device": opts.device, "workers": 0,
            "filters": {"ops": list(opts.ops), "backends": list(opts.backends), "dtypes": list(opts.dtypes)},
            "profile": opts.profile, "cases": 0, "rejected": 0, "shrink_cases": 0, "restarts": 0, "seconds": 0.0,
            "by_op": {}, "rejected_by_op": {}, "drawn": {}, "unavailable": {}, "host": socket.gethostname(),
            "env": None}
        for earlier in record["sessions"]:
            if earlier.get("status") == "running":  # we hold the lock: that campaign was killed
                earlier["status"] = "killed"
        record["sessions"].append(self.session)
        self.started = time.time()
        self.deadline: float | None = None  # the first worker's ready time + the budget
        self.drivers: list[_DriverHandle] = []
        self.fatal: str | None = None
        self.stopping = self.aborted = False
        self.progress = Progress(opts.progress, opts.budget_s, emit)
        self.samples_path = opts.out / SAMPLES_FILE
        self.samples: list[dict[str, Any]] = []
        self.coverage: dict[str, Any] | None = None  # the last coverage summary (run --coverage)
        self.broadcast_claims: set[str] = set()
        self._saved = self._sampled = 0.0
        self._sampled_cases = 0

    # --- persistence ------------------------------------------------------------------------------

    def save_record(self) -> None:
        self.session["seconds"] = round(time.time() - self.progress.started, 1)  # since the first worker was ready
        write_json_atomic(self.opts.out / CAMPAIGN_FILE, self.record)
        self._saved = time.time()
        if self.sync is not None:
            self.sync.campaign(self.record, self.samples)

    def sample(self, coverage: float | None = None) -> dict[str, Any]:
        """Append the campaign's state now to samples.jsonl (and keep it for the shared store)."""
        t = time.time()
        findings = list(self.store)
        span = t - (self._sampled or self.progress.started)
        sample = {"t": round(t, 3), "host_id": self.record.get("host_id", ""), "session": self.session["index"],
                  "elapsed": round(t - self.progress.started, 1), "cases": self.session["cases"],
                  "rejected": self.session["rejected"],
                  "cases_per_min": round(60 * (self.session["cases"] - self._sampled_cases) / span, 2) if span > 0
                  else 0.0,
                  "distinct": len(findings), "new": sum(f.is_new for f in findings),
                  "known": sum(not f.is_new for f in findings), "coverage": coverage}
        self._sampled, self._sampled_cases = t, self.session["cases"]
        with open(self.samples_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(sample, sort_keys=True) + "\n")
        self.samples.append(sample)
        return sample

    def coverage_now(self) -> float | None:
        """The coverage reached so far (percent; None unless measured); keeps the summary."""
        if not self.opts.coverage:
            return None
        from fuzz.tools.coverage_report import coverage_summary

        with contextlib.suppress(Exception):  # a worker may be writing its data file right now
            self.coverage = coverage_summary(self.opts.out / "coverage")
        return self.coverage["percent"] if self.coverage else None

    def publish(self, finding: Finding) -> None:
        if self.sync is not None:
            self.sync.finding(finding)

    # --- drivers ------------------------------------------------------------------------------------

    def start(self, gpus: list[str | None], db: str) -> None:
        """Start one driver per entry of `gpus` (its CUDA_VISIBLE_DEVICES: "" hides GPUs, None
        inherits), all sharing the example database `db`."""
        self.session["workers"] = len(gpus)
        claimed = sorted({f.key for f in self.store if f.minimal_case is not None}
                         | (self.sync.claimed if self.sync else set()))
        self.broadcast_claims.update(claimed)
        for i, gpu in enumerate(gpus):
            child: Child[ToDriver, FromDriver] = spawn_python(
                "fuzz.engine.driver.driver_main", {} if gpu is None else {"CUDA_VISIBLE_DEVICES": gpu},
                self.opts.out / LOG_DIR / f"driver-{i}.log")
            child.to_child.send(DriverConfig(
                index=i, gpu=gpu, device=self.opts.device, seed=self.opts.seed, session=self.session["index"],
                budget_s=self.opts.budget_s, shrink_s=self.opts.shrink_s, case_timeout_s=self.opts.case_timeout_s,
                ops=tuple(self.opts.ops), backends=tuple(self.opts.backends), dtypes=tuple(self.opts.dtypes),
                profile=self.opts.profile, db=db, out=str(self.opts.out), claimed=tuple(claimed),
                coverage=self.opts.coverage, host_id=self.record.get("host_id", ""),
                compile_threads=max(1, usable_cpus() // len(gpus))))
            self.drivers.append(_DriverHandle(i, child))
        self.save_record()

    def broadcast(self, message: ToDriver) -> None:
        for d in self.drivers:
            if not d.done:
                with contextlib.suppress(OSError):
                    d.child.to_child.send(message)

    def request_stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.broadcast(Stop())

    def abort(self) -> None:
        """Stop now: kill the drivers (and with them their workers); what they found is kept."""
        self.aborted = True
        for d in self.drivers:
            with contextlib.suppress(OSError):
                d.child.proc.kill()

    def handle(self, d: _DriverHandle, message: FromDriver) -> None:
        s = self.session
        if isinstance(message, CaseRan):
            s["cases"] += 1
            s["rejected"] += message.rejected
            s["shrink_cases"] += message.shrinking
            s["by_op"][message.op] = s["by_op"].get(message.op, 0) + 1
            if message.rejected:
                s["rejected_by_op"][message.op] = s["rejected_by_op"].get(message.op, 0) + 1
            for feature in message.features:
                s["drawn"][feature] = s["drawn"].get(feature, 0) + 1
            for choice in message.unavailable:  # beyond the GPU's resources: counted, no finding
                s["unavailable"][choice] = s["unavailable"].get(choice, 0) + 1
        elif isinstance(message, Sighted):
            stored, first = self.store.add(Finding.from_json(message.finding))
            self.publish(stored)
            if first:
                self.progress.event(f"{'NEW' if stored.is_new else 'known bug'} finding [{stored.severity}] "
                                    f"{stored.key} (worker {d.index})")
                self.save_record()
        elif isinstance(message, Claim):
            self.broadcast_claims.add(message.key)
            self.broadcast(Claimed(message.key))
            if self.sync is not None:
                self.sync.claim(message.key)
        elif isinstance(message, Minimized):
            finding = self.store.findings.get(message.key)
            if finding is not None:
                finding.minimal_case, finding.minimization = message.case, message.minimization
                finding.minimal_message = message.message
                self.store.save(finding)
                self.publish(finding)
                self.progress.event(f"minimized {finding.key}: {len(message.minimization['dropped'])} "
                                    f"part(s) dropped after {message.minimization['hypothesis_shrinks']} "
                                    "hypothesis shrink(s)")
        elif isinstance(message, WorkerRestarted):
            s["restarts"] += 1
            self.progress.event(f"worker {message.worker} {message.reason}: restarting it")
        elif isinstance(message, DriverReady):
            d.deadline = d.deadline or time.time() + self.opts.budget_s
            if self.deadline is None:
                self.deadline = time.time() + self.opts.budget_s
                self.progress.begin()
            d.device = message.device
            s["device"], s["env"] = message.device, s["env"] or message.env
        elif isinstance(message, Log):
            self.progress.event(message.line)
        elif isinstance(message, Fatal):
            self.fatal = self.fatal or message.reason
            self.request_stop()
        elif isinstance(message, DriverDone):
            d.done = True

    def share_claims(self) -> None:
        """Tell the drivers which findings other hosts minimize (so they do not shrink them too)."""
        if self.sync is None:
            return
        for key in sorted(self.sync.claimed - self.broadcast_claims):
            self.broadcast_claims.add(key)
            self.broadcast(Claimed(key))

    def loop(self) -> None:
        while any(not d.done for d in self.drivers) and not self.aborted:
            # each driver's budget starts when its worker is ready (a loaded GPU host starts some a minute late)
            end = max(d.deadline or self.started + 900 + self.opts.budget_s for d in self.drivers if not d.done)
            hard_stop = end + self.opts.shrink_s + self.opts.case_timeout_s + STOP_GRACE_S
            live = {d.child.from_child.conn: d for d in self.drivers if not d.done}
            for d in [live[conn] for conn in wait(list(live), timeout=0.5) if isinstance(conn, Connection)]:
                try:
                    message = d.child.from_child.recv()
                except (EOFError, OSError):
                    d.done = True
                    if not self.fatal and not self.aborted:
                        self.progress.event(f"driver {d.index} exited unexpectedly (see "
                                            f"{self.opts.out / LOG_DIR / f'driver-{d.index}.log'})")
                    continue
                self.handle(d, message)
            if time.time() > hard_stop:
                self.progress.event("drivers did not stop in time: killing them")
                break
            self.progress.update(self.session, self.store)
            if self.deadline is not None and time.time() - (self._sampled or self.progress.started) >= SAMPLE_S:
                self.sample(self.coverage_now())
            if time.time() - self._saved > 2.0:
                self.save_record()
            if self.sync is not None:
                self.sync.flush()
                self.share_claims()
        for d in self.drivers:
            d.child.close(grace_s=0 if not d.done else 10)
