"""The campaign engine: drivers run Hypothesis, workers run cases, the coordinator keeps findings.

Processes (all started with a clean `python`, none forked from a process that imported torch):

    coordinator (run_campaign)        one per campaign: findings store, progress, reports
      driver i (driver_main)          one per GPU (or N on a CPU machine): Hypothesis, shrinking
        worker i (workers.worker_main) torch + inductor: evaluates one case at a time, isolated

Each driver runs the `@given(cases(...))` test `_campaign_case` in rounds of the profile's
`max_examples`, each round with its own seed derived from (campaign seed, session, driver,
round), so drivers and hosts explore disjoint streams while sharing one example database. The
test body does not fail for findings it has already seen: it reports them (the coordinator
counts them) and returns, so exploration goes on. The first time a driver sees a finding key no
one has claimed, it claims it and fails the test: Hypothesis shrinks the case while the same key
keeps showing up, and `fuzz.minimize` then drops config keys and graph nodes. The budget is wall
clock; a shrink in progress when it runs out may finish (at most `shrink_s` per finding).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from fuzz.findings import (CAMPAIGN_FILE, PROCESS_ORACLE, Finding, FindingsStore, load_campaign, now,
                           record_from_violation, write_json_atomic)
from fuzz.workers import Child, Executor, Outcome, WorkerStartError, child_connections, spawn_python, visible_gpu_ids

LOG_DIR = "logs"


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
    workers: int | None = None  # None: one per GPU, or default_cpu_workers() on a CPU machine
    case_timeout_s: float = 300.0
    shrink_s: float = 60.0
    db: str = ""  # "" : OUT/examples; "none"; a directory; or redis://host:port/db
    coverage: bool = False
    export: bool = True
    progress: str = "auto"  # auto | tty | plain | none


def default_cpu_workers() -> int:
    """Each worker compiles with several threads: half the cores, at most 8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def derive_seed(*parts: object) -> int:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:15], 16)


def backends_of(case_json: dict[str, Any]) -> set[str]:
    value = str(case_json.get("config", {}).get("max_autotune_gemm_backends", ""))
    return {b.strip().upper() for b in value.split(",") if b.strip()}


# --- the driver: Hypothesis in its own process ---------------------------------------------------

class _Stop(BaseException):
    """The budget is spent (or the coordinator asked to stop): abandon the Hypothesis run."""


class _ShrinkTimeUp(BaseException):
    """The time allowed for shrinking this finding is spent: keep the smallest case so far."""


class _Found(AssertionError):
    """Fails the Hypothesis test so that it shrinks the case while the same finding key shows up."""


_ACTIVE: Driver | None = None


def _campaign_case(case: Any) -> None:
    """The campaign's Hypothesis test (one function, so its example-database key is stable across
    drivers and hosts): run the case in the isolated worker and report what it found."""
    assert _ACTIVE is not None
    _ACTIVE.body(case)


class Driver:
    def __init__(self, cfg: dict[str, Any], inbox: Connection, outbox: Connection) -> None:
        self.cfg, self.inbox, self.outbox = cfg, inbox, outbox
        self.index = int(cfg["index"])
        self.claimed: set[str] = set(cfg["claimed"])
        self.stop_requested = False
        self.executor = Executor(self.index, log_dir=Path(cfg["out"]) / LOG_DIR, gpu=cfg["gpu"],
                                 case_timeout_s=cfg["case_timeout_s"],
                                 coverage_dir=Path(cfg["out"]) / "coverage" if cfg["coverage"] else None)
        self.env: dict[str, Any] = {}
        self.target: str | None = None
        self.target_case: dict[str, Any] | None = None
        self.deadline = float("inf")  # set when the worker is ready: start-up does not eat the budget
        self.target_claimed_at = self.target_until = 0.0
        self.shrink_steps = 0
        self.seen: dict[str, Outcome] = {}  # outcomes of the cases this driver ran, by fingerprint
        self.sighted: set[str] = set()  # finding keys this driver has reported
        self.pending: dict[str, dict[str, Any]] = {}  # unclaimed keys seen while shrinking, with their case
        self.spent = {"exploring": 0.0, "shrinking": 0.0}  # seconds of cases run

    # messages
    def send(self, kind: str, payload: Any = None) -> None:
        try:
            self.outbox.send((kind, payload))
        except OSError:  # the coordinator is gone: nothing left to report to
            os._exit(1)

    def poll_inbox(self) -> None:
        try:
            while self.inbox.poll():
                kind, payload = self.inbox.recv()
                if kind == "claimed":
                    self.claimed.add(payload)
                elif kind == "stop":
                    self.stop_requested = True
        except (EOFError, OSError):
            os._exit(1)

    def out_of_time(self) -> bool:
        self.poll_inbox()
        return self.stop_requested or time.time() >= self.deadline

    # the main loop
    def run(self) -> None:
        try:
            self.env = self.executor.start()
        except WorkerStartError as e:
            self.send("fatal", str(e))
            return
        self.deadline = time.time() + self.cfg["budget_s"]
        device = self.cfg["device"] or self.env["device"]
        self.send("ready", {"worker": self.index, "env": self.env, "device": device})
        available = self.env["ops"]
        unsupported = [op for op in self.cfg["ops"] if op not in available]
        if unsupported:
            self.send("fatal", f"--op {unsupported[0]} does not run on {device} here (it runs: {', '.join(available)})")
            return
        strategy = case_strategy(device, self.cfg["ops"] or available, self.cfg["backends"], self.cfg["dtypes"])
        from hypothesis.errors import Unsatisfiable

        rounds = 0
        while not self.out_of_time():
            seed = derive_seed(self.cfg["seed"], self.cfg["session"], self.index, rounds)
            try:
                self.run_round(strategy, seed)
            except Unsatisfiable:
                self.send("fatal", f"no case on {device} matches the --op/--backend/--dtype filters")
                break
            rounds += 1
        self.executor.stop()
        self.send("done", {"worker": self.index, "rounds": rounds, "restarts": self.executor.restarts})

    def run_round(self, strategy: Any, seed: int) -> None:
        global _ACTIVE
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as with_seed
        from hypothesis.errors import Unsatisfiable

        from fuzz.profiles import register_profiles

        register_profiles()
        profile = settings.get_profile(self.cfg["profile"])
        test = settings(parent=profile, database=open_database(self.cfg["db"]), deadline=None, derandomize=False,
                        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                        verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False,
                        suppress_health_check=list(HealthCheck))(given(case=strategy)(_campaign_case))
        self.target, self.target_case, self.shrink_steps = None, None, 0
        _ACTIVE = self
        try:
            with_seed(seed)(test)()
        except (_Stop, _ShrinkTimeUp, _Found):
            pass
        except Unsatisfiable:
            raise
        except Exception as e:  # noqa: BLE001 - Hypothesis' own complaints (flaky shrink, ...) end the round only
            if self.target is None:
                self.send("log", f"driver {self.index}: hypothesis round ended with {type(e).__name__}: "
                                 f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}")
        finally:
            _ACTIVE = None
        if self.target is not None:
            assert self.target_case is not None
            self.minimize(self.target, self.target_case, self.target_claimed_at, self.shrink_steps)
            self.target = None
        while self.pending and not self.out_of_time() and self.spent["shrinking"] <= self.spent["exploring"]:
            key, case_json = self.pending.popitem()
            if key not in self.claimed:
                self.claimed.add(key)
                self.send("claim", key)
                self.minimize(key, case_json, time.time(), 0)

    def body(self, case: Any) -> None:
        from hypothesis import reject, target

        if self.target is None and self.out_of_time():
            raise _Stop
        if self.target is not None:
            self.poll_inbox()
            if self.stop_requested:
                raise _Stop
            if time.time() > self.target_until:
                raise _ShrinkTimeUp
        case_json = case.to_json()
        outcome, fresh = self.evaluate(case_json)
        found = self.report(case_json, outcome, fresh)
        if outcome.verdict is not None:
            target(outcome.verdict["error_ratio"], label="compiled error / tolerance")
        if self.target is None and self.spent["shrinking"] <= self.spent["exploring"]:  # shrinking: at most half
            fresh = sorted(k for k in found if k not in self.claimed)
            if fresh:
                self.target_claimed_at = time.time()
                self.target_until = self.target_claimed_at + self.cfg["shrink_s"]
                self.target, self.shrink_steps = fresh[0], -1
                self.claimed.add(fresh[0])
                self.pending.pop(fresh[0], None)
                self.send("claim", fresh[0])
        if self.target in found:
            self.target_case = case_json
            self.shrink_steps += 1
            raise _Found(self.target)  # one raise site: Hypothesis tells failures apart by where they are raised
        if (outcome.invalid or (outcome.verdict is not None and outcome.verdict["rejected"])) and not found:
            reject()

    def evaluate(self, case_json: dict[str, Any]) -> tuple[Outcome, bool]:
        """The case's outcome, and whether it ran now (False: this driver ran it before; every
        Hypothesis round starts with the same simplest case and replays the database)."""
        fingerprint = hashlib.sha256(json.dumps(case_json, sort_keys=True).encode()).hexdigest()
        if fingerprint in self.seen:
            return self.seen[fingerprint], False
        began = time.monotonic()
        outcome = self.executor.run(case_json)
        self.spent["exploring" if self.target is None else "shrinking"] += time.monotonic() - began
        if len(self.seen) < 200_000:
            self.seen[fingerprint] = outcome
        if outcome.death is not None:
            self.send("restart", {"worker": self.index, "reason": outcome.death})
        self.send("case", {"worker": self.index, "op": case_json["op"], "seconds": outcome.seconds,
                           "rejected": bool(outcome.invalid or (outcome.verdict and outcome.verdict["rejected"])),
                           "shrinking": self.target is not None})
        return outcome, True

    def report(self, case_json: dict[str, Any], outcome: Outcome, fresh: bool) -> set[str]:
        """Send every finding the outcome shows to the coordinator; returns their keys. A sighting
        counts when the case ran now and is an independent sample: while shrinking, only a key
        this driver never saw before counts (shrink candidates are close copies of one case)."""
        records = sightings(case_json, outcome, self.env, {"host": self.env.get("host", socket.gethostname()),
                                                           "worker": self.index, "seed": self.cfg["seed"],
                                                           "session": self.cfg["session"]})
        for record in records:
            if not fresh or (self.target is not None and record.key in self.sighted):
                record.count = 0
            self.sighted.add(record.key)
            if record.key != self.target and record.key not in self.claimed:
                self.pending.setdefault(record.key, case_json)  # minimized later if no one claims it first
            self.send("finding", record.to_json())
        return {r.key for r in records}

    def minimize(self, key: str, case_json: dict[str, Any], claimed_at: float, shrinks: int) -> None:
        """Delta-minimize a (Hypothesis-shrunk) failing case in its time left, then report it."""
        from fuzz.minimize import delta_minimize

        def fails(candidate: dict[str, Any]) -> bool:
            self.poll_inbox()
            if self.stop_requested:
                return False
            outcome, fresh = self.evaluate(candidate)
            return key in self.report(candidate, outcome, fresh)

        self.target = key  # sightings of other keys on the way are independent of it: see report()
        minimal, how = delta_minimize(case_json, fails, max(0.0, claimed_at + self.cfg["shrink_s"] - time.time()))
        self.target = None
        self.send("minimized", {"key": key, "case": minimal, "minimization": {
            "hypothesis_shrinks": shrinks, "delta_steps": how.steps, "dropped": how.dropped,
            "complete": how.complete and not self.stop_requested, "seconds": round(time.time() - claimed_at, 1)}})


def _known_death(case_json: dict[str, Any], death: dict[str, str], env: dict[str, Any]) -> dict[str, str] | None:
    """The registered bug (name, tracking) that explains a worker's death on this case, if any."""
    from fuzz.known_bugs import candidates
    from oracles.model import Violation
    from strategies.case import Case, CaseError

    try:
        case = Case.from_json(case_json)
    except CaseError:
        return None
    [(_, bug)] = candidates([Violation(**death)], case, str(env.get("torch", "")))
    return {"name": bug.name, "tracking": bug.tracking} if bug else None


def sightings(case_json: dict[str, Any], outcome: Outcome, env: dict[str, Any],
              origin: dict[str, Any]) -> list[Finding]:
    """Every finding one outcome shows: the worker's own death, new violations, known bugs."""
    verdict = outcome.verdict or {"violations": [], "known": []}
    every = verdict["violations"] + [k["violation"] for k in verdict["known"]]
    records = []
    if outcome.death is not None:
        death = {"oracle": PROCESS_ORACLE, "severity": "crash", "signature": f"{outcome.death}:{case_json['op']}",
                 "message": f"{case_json['op']}: {outcome.detail}"}
        records.append(record_from_violation(death, case_json, known_bug=_known_death(case_json, death, env),
                                             violations=[death, *every],
                                             versions=env, origin=origin, traceback=outcome.last_words))
    failure = verdict.get("failure")
    raised = f"{failure['type']}: {failure['message']} (innermost inductor frame: {failure['frame'] or '-'})" \
        if failure else None  # what the harness keeps of a compile-time exception
    for v, bug in [(v, None) for v in verdict["violations"]] + [(k["violation"], k["bug"]) for k in verdict["known"]]:
        records.append(record_from_violation(v, case_json, known_bug=bug, violations=every, versions=env,
                                             origin=origin, traceback=raised if v["oracle"] == "crash" else None))
    return records


def case_strategy(device: str, ops: list[str], backends: list[str], dtypes: list[str]) -> Any:
    """`cases()` of `ops` on `device`, restricted by the campaign's filters. (The ops are given:
    letting `cases` ask torch which ops a GPU runs would initialize CUDA in the driver.)"""
    from hypothesis import strategies as st

    from strategies.cases import cases

    strategy = st.one_of([cases(op=op, device=device) for op in ops])
    if backends:
        allowed = set(backends)
        strategy = strategy.filter(lambda c: backends_of(c.to_json()) <= allowed)
    if dtypes:
        strategy = strategy.filter(lambda c: c.inputs[0].dtype in dtypes)
    return strategy


def open_database(spec: str) -> Any:
    """The Hypothesis example database named by `spec` (a directory, redis://..., or none)."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    if spec == "none":
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(spec), key_prefix=b"mm-autotune-fuzz:")
    return DirectoryBasedExampleDatabase(spec)


def driver_main(read_fd: int, write_fd: int) -> None:
    inbox, outbox = child_connections(read_fd, write_fd)
    kind, cfg = inbox.recv()
    assert kind == "config", kind
    Driver(cfg, inbox, outbox).run()


# --- the coordinator ------------------------------------------------------------------------------

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
def campaign_lock(out: Path) -> Any:
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


@dataclasses.dataclass
class _DriverHandle:
    index: int
    child: Child
    done: bool = False
    device: str = ""


class Coordinator:
    def __init__(self, opts: CampaignOptions, store: FindingsStore, record: dict[str, Any],
                 emit: Callable[[str], None]) -> None:
        from fuzz.report import Progress

        self.opts, self.store, self.record, self.emit = opts, store, record, emit
        self.session: dict[str, Any] = {
            "index": len(record["sessions"]), "started": now(), "ended": None, "status": "running",
            "seed": opts.seed, "budget_s": opts.budget_s, "device": opts.device, "workers": 0,
            "filters": {"ops": list(opts.ops), "backends": list(opts.backends), "dtypes": list(opts.dtypes)},
            "profile": opts.profile, "cases": 0, "rejected": 0, "shrink_cases": 0, "restarts": 0, "seconds": 0.0,
            "by_op": {}, "host": socket.gethostname(), "env": None}
        for earlier in record["sessions"]:
            if earlier.get("status") == "running":  # we hold the lock: that campaign was killed
                earlier["status"] = "killed"
        record["sessions"].append(self.session)
        self.started = time.time()
        self.deadline: float | None = None  # the first worker's ready time + the budget
        self.drivers: list[_DriverHandle] = []
        self.fatal: str | None = None
        self.stopping = False
        self.progress = Progress(opts.progress, opts.budget_s, emit)
        self._saved = 0.0

    def save_record(self) -> None:
        self.session["seconds"] = round(time.time() - self.progress.started, 1)  # since the first worker was ready
        write_json_atomic(self.opts.out / CAMPAIGN_FILE, self.record)
        self._saved = time.time()

    def plan_workers(self) -> list[str | None]:
        """The GPU (CUDA_VISIBLE_DEVICES value) of each worker: "" hides GPUs, None inherits."""
        gpus = visible_gpu_ids() if self.opts.device != "cpu" else []
        if self.opts.device == "cuda" and not gpus:
            raise CampaignError("--device cuda: no GPU is visible on this machine")
        if gpus:
            n = self.opts.workers or len(gpus)
            return [gpus[i % len(gpus)] for i in range(n)]
        n = self.opts.workers or default_cpu_workers()
        return ["" if self.opts.device == "cpu" else None] * n

    def start(self) -> None:
        gpus = self.plan_workers()
        self.session["workers"] = len(gpus)
        claimed = sorted(f.key for f in self.store if f.minimal_case is not None)
        db = self.opts.db or str(self.opts.out / "examples")
        for i, gpu in enumerate(gpus):
            child = spawn_python("fuzz.campaign.driver_main", {} if gpu is None else {"CUDA_VISIBLE_DEVICES": gpu},
                                 self.opts.out / LOG_DIR / f"driver-{i}.log")
            child.to_child.send(("config", {
                "index": i, "gpu": gpu, "device": self.opts.device, "seed": self.opts.seed,
                "session": self.session["index"], "budget_s": self.opts.budget_s, "shrink_s": self.opts.shrink_s,
                "case_timeout_s": self.opts.case_timeout_s, "ops": list(self.opts.ops),
                "backends": list(self.opts.backends), "dtypes": list(self.opts.dtypes),
                "profile": self.opts.profile, "db": db, "out": str(self.opts.out), "claimed": claimed,
                "coverage": self.opts.coverage}))
            self.drivers.append(_DriverHandle(i, child))
        self.save_record()

    def broadcast(self, kind: str, payload: Any = None) -> None:
        for d in self.drivers:
            if not d.done:
                with contextlib.suppress(OSError):
                    d.child.to_child.send((kind, payload))

    def request_stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.broadcast("stop")

    def handle(self, d: _DriverHandle, kind: str, payload: Any) -> None:
        s = self.session
        if kind == "case":
            s["cases"] += 1
            s["rejected"] += payload["rejected"]
            s["shrink_cases"] += payload["shrinking"]
            s["by_op"][payload["op"]] = s["by_op"].get(payload["op"], 0) + 1
        elif kind == "finding":
            stored, first = self.store.add(Finding.from_json(payload))
            if first:
                self.progress.event(f"{'NEW' if stored.is_new else 'known bug'} finding [{stored.severity}] "
                                    f"{stored.key} (worker {d.index})")
                self.save_record()
        elif kind == "claim":
            self.broadcast("claimed", payload)
        elif kind == "minimized":
            finding = self.store.findings.get(payload["key"])
            if finding is not None:
                finding.minimal_case, finding.minimization = payload["case"], payload["minimization"]
                self.store.save(finding)
                self.progress.event(f"minimized {finding.key}: {len(payload['minimization']['dropped'])} "
                                    f"part(s) dropped after {payload['minimization']['hypothesis_shrinks']} "
                                    "hypothesis shrink(s)")
        elif kind == "restart":
            s["restarts"] += 1
            self.progress.event(f"worker {payload['worker']} {payload['reason']}: restarting it")
        elif kind == "ready":
            if self.deadline is None:
                self.deadline = time.time() + self.opts.budget_s
                self.progress.started = time.time()
            d.device = payload["device"]
            s["device"], s["env"] = payload["device"], s["env"] or payload["env"]
        elif kind == "log":
            self.progress.event(payload)
        elif kind == "fatal":
            self.fatal = self.fatal or payload
            self.request_stop()
        elif kind == "done":
            d.done = True

    def loop(self) -> None:
        while any(not d.done for d in self.drivers):
            end = self.deadline if self.deadline is not None else self.started + 900 + self.opts.budget_s
            hard_stop = end + self.opts.shrink_s + self.opts.case_timeout_s + 120
            live = {d.child.from_child: d for d in self.drivers if not d.done}
            for conn in wait(list(live), timeout=0.5):
                d = live[conn]  # type: ignore[index]
                try:
                    kind, payload = conn.recv()  # type: ignore[union-attr]
                except (EOFError, OSError):
                    d.done = True
                    if not self.fatal:
                        self.progress.event(f"driver {d.index} exited unexpectedly (see "
                                            f"{self.opts.out / LOG_DIR / f'driver-{d.index}.log'})")
                    continue
                self.handle(d, kind, payload)
            if time.time() > hard_stop:
                self.progress.event("drivers did not stop in time: killing them")
                break
            self.progress.update(self.session, self.store)
            if time.time() - self._saved > 2.0:
                self.save_record()
        for d in self.drivers:
            d.child.close(grace_s=0 if not d.done else 10)

    def kill_all(self) -> None:
        for d in self.drivers:
            with contextlib.suppress(OSError):
                d.child.proc.kill()


def run_campaign(opts: CampaignOptions, emit: Callable[[str], None] | None = None) -> int:
    """Run a campaign into `opts.out` (resuming what is there). Returns the exit status: 1 when
    the directory holds new (unknown) findings, 0 when it does not, 2 on a fatal error."""
    emit = emit or (lambda line: print(line, file=sys.stderr, flush=True))
    out = prepare_out_dir(opts.out)

    def warn(message: str) -> None:
        emit(f"warning: {message}")

    with campaign_lock(out):
        store = FindingsStore(out, warn)
        record = load_campaign(out, warn)
        coordinator = Coordinator(opts, store, record, emit)
        resumed = f", resuming {len(record['sessions']) - 1} earlier session(s)" if len(record["sessions"]) > 1 else ""
        coordinator.start()
        emit(f"campaign in {out}: budget {opts.budget_s:g}s, seed {opts.seed}, "
             f"{len(coordinator.drivers)} worker(s){resumed}")
        interrupts = 0

        def on_signal(signum: int, _frame: Any) -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:
                coordinator.kill_all()
                raise KeyboardInterrupt
            emit(f"{signal.Signals(signum).name}: stopping after the current cases (again to abort)")
            coordinator.request_stop()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            coordinator.loop()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            coordinator.session["ended"] = now()
            coordinator.session["status"] = "failed" if coordinator.fatal else (
                "interrupted" if interrupts else "finished")
            coordinator.save_record()
            coordinator.progress.finish(coordinator.session, store)
        if coordinator.fatal:
            raise CampaignError(coordinator.fatal)
        return finish(out, store, record, opts, emit)


def finish(out: Path, store: FindingsStore, record: dict[str, Any], opts: CampaignOptions,
           emit: Callable[[str], None]) -> int:
    """After the drivers: coverage, repro export (verified), reports, the exit status."""
    from fuzz import report

    coverage = report.coverage_summary(out / "coverage") if opts.coverage else None
    if coverage is not None:
        record["coverage"] = coverage
        write_json_atomic(out / CAMPAIGN_FILE, record)
    if opts.export and len(store):
        from fuzz.repro import export_findings

        export_findings(store, out / "repros", emit=emit, timeout_s=max(300.0, 2 * opts.case_timeout_s))
    paths = report.write_reports(out, list(store), [record])
    emit(report.summary_line(list(store), [record]))
    emit("reports: " + ", ".join(str(p) for p in paths))
    return 1 if any(f.is_new for f in store) else 0

