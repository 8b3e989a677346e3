"""Fakes of the campaign engine's parts (a worker, a driver's pipe, a driver) for tests without processes,
and whether a process a test started lives on."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypeVar

from fuzz.engine.driver import Driver
from fuzz.engine.executor import Outcome
from fuzz.engine.messages import DriverConfig

M = TypeVar("M")


class FakeWorker:
    """Reports violations `names` whenever the first input has at least `rows` rows."""

    restarts = 0

    def __init__(self, names: tuple[str, ...] = ("fake",), rows: int = 5) -> None:
        self.cases: list[dict[str, Any]] = []
        self.names, self.rows = names, rows

    def run(self, case_json: dict[str, Any]) -> Outcome:
        self.cases.append(case_json)
        rows = case_json["inputs"][0]["shape"][0]
        bad = rows >= self.rows
        found = [{"oracle": "numerics", "severity": "wrong result", "signature": f"{name}:{case_json['op']}",
                  "message": f"{rows} row(s) differ"} for name in self.names]
        return Outcome(verdict={"violations": found if bad else [], "known": [], "rejected": False,
                                "error_ratio": 0.0, "failure": None, "poisoned": ""})

    def stop(self) -> None:
        pass


class Pipe:
    """A driver's end of a pipe: keeps what the driver sends; nothing arrives."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def poll(self, timeout: float = 0) -> bool:
        return False


def sent_by(driver: Driver, kind: type[M]) -> list[M]:
    """The messages of type `kind` (fuzz.engine.messages) that `driver` sent, in order."""
    assert isinstance(driver.outbox, Pipe)
    return [m for m in driver.outbox.sent if isinstance(m, kind)]


def fake_driver(claimed: tuple[str, ...] = (), db: str = "none") -> Driver:
    cfg = DriverConfig(index=0, gpu=None, device="cpu", seed=1, session=0, budget_s=60, shrink_s=30, case_timeout_s=10,
                       ops=("mm",), backends=(), dtypes=(), profile="dev", db=db, out="/nonexistent",
                       claimed=claimed, coverage=False)
    driver = Driver(cfg, Pipe(), Pipe())
    driver.executor, driver.env = FakeWorker(), {"host": "test"}
    driver.deadline = time.time() + 60
    driver.start_stream("cpu", ["mm"])
    return driver


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting to be reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
