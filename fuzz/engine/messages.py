"""What the campaign's processes say to each other, one frozen dataclass per kind of message, and
the typed ends of the pipes that carry them (pickled: every process imports this module).

    coordinator -> driver    ToDriver:   DriverConfig (first), Claimed, Stop
    driver -> coordinator    FromDriver: DriverReady, CaseRan, Sighted, Claim, Minimized, WorkerRestarted,
                                         Log, Fatal, DriverDone
    Executor -> worker       ToWorker:   RunCase, Stop
    worker -> Executor       FromWorker: WorkerReady or StartFailed (first), then CaseVerdict or InvalidCase
    Executor -> zygote       ToZygote:   Fork (followed by the two descriptors it names)
    zygote -> Executor       FromZygote: ZygoteReady or StartFailed (first), then Forked and Exited
    script pool -> child     RunScript   (fuzz.engine.script_pool: the one message a forked script child gets)
"""

from __future__ import annotations

import contextlib
import dataclasses
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

# --- coordinator -> driver ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DriverConfig:
    """What driver `index` explores, for how long, and where it reports (its first message)."""

    index: int
    gpu: str | None  # its worker's CUDA_VISIBLE_DEVICES: "" hides the GPUs, None inherits them
    device: str | None  # None: the worker's default device
    seed: int
    session: int
    budget_s: float
    shrink_s: float
    case_timeout_s: float
    ops: tuple[str, ...]  # empty: every op the device runs
    backends: tuple[str, ...]
    dtypes: tuple[str, ...]
    profile: str  # the Hypothesis profile: cases per round
    db: str  # the example database (fuzz.store.shared_store.open_database)
    out: str  # the campaign's output directory
    claimed: tuple[str, ...]  # finding keys someone minimizes already
    coverage: bool
    host_id: str = ""
    compile_threads: int | None = None


@dataclasses.dataclass(frozen=True)
class Claimed:
    """Another driver (or host) minimizes finding `key`: do not shrink it too."""

    key: str


@dataclasses.dataclass(frozen=True)
class Stop:
    """Finish the current case and end (to a driver or a worker)."""


# --- driver -> coordinator ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DriverReady:
    """The driver's worker is ready: the budget starts now."""

    worker: int
    env: dict[str, Any]  # the worker's environment (WorkerReady.info)
    device: str


@dataclasses.dataclass(frozen=True)
class CaseRan:
    """One case ran (counted in the session's totals)."""

    worker: int
    op: str
    seconds: float
    rejected: bool
    shrinking: bool
    features: list[str]  # what was drawn (fuzz.engine.driver.DRAWN_PREFIXES); empty for shrink steps
    unavailable: list[str]  # choices beyond the GPU's resources (fuzz.engine.worker.unavailable_key)


@dataclasses.dataclass(frozen=True)
class Sighted:
    """A finding the case showed: a SightingRecord's to_json()."""

    finding: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Claim:
    """This driver minimizes finding `key` (passed on to the other drivers and hosts as Claimed)."""

    key: str


@dataclasses.dataclass(frozen=True)
class Minimized:
    """The smallest case found that shows finding `key`, and how it was found."""

    key: str
    case: dict[str, Any]
    message: str | None  # the violation message of the minimal case
    minimization: dict[str, Any]  # hypothesis_shrinks, delta_steps, dropped, complete, seconds


@dataclasses.dataclass(frozen=True)
class WorkerRestarted:
    """The driver's worker died or hung (`reason`: Outcome.death) and is replaced."""

    worker: int
    reason: str


@dataclasses.dataclass(frozen=True)
class Log:
    """A line for the campaign's progress output."""

    line: str


@dataclasses.dataclass(frozen=True)
class Fatal:
    """The campaign cannot go on (one line): every driver is asked to stop."""

    reason: str


@dataclasses.dataclass(frozen=True)
class DriverDone:
    """The driver's last message."""

    worker: int
    rounds: int
    restarts: int


# --- Executor <-> worker, Executor <-> zygote -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunCase:
    """Evaluate this case (a Case.to_json())."""

    case: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class WorkerReady:
    """The worker has warmed up; `info` is its environment (fuzz.engine.worker.environment)."""

    info: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class StartFailed:
    """A worker or zygote could not start: a traceback, or why."""

    error: str

    def summary(self) -> str:
        """Its last line (the exception, for a traceback)."""
        return self.error.strip().splitlines()[-1] if self.error.strip() else "?"


@dataclasses.dataclass(frozen=True)
class CaseVerdict:
    """The case ran to the end: its verdict as plain data (fuzz.engine.worker.serialize_verdict)."""

    verdict: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class InvalidCase:
    """The Case model rejects the case: nothing ran."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Fork:
    """Fork a worker running `entry(read_fd, write_fd)` with its output to `log_path`; the two
    descriptors follow on the connection (multiprocessing.reduction.send_handle)."""

    entry: str
    log_path: str


@dataclasses.dataclass(frozen=True)
class ZygoteReady:
    """The zygote has imported the suite; `compiler`: the compiler's modules too."""

    compiler: bool


@dataclasses.dataclass(frozen=True)
class Forked:
    """The worker Fork asked for runs: its pid."""

    pid: int


@dataclasses.dataclass(frozen=True)
class Exited:
    """A worker the zygote forked exited (`code` as Popen.returncode: -N for signal N)."""

    pid: int
    code: int


@dataclasses.dataclass(frozen=True)
class RunScript:
    """Run `argv` as `python ARGV...` would (`module`: as `python -m ARGV...`) in `cwd` with exactly
    `env`, stdout to `stdout` (stderr went to the Fork's log)."""

    argv: tuple[str, ...]
    module: bool
    cwd: str
    env: dict[str, str]
    stdout: str


ToDriver = DriverConfig | Claimed | Stop
FromDriver = DriverReady | CaseRan | Sighted | Claim | Minimized | WorkerRestarted | Log | Fatal | DriverDone
ToWorker = RunCase | Stop
FromWorker = WorkerReady | StartFailed | CaseVerdict | InvalidCase
ToZygote = Fork
FromZygote = ZygoteReady | StartFailed | Forked | Exited

# --- the pipes' typed ends ------------------------------------------------------------------------

M = TypeVar("M")


class _End:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()


class Sender(_End, Generic[M]):
    """The end of a connection that sends messages of type M."""

    def send(self, message: M) -> None:
        self.conn.send(message)


class Receiver(_End, Generic[M]):
    """The end of a connection that receives messages of type M: its other end is a Sender[M] of
    the suite's own code in another process, and pickling keeps their types."""

    def poll(self, timeout: float | None = 0.0) -> bool:
        return self.conn.poll(timeout)

    def recv(self) -> M:
        message: M = self.conn.recv()
        return message
