"""A campaign's driver process: Hypothesis generation rounds, shrinking and minimizing findings.

Each driver runs the `@given(cases(...))` test `_campaign_case` in rounds of the profile's
`max_examples`, each round with its own seed derived from (campaign seed, session, driver,
round), so drivers and hosts explore disjoint streams while sharing one example database (which
every round reads first: stored failing examples are replayed before anything new is drawn).
The test body does not fail for findings it has already seen: it reports them (the coordinator
counts them) and returns, so exploration goes on. The first time a driver sees a finding key no
one has claimed, it claims it and fails the test: Hypothesis shrinks the case while the same key
keeps showing up, and `fuzz.minimize` then drops config keys and graph nodes. The budget is wall
clock; a shrink in progress when it runs out may finish (at most `shrink_s` per finding).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fuzz.sightings import rejected, sightings
from fuzz.workers import Executor, Outcome, WorkerStartError, child_connections

LOG_DIR = "logs"
DRAWN_PREFIXES = ("op:", "dtype:", "backends:", "value:")
"""Case features (strategies.cases.case_features) counted for the report's "what was drawn"."""


def derive_seed(*parts: object) -> int:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:15], 16)


def backends_of(case_json: dict[str, Any]) -> set[str]:
    value = str(case_json.get("config", {}).get("max_autotune_gemm_backends", ""))
    return {b.strip().upper() for b in value.split(",") if b.strip()}


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


def _fingerprint(case_json: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case_json, sort_keys=True).encode()).hexdigest()


class Driver:
    def __init__(self, cfg: dict[str, Any], inbox: Connection, outbox: Connection) -> None:
        self.cfg, self.inbox, self.outbox = cfg, inbox, outbox
        self.index = int(cfg["index"])
        self.claimed: set[str] = set(cfg["claimed"])
        self.stop_requested = False
        self.executor = Executor(self.index, log_dir=Path(cfg["out"]) / LOG_DIR, gpu=cfg["gpu"],
                                 case_timeout_s=cfg["case_timeout_s"], compile_threads=cfg.get("compile_threads"),
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

    def round_test(self, strategy: Any, seed: int) -> Any:
        """The Hypothesis test of one round: `_campaign_case` over `strategy`, seeded, reading and
        writing the campaign's example database."""
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as with_seed

        from fuzz.profiles import register_profiles
        from fuzz.shared_store import open_database

        register_profiles()
        profile = settings.get_profile(self.cfg["profile"])
        # `seed` replaces the test's settings with database=None: the settings go on last, outermost
        return settings(parent=profile, database=open_database(self.cfg["db"]), deadline=None, derandomize=False,
                        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
                        verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False,
                        suppress_health_check=list(HealthCheck))(with_seed(seed)(given(case=strategy)(_campaign_case)))

    def run_round(self, strategy: Any, seed: int) -> None:
        global _ACTIVE
        from hypothesis.errors import Unsatisfiable

        test = self.round_test(strategy, seed)
        self.target, self.target_case, self.shrink_steps = None, None, 0
        _ACTIVE = self
        try:
            test()
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
        outcome, fresh = self.evaluate(case_json, case if self.target is None else None)
        found = self.report(case_json, outcome, fresh)
        if outcome.verdict is not None:
            target(outcome.verdict["error_ratio"], label="compiled error / tolerance")
        if self.target is None and self.spent["shrinking"] <= self.spent["exploring"]:  # shrinking: at most half
            fresh_keys = sorted(k for k in found if k not in self.claimed)
            if fresh_keys:
                self.target_claimed_at = time.time()
                self.target_until = self.target_claimed_at + self.cfg["shrink_s"]
                self.target, self.shrink_steps = fresh_keys[0], -1
                self.claimed.add(fresh_keys[0])
                self.pending.pop(fresh_keys[0], None)
                self.send("claim", fresh_keys[0])
        if self.target in found:
            self.target_case = case_json
            self.shrink_steps += 1
            raise _Found(self.target)  # one raise site: Hypothesis tells failures apart by where they are raised
        if rejected(outcome) and not found:
            reject()

    def evaluate(self, case_json: dict[str, Any], drawn: Any = None) -> tuple[Outcome, bool]:
        """The case's outcome, and whether it ran now (False: this driver ran it before; every
        Hypothesis round starts with the same simplest case and replays the database). `drawn`:
        the Case, when it is a fresh draw (not a shrink step), whose features the report counts."""
        fingerprint = _fingerprint(case_json)
        if fingerprint in self.seen:
            return self.seen[fingerprint], False
        began = time.monotonic()
        outcome = self.executor.run(case_json)
        self.spent["exploring" if self.target is None else "shrinking"] += time.monotonic() - began
        if len(self.seen) < 200_000:
            self.seen[fingerprint] = outcome
        if outcome.death is not None:
            self.send("restart", {"worker": self.index, "reason": outcome.death})
        features: list[str] = []
        if drawn is not None:
            from strategies.cases import case_features

            features = sorted(f for f in case_features(drawn) if f.startswith(DRAWN_PREFIXES))
        self.send("case", {"worker": self.index, "op": case_json["op"], "seconds": outcome.seconds,
                           "rejected": rejected(outcome), "shrinking": self.target is not None,
                           "features": features})
        return outcome, True

    def origin(self) -> dict[str, Any]:
        return {"host": self.env.get("host", socket.gethostname()), "host_id": self.cfg.get("host_id", ""),
                "worker": self.index, "seed": self.cfg["seed"], "session": self.cfg["session"]}

    def report(self, case_json: dict[str, Any], outcome: Outcome, fresh: bool) -> set[str]:
        """Send every finding the outcome shows to the coordinator; returns their keys. A sighting
        counts when the case ran now and is an independent sample: while shrinking, only a key
        this driver never saw before counts (shrink candidates are close copies of one case)."""
        records = sightings(case_json, outcome, self.env, self.origin())
        for record in records:
            if not fresh or (self.target is not None and record.key in self.sighted):
                record.count, record.sightings = 0, {}
            self.sighted.add(record.key)
            if record.key != self.target and record.key not in self.claimed:
                self.pending.setdefault(record.key, case_json)  # minimized later if no one claims it first
            self.send("finding", record.to_json())
        return {r.key for r in records}

    def minimize(self, key: str, case_json: dict[str, Any], claimed_at: float, shrinks: int) -> None:
        """Delta-minimize a (Hypothesis-shrunk) failing case in its time left, then report it
        with the violation message its minimal form shows."""
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
        outcome = self.seen.get(_fingerprint(minimal)) or self.evaluate(minimal)[0]
        messages = [r.message for r in sightings(minimal, outcome, self.env, {}) if r.key == key]
        self.send("minimized", {"key": key, "case": minimal, "message": messages[0] if messages else None,
                                "minimization": {
                                    "hypothesis_shrinks": shrinks, "delta_steps": how.steps, "dropped": how.dropped,
                                    "complete": how.complete and not self.stop_requested,
                                    "seconds": round(time.time() - claimed_at, 1)}})


def driver_main(read_fd: int, write_fd: int) -> None:
    inbox, outbox = child_connections(read_fd, write_fd)
    kind, cfg = inbox.recv()
    assert kind == "config", kind
    Driver(cfg, inbox, outbox).run()
