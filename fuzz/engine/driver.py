"""A campaign's driver process: it explores its stream of cases (fuzz.engine.stream), runs each in
its isolated worker (fuzz.engine.executor), reports what they show to the coordinator, and shrinks
and minimizes the findings it claims.

Findings are shrunk between rounds, outside the stream. The first finding key a round shows that
no one has claimed is claimed (one a round, while shrinking has taken at most half the driver's
time); after the round a separate Hypothesis run draws the round again up to that case, fails there
and shrinks while the same key keeps showing up (saving what it finds in the example database), and
`fuzz.engine.minimize` then drops config keys and graph nodes. Other unclaimed keys wait and are claimed
and shrunk after later rounds while the budget lasts. Before its stream, driver 0 replays the
example database read-only (earlier sessions' and other hosts' stored cases are counted again, and
a finding no one has minimized is delta-minimized). The budget is wall clock; a finding claimed
before it ran out is still shrunk, for at most `shrink_s` past it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from fuzz.engine.children import child_connections
from fuzz.engine.executor import Executor, Outcome, WorkerStartError
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
    Receiver,
    Sender,
    Sighted,
    Stop,
    ToDriver,
    WorkerRestarted,
)
from fuzz.engine.stream import EndRun, derive_seed, fingerprint, running, stream_strategy, stream_test
from fuzz.store.sightings import rejected, sightings

LOG_DIR = "logs"
STREAM_LOG = "stream-{worker}.tsv"
"""Per driver, in LOG_DIR: one line per case of its stream that it ran (session, round, index,
fingerprint, op), to compare two runs of a seed or find a case's position."""
DRAWN_PREFIXES = ("op:", "dtype:", "backends:", "value:", "spelling:", "consumer:", "prologue:", "weight_form:",
                  "knob:", "stride:")
"""Case features (strategies.cases.case_features) counted for the report's "what was drawn"."""
DRAWN_FLAGS = ("backward", "frozen", "warm_cache", "dynamic", "shared_storage", "every_choice:True", "no_max_autotune",
               "tf32", "reduced_precision")
"""The on/off case features counted too, as `flag:NAME`."""


class _ShrinkTimeUp(BaseException):
    """The time allowed for shrinking this finding is spent: keep the smallest case so far."""


class _Diverged(BaseException):
    """Drawing a round again did not give the finding's case back (or the case no longer shows it)."""


class _Found(AssertionError):
    """Fails the Hypothesis test so that it shrinks the case while the same finding key shows up."""


@dataclasses.dataclass
class Job:
    """A finding to shrink: the first case this driver saw it in, and that case's origin."""

    key: str
    case: dict[str, Any]
    origin: dict[str, Any]


class Driver:
    def __init__(self, cfg: DriverConfig, inbox: Receiver[ToDriver], outbox: Sender[FromDriver]) -> None:
        self.cfg, self.inbox, self.outbox = cfg, inbox, outbox
        self.index = cfg.index
        self.claimed: set[str] = set(cfg.claimed)
        self.stop_requested = False
        self.executor = Executor(self.index, log_dir=Path(cfg.out) / LOG_DIR, gpu=cfg.gpu,
                                 case_timeout_s=cfg.case_timeout_s, compile_threads=cfg.compile_threads,
                                 coverage_dir=Path(cfg.out) / "coverage" if cfg.coverage else None)
        self.env: dict[str, Any] = {}
        self.stream: dict[str, Any] = {}  # what the stream draws from (start_stream)
        self.strategy: Any = None
        self.stream_log: TextIO | None = None
        self.phase = "explore"  # explore | replay | shrink
        self.deadline = float("inf")  # set when the worker is ready: start-up does not eat the budget
        self.shrink_until = 0.0
        self.claim_now: Job | None = None  # the finding this round (or replay) claimed
        self.pending: dict[str, Job] = {}  # unclaimed keys this driver saw, minimized later if no one claims them
        self.seen: dict[str, Outcome] = {}  # outcomes of the cases this driver ran, by fingerprint
        self.sighted: set[str] = set()  # finding keys this driver has reported
        self.spent = {"exploring": 0.0, "shrinking": 0.0}  # seconds of cases run

    # messages
    def send(self, message: FromDriver) -> None:
        try:
            self.outbox.send(message)
        except OSError:  # the coordinator is gone: nothing left to report to
            os._exit(1)

    def poll_inbox(self) -> None:
        try:
            while self.inbox.poll():
                message = self.inbox.recv()
                if isinstance(message, Claimed):
                    self.claimed.add(message.key)
                elif isinstance(message, Stop):
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
            self.send(Fatal(str(e)))
            return
        self.deadline = time.time() + self.cfg.budget_s
        device = self.cfg.device or self.env["device"]
        self.send(DriverReady(self.index, self.env, device))
        available = self.env["ops"]
        unsupported = [op for op in self.cfg.ops if op not in available]
        if unsupported:
            self.send(Fatal(f"--op {unsupported[0]} does not run on {device} here (it runs: {', '.join(available)})"))
            return
        self.start_stream(device, list(self.cfg.ops) or available)
        from hypothesis.errors import Unsatisfiable

        rounds = 0
        log_dir = Path(self.cfg.out) / LOG_DIR
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / STREAM_LOG.format(worker=self.index), "a", encoding="utf-8") as self.stream_log:
            try:
                if self.index == 0:
                    self.replay()
                while not self.out_of_time():
                    self.run_round(rounds)
                    rounds += 1
            except Unsatisfiable:
                self.send(Fatal(f"no case on {device} matches the --op/--backend/--dtype filters"))
        self.executor.stop()
        self.send(DriverDone(self.index, rounds, self.executor.restarts))

    def start_stream(self, device: str, ops: list[str]) -> None:
        from hypothesis import settings

        from fuzz.tools.profiles import register_profiles

        register_profiles()
        self.stream = {"device": device, "ops": list(ops), "backends": list(self.cfg.backends),
                       "dtypes": list(self.cfg.dtypes),
                       "max_examples": settings.get_profile(self.cfg.profile).max_examples}
        self.strategy = stream_strategy(self.stream)

    def hypothesis_run(self, test: Callable[[], None], body: Callable[[Any], None]) -> None:
        """Run `test` with `body` as `_campaign_case`; a run's own end (budget, shrink time, the
        failure that was shrunk, nothing to replay) is no error."""
        from hypothesis.errors import Unsatisfiable

        try:
            with running(body):
                test()
        except (EndRun, _ShrinkTimeUp, _Found, unittest.SkipTest):
            pass
        except Unsatisfiable:
            raise
        except Exception as e:  # noqa: BLE001 - Hypothesis' own complaints (flaky shrink, ...) end this run only
            if self.phase != "shrink":
                self.send(Log(f"driver {self.index}: hypothesis {self.phase} ended with {type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"))

    def run_round(self, number: int) -> None:
        """Explore round `number` of the stream, then shrink what it claimed (and what waits, while
        the budget lasts)."""
        from hypothesis import Phase

        seed = derive_seed(self.cfg.seed, self.cfg.session, self.index, number)
        index = -1

        def explore(case: Any) -> None:
            nonlocal index
            index += 1
            if self.out_of_time():
                raise EndRun
            case_json = case.to_json()
            digest = fingerprint(case_json)
            if self.stream_log is not None:
                self.stream_log.write(f"{self.cfg.session}\t{number}\t{index}\t{digest[:16]}\t"
                                      f"{case_json['op']}\n")
                self.stream_log.flush()
            outcome, fresh = self.evaluate(case_json, case)
            origin = self.origin("explore", round=number, index=index, stream=self.stream)
            self.claim_one(self.report(case_json, outcome, fresh, origin))

        self.phase = "explore"
        self.hypothesis_run(stream_test(self.strategy, seed, self.stream["max_examples"], (Phase.generate,)),
                            explore)
        self.shrink_found()

    def replay(self) -> None:
        """Run the example database's stored cases once, read-only (nothing is deleted: other hosts
        and later sessions replay them too), then shrink what they showed that no one has."""
        from hypothesis import Phase
        from hypothesis.database import ReadOnlyDatabase

        from fuzz.store.shared_store import open_database

        database = open_database(self.cfg.db)
        if database is None:
            return

        def replay(case: Any) -> None:
            if self.out_of_time():
                raise EndRun
            case_json = case.to_json()
            outcome, fresh = self.evaluate(case_json, case)
            self.claim_one(self.report(case_json, outcome, fresh, self.origin("replay")))

        self.phase = "replay"
        seed = derive_seed(self.cfg.seed, self.cfg.session, self.index, "replay")
        self.hypothesis_run(stream_test(self.strategy, seed, self.stream["max_examples"], (Phase.reuse,),
                                        ReadOnlyDatabase(database)), replay)
        self.shrink_found()

    def claim_one(self, found: set[str]) -> None:
        """Claim the first key of `found` no one has, unless this round claimed one already or
        shrinking has taken more time than exploring."""
        if self.claim_now is not None or self.spent["shrinking"] > self.spent["exploring"]:
            return
        self.poll_inbox()  # another driver may have claimed it while the case ran
        fresh = sorted(k for k in found if k not in self.claimed)
        if fresh:
            self.claim(fresh[0])
            self.claim_now = self.pending.pop(fresh[0])

    def claim(self, key: str) -> None:
        self.claimed.add(key)
        self.send(Claim(key))

    def shrink_found(self) -> None:
        """Shrink the finding just claimed, whatever the time; then the waiting ones no one has
        claimed, while the budget lasts and shrinking has taken at most half of the time."""
        if self.claim_now is not None:
            job, self.claim_now = self.claim_now, None
            self.shrink(job)
        while self.pending and not self.out_of_time() and self.spent["shrinking"] <= self.spent["exploring"]:
            job = self.pending.pop(next(iter(self.pending)))
            if job.key not in self.claimed:
                self.claim(job.key)
                self.shrink(job)

    def shrink(self, job: Job) -> None:
        """Hypothesis-shrink the job's case (where the stream drew it), then delta-minimize it, for
        `shrink_s` from now, or from the deadline when that has passed."""
        began = time.time()
        self.phase, self.shrink_until = "shrink", min(began, self.deadline) + self.cfg.shrink_s
        case_json, shrinks = job.case, 0
        if job.origin.get("phase") == "explore":
            case_json, shrinks = self.hypothesis_shrink(job)
        self.minimize(job.key, case_json, began, shrinks)

    def hypothesis_shrink(self, job: Job) -> tuple[dict[str, Any], int]:
        """Draw the job's round again up to its case, without running the cases before it, fail
        there and let Hypothesis shrink while the job's key shows up. Returns the smallest case
        that showed it and how many shrink steps did."""
        from hypothesis import Phase

        from fuzz.store.shared_store import open_database

        origin = job.origin
        target, calls, best, shrinks = int(origin["index"]), -1, job.case, -1

        def shrink(case: Any) -> None:
            nonlocal calls, best, shrinks
            calls += 1
            if calls < target:
                return  # the stream before the case: drawn again, not run
            self.poll_inbox()
            if self.stop_requested:
                raise EndRun
            if time.time() > self.shrink_until:
                raise _ShrinkTimeUp
            case_json = case.to_json()
            if calls == target and fingerprint(case_json) != fingerprint(job.case):
                raise _Diverged("a different case")
            outcome, fresh = self.evaluate(case_json)
            if job.key in self.report(case_json, outcome, fresh, self.origin("shrink")):
                best, shrinks = case_json, shrinks + 1
                raise _Found(job.key)  # one raise site: Hypothesis tells failures apart by where they are raised
            if calls == target:
                raise _Diverged("a case that no longer shows it")

        seed = derive_seed(self.cfg.seed, self.cfg.session, self.index, origin["round"])
        test = stream_test(self.strategy, seed, int(origin["stream"]["max_examples"]), (Phase.generate, Phase.shrink),
                           open_database(self.cfg.db))
        try:
            self.hypothesis_run(test, shrink)
        except _Diverged as e:
            self.send(Log(f"driver {self.index}: drawing round {origin['round']} again gave {e} at case "
                          f"{target}, not {job.key}'s: delta-minimizing it only"))
            return job.case, 0
        return best, max(shrinks, 0)

    def evaluate(self, case_json: dict[str, Any], drawn: Any = None) -> tuple[Outcome, bool]:
        """The case's outcome, and whether it ran now (False: this driver ran it before; shrinking
        starts from a case already run). `drawn`: the Case, when it is a fresh draw (not a shrink
        step), whose features the report counts."""
        digest = fingerprint(case_json)
        if digest in self.seen:
            return self.seen[digest], False
        began = time.monotonic()
        outcome = self.executor.run(case_json)
        self.spent["shrinking" if self.phase == "shrink" else "exploring"] += time.monotonic() - began
        if len(self.seen) < 200_000:
            self.seen[digest] = outcome
        if outcome.death is not None:
            self.send(WorkerRestarted(self.index, outcome.death))
        features: list[str] = []
        if drawn is not None:
            from fuzz.tools.pairs import pair_features
            from strategies.cases import case_features

            every = case_features(drawn)
            features = sorted(f for f in every if f.startswith(DRAWN_PREFIXES)) \
                + sorted(f"flag:{f}" for f in every if f in DRAWN_FLAGS) + pair_features(every)
        self.send(CaseRan(self.index, case_json["op"], outcome.seconds, rejected(outcome), self.phase == "shrink",
                          features, (outcome.verdict or {}).get("unavailable", [])))
        return outcome, True

    def origin(self, phase: str, **where: Any) -> dict[str, Any]:
        """Where a case came from: host, campaign seed, session, worker and phase; for a case of the
        stream also its round, index and what the stream draws from (all `regenerate` needs)."""
        return {"host": self.env.get("host", socket.gethostname()), "host_id": self.cfg.host_id,
                "worker": self.index, "seed": self.cfg.seed, "session": self.cfg.session, "phase": phase,
                **where}

    def report(self, case_json: dict[str, Any], outcome: Outcome, fresh: bool, origin: dict[str, Any]) -> set[str]:
        """Send every finding the outcome shows to the coordinator; returns their keys. A sighting
        counts when the case ran now and is an independent sample: while shrinking, only a key
        this driver never saw before counts (shrink candidates are close copies of one case)."""
        records = sightings(case_json, outcome, self.env, origin)
        for record in records:
            if not fresh or (self.phase == "shrink" and record.key in self.sighted):
                record.count, record.sightings = 0, {}
            self.sighted.add(record.key)
            if record.key not in self.claimed:
                self.pending.setdefault(record.key, Job(record.key, case_json, origin))
            self.send(Sighted(record.to_json()))
        return {r.key for r in records}

    def minimize(self, key: str, case_json: dict[str, Any], began: float, shrinks: int) -> None:
        """Delta-minimize a (Hypothesis-shrunk) failing case until `shrink_until`, then report it
        with the violation message its minimal form shows."""
        from fuzz.engine.minimize import delta_minimize

        def fails(candidate: dict[str, Any]) -> bool:
            self.poll_inbox()
            if self.stop_requested:
                return False
            outcome, fresh = self.evaluate(candidate)
            return key in self.report(candidate, outcome, fresh, self.origin("shrink"))

        self.phase = "shrink"  # sightings of other keys on the way are independent of it: see report()
        minimal, how = delta_minimize(case_json, fails, max(0.0, self.shrink_until - time.time()))
        outcome = self.seen.get(fingerprint(minimal)) or self.evaluate(minimal)[0]
        messages = [r.message for r in sightings(minimal, outcome, self.env, {}) if r.key == key]
        self.send(Minimized(key, minimal, messages[0] if messages else None, {
            "hypothesis_shrinks": shrinks, "delta_steps": how.steps, "dropped": how.dropped,
            "complete": how.complete and not self.stop_requested, "seconds": round(time.time() - began, 1)}))


def driver_main(read_fd: int, write_fd: int) -> None:
    read, write = child_connections(read_fd, write_fd)
    inbox, outbox = Receiver[ToDriver](read), Sender[FromDriver](write)
    cfg = inbox.recv()
    assert isinstance(cfg, DriverConfig), cfg
    Driver(cfg, inbox, outbox).run()
