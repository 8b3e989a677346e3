"""Seeds that reproduce: a driver's stream of cases is a function of (campaign seed, session,
driver), whatever the cases' verdicts and timing, the claims of other drivers and the example
database; and the position a sighting records draws its case again. Driven with fake workers
(no compiling)."""

from __future__ import annotations

import functools
import importlib
import io
import json
import random
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from fuzz.engine import regenerate
from fuzz.engine.driver import Driver, _Found
from fuzz.engine.executor import Outcome
from fuzz.engine.messages import Claim, Claimed, Minimized, Sighted, ToDriver
from fuzz.engine.stream import fingerprint
from fuzz.engine.stream import regenerate as draw_again
from fuzz.export import report
from fuzz.store.findings import Finding
from tests.fakes import FakeWorker, Pipe, fake_driver, sent_by

ROUNDS = 3


class Inbox(Pipe):
    """A driver's inbox that other drivers' claims reach while it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: deque[ToDriver] = deque()

    def poll(self, timeout: float = 0) -> bool:
        return bool(self.queue)

    def recv(self) -> ToDriver:
        return self.queue.popleft()


class Eventful(FakeWorker):
    """Everything a quiet run does not have: the database's finding (64 rows or more), a worker
    death at the stream's second case, a new finding with 8-63 rows, a key another driver claims
    meanwhile (odd rows below 64), rejections, varying error ratios and latencies, and the budget
    running out after `budget` cases of the stream."""

    def __init__(self, driver: Driver, inbox: Inbox, budget: int) -> None:
        super().__init__(("db", "new", "other"))
        self.driver, self.inbox, self.budget = driver, inbox, budget
        self.random = random.Random(0)
        self.explored = 0

    def run(self, case_json: dict[str, Any]) -> Outcome:
        self.cases.append(case_json)
        self.explored += self.driver.phase == "explore"
        time.sleep(self.random.random() / 500)
        if self.explored == 3:
            self.inbox.queue.append(Claimed("numerics/other:mm"))
        if self.explored == self.budget:
            self.driver.deadline = 0.0
        if self.explored == 2 and self.driver.phase == "explore":
            return Outcome(death="killed:SIGSEGV", detail="planted")
        rows = case_json["inputs"][0]["shape"][0]
        shows = {"db": rows >= 64, "new": 8 <= rows < 64, "other": 2 <= rows < 64 and rows % 2 == 1}
        found = [{"oracle": "numerics", "severity": "wrong result", "signature": f"{name}:mm", "message": f"{rows}"}
                 for name in self.names if shows[name]]
        return Outcome(verdict={"violations": found, "known": [], "rejected": len(self.cases) % 5 == 0,
                                "error_ratio": self.random.random(), "failure": None, "poisoned": ""})


def stream(driver: Driver) -> list[str]:
    assert isinstance(driver.stream_log, io.StringIO)
    return driver.stream_log.getvalue().splitlines()


@functools.cache
def quiet_stream() -> list[str]:
    driver = fake_driver()
    driver.executor = FakeWorker(())
    driver.stream_log = io.StringIO()
    for number in range(ROUNDS):
        driver.run_round(number)
    assert not sent_by(driver, Sighted) and not sent_by(driver, Claim)
    return stream(driver)


def eventful_driver(tmp_path: Path, budget: int = 30) -> Driver:
    """Driver 0 of the same seed, replaying first a database where driver 1 stored what it shrank."""
    db = str(tmp_path / "examples")
    other = fake_driver(db=db)
    other.index, other.executor = 1, FakeWorker(("db",), rows=64)
    other.run_round(1)
    driver = fake_driver(db=db)
    inbox = Inbox()
    driver.inbox = inbox
    driver.executor = Eventful(driver, inbox, budget)
    driver.stream_log = io.StringIO()
    driver.spent["exploring"] = 1e9  # shrinking may always take its half (that decision is timing's)
    driver.replay()
    for number in range(ROUNDS):
        driver.run_round(number)
    return driver


def test_a_drivers_stream_is_the_same_whatever_happens_meanwhile(tmp_path: Path) -> None:
    quiet = quiet_stream()
    driver = eventful_driver(tmp_path)
    eventful = stream(driver)
    claims = [m.key for m in sent_by(driver, Claim)]
    assert claims[:3] == ["numerics/db:mm", "process/killed:SIGSEGV:mm", "numerics/new:mm"]
    assert "numerics/other:mm" not in claims  # another driver's
    shrunk = [m for m in sent_by(driver, Minimized) if m.key == "numerics/new:mm"]
    assert shrunk and shrunk[0].minimization["hypothesis_shrinks"] > 1
    first = next(m.finding for m in sent_by(driver, Sighted) if m.finding["key"] == "numerics/new:mm")["origin"]
    assert (first["phase"], first["round"]) == ("explore", 0) and first["index"] < driver.stream["max_examples"] - 1
    assert len(quiet) == ROUNDS * driver.stream["max_examples"] > len(eventful) > driver.stream["max_examples"]
    assert eventful == quiet[:len(eventful)]  # fewer cases ran (the budget), the same ones


class ClaimedMeanwhile(FakeWorker):
    """Another driver claims the finding while this one runs the case that shows it."""

    def __init__(self, inbox: Inbox) -> None:
        super().__init__()
        self.inbox = inbox

    def run(self, case_json: dict[str, Any]) -> Outcome:
        if case_json["inputs"][0]["shape"][0] >= self.rows:
            self.inbox.queue.append(Claimed("numerics/fake:mm"))
        return super().run(case_json)


def test_a_finding_claimed_while_its_case_ran_is_not_claimed_twice() -> None:
    driver = fake_driver()
    inbox = Inbox()
    driver.inbox, driver.executor = inbox, ClaimedMeanwhile(inbox)
    driver.run_round(2)
    assert sent_by(driver, Sighted) and not sent_by(driver, Claim) and not sent_by(driver, Minimized)


def test_the_stream_check_catches_a_round_cut_short_by_a_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: the old driver, which failed the Hypothesis test to shrink a finding it claimed."""
    claim_one = Driver.claim_one

    def fail_on_claim(self: Driver, found: set[str]) -> None:
        claimed = self.claim_now
        claim_one(self, found)
        if self.claim_now is not claimed:
            raise _Found(self.claim_now.key if self.claim_now else "")

    quiet = quiet_stream()
    monkeypatch.setattr(Driver, "claim_one", fail_on_claim)
    eventful = stream(eventful_driver(tmp_path))
    assert eventful != quiet[:len(eventful)]


def test_the_recorded_position_draws_the_case_again(tmp_path: Path) -> None:
    driver = eventful_driver(tmp_path, budget=10**6)
    sighted = [m.finding for m in sent_by(driver, Sighted)]
    explored = [p for p in sighted if p["origin"]["phase"] == "explore"]
    assert {p["origin"]["round"] for p in explored} == set(range(ROUNDS))
    for p in explored[::7]:
        assert draw_again(p["origin"]) == p["case"]
    wrong = {**explored[0]["origin"], "index": explored[0]["origin"]["index"] + 1}  # planted: a position off by one
    assert draw_again(wrong) != explored[0]["case"]
    session, number, index, logged, _ = stream(driver)[-1].split("\t")  # a clean case's position, from the log
    origin = {**explored[0]["origin"], "round": int(number), "index": int(index)}
    assert fingerprint(draw_again(origin)).startswith(logged) and session == "0"
    shrunk = next(p for p in sighted if p["origin"]["phase"] == "shrink")
    with pytest.raises(ValueError, match="not drawn by a campaign's stream"):
        draw_again(shrunk["origin"])


def test_regenerate_command_and_report_show_the_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    driver = fake_driver()
    driver.run_round(1)
    payload = sent_by(driver, Sighted)[0].finding
    finding = Finding.from_json(payload)
    path = tmp_path / "finding.json"
    path.write_text(json.dumps(finding.to_json()))
    assert regenerate.main([str(path)]) == 0
    assert "round 1, case" in capsys.readouterr().out
    path.write_text(json.dumps({**finding.to_json(), "case": {**finding.case, "seed": -1}}))  # not what was drawn
    assert regenerate.main([str(path)]) == 1
    assert "a DIFFERENT case" in capsys.readouterr().out
    text = report.markdown(report.summarize([finding], [{"sessions": []}]))
    o = finding.origin
    assert f"case {o['index']} of round 1 of the stream of worker 0 (seed 1, session 0)" in text
    assert f"python -m fuzz.engine.regenerate findings/{finding.file_name()}" in text


def test_a_stream_does_not_depend_on_what_its_process_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis draws literals of the local modules imported so far (a driver imports more as it
    goes, `regenerate` runs in a fresh process): the pool is pinned to the strategies' literals."""
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    driver = fake_driver()
    origin = driver.origin("explore", index=14, stream=driver.stream)
    cases = [draw_again({**origin, "round": r}) for r in range(4)]
    (tmp_path / "literal_pool.py").write_text(  # what a module a driver imports later brings along
        f"VALUES = {[*range(100, 400, 7), *(k / 8 + 0.0625 for k in range(40))]}\n"
        f"NAMES = {[f'name{k}' for k in range(40)]}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("literal_pool")
    assert [draw_again({**origin, "round": r}) for r in range(4)] == cases
    monkeypatch.setattr(providers, "_get_local_constants", Constants)  # planted: another pool (an empty one)
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        assert [draw_again({**origin, "round": r}) for r in range(4)] != cases
    finally:
        monkeypatch.undo()
        providers.CONSTANTS_CACHE.cache.clear()
