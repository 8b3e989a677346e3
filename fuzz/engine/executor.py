"""Process isolation: every case runs in a worker process that a crash, a poisoned CUDA context or
a hang can take down without taking the campaign with it.

`Executor` (used by the process that drives Hypothesis) starts a worker with its
`CUDA_VISIBLE_DEVICES`, `TORCHINDUCTOR_CACHE_DIR` and `TRITON_CACHE_DIR` set before Python starts
(so before torch is imported; the code caches are the machine's, shared by its workers:
fuzz.engine.machine), on a CPU machine forked from its zygote (fuzz.engine.zygote: the imports paid
once), sends it one case at a time, and waits at most the per-case timeout. A worker that dies
(signal, exit) or hangs is killed, its last words (the faulthandler dump in its log) are kept, and
the next case starts a new one. fuzz.engine.worker is the worker side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from fuzz.engine.children import Child, spawn_python, start_child
from fuzz.engine.machine import cache_root, sees_gpus, worker_env
from fuzz.engine.messages import CaseVerdict, FromWorker, InvalidCase, RunCase, StartFailed, Stop, ToWorker, WorkerReady
from fuzz.engine.zygote import Zygote

WORKER_MAIN = "fuzz.engine.worker.worker_main"


@dataclasses.dataclass
class Outcome:
    """What running one case in a worker gave: a verdict, or how the worker failed."""

    verdict: dict[str, Any] | None = None  # serialize_verdict(...) of a case that ran to the end
    death: str | None = None  # "killed:SIGSEGV", "exited:3", "hang", "cuda-context-poisoned"
    detail: str = ""  # one line for the finding's message
    last_words: str = ""  # tail of the worker's log (faulthandler dump)
    seconds: float = 0.0
    invalid: str = ""  # the worker refused the case (the Case model rejects it): nothing ran


class WorkerStartError(RuntimeError):
    """A worker could not start at all (import error, no torch): the campaign cannot go on."""


WorkerChild = Child[ToWorker, FromWorker]


class Executor:
    """One isolated worker at a time, replaced whenever the previous one died or hung.

    After the first death a spare worker is kept warming up in the background, so that a
    crash-heavy stretch does not pay torch's start-up (seconds; more with CUDA) for every case."""

    def __init__(self, index: int, *, log_dir: Path, gpu: str | None = None, case_timeout_s: float = 300.0,
                 start_timeout_s: float = 600.0, coverage_dir: Path | None = None, cache_dir: Path | None = None,
                 compile_threads: int | None = None) -> None:
        self.index, self.gpu = index, gpu
        self.cache_dir = cache_dir or cache_root()
        self.compile_threads = compile_threads
        self.log_dir = Path(log_dir)
        self.case_timeout_s, self.start_timeout_s = case_timeout_s, start_timeout_s
        self.coverage_dir = coverage_dir
        self.child: WorkerChild | None = None
        self.spare: WorkerChild | None = None
        self.info: dict[str, Any] = {}
        self.starts = self.launches = 0
        self.zygote: Zygote | None = None
        self.zygote_refused = ""  # why no zygote serves this Executor (its workers then start fresh)
        if coverage_dir is not None:
            self.zygote_refused = "coverage must see the imports"
        elif sees_gpus(gpu):
            self.zygote_refused = "a GPU worker: the compiler's modules initialize CUDA at import"

    @property
    def restarts(self) -> int:
        return max(0, self.starts - 1)

    def env(self) -> dict[str, str]:
        return worker_env(self.cache_dir, self.gpu, self.compile_threads, self.coverage_dir)

    def _launch(self) -> WorkerChild:
        self.launches += 1  # logs rotate over three files: a dead worker's log survives its successor
        log_path = self.log_dir / f"worker-{self.index}.{self.launches % 3}.log"
        zygote = self._zygote()
        if zygote is not None:
            with contextlib.suppress(OSError):  # the zygote died: this worker starts fresh, the next gets a new one
                return start_child(log_path, lambda read_fd, write_fd: zygote.fork(
                    WORKER_MAIN, read_fd, write_fd, log_path))
        return spawn_python(WORKER_MAIN, self.env(), log_path)

    def _zygote(self) -> Zygote | None:
        """The zygote that forks this Executor's workers (fuzz/engine/zygote.py), started on first use; None
        where workers start fresh: coverage is measured (it must see the imports), on a GPU machine
        (the zygote could not import the compiler: measured on the H200, no faster), or the zygote
        could not serve."""
        if self.zygote_refused:
            return None
        if self.zygote is None or not self.zygote.alive:
            if self.zygote is not None:
                self.zygote.close()
            self.zygote = Zygote(self.env(), self.log_dir / f"zygote-{self.index}.log")
            self.zygote_refused = self.zygote.wait_ready(self.start_timeout_s)
            if self.zygote_refused:
                self.zygote = None
        return self.zygote

    def start(self) -> dict[str, Any]:
        """Start a worker (or take the spare) and wait until it is ready; returns its environment."""
        if self.child is not None:
            self.child.kill()
            self.child = None
        child, self.spare = self.spare or self._launch(), None
        self.starts += 1
        if not child.from_child.poll(self.start_timeout_s):
            child.kill()
            raise WorkerStartError(f"worker {self.index} did not start within {self.start_timeout_s:.0f}s")
        try:
            message = child.from_child.recv()
        except (EOFError, OSError):
            message = StartFailed(child.tail() or "the worker exited while starting")
        if not isinstance(message, WorkerReady):
            child.kill()
            why = message.summary() if isinstance(message, StartFailed) else f"it sent {message}"
            raise WorkerStartError(f"worker {self.index} failed to start: {why}")
        self.child, self.info = child, message.info
        return message.info

    def run(self, case_json: dict[str, Any]) -> Outcome:
        """Run one case; never raises for what the case does to the worker."""
        if self.child is None or self.child.proc.poll() is not None:
            self.start()
        child = self.child
        assert child is not None
        began = time.monotonic()
        try:
            child.to_child.send(RunCase(case_json))
            ready = child.from_child.poll(self.case_timeout_s)
            message = child.from_child.recv() if ready else None
        except (EOFError, OSError):
            message, ready = None, True
        seconds = time.monotonic() - began
        if isinstance(message, InvalidCase):
            return Outcome(invalid=message.reason, seconds=seconds)
        verdict = message.verdict if isinstance(message, CaseVerdict) else None
        if verdict is not None and not verdict.get("poisoned"):
            return Outcome(verdict=verdict, seconds=seconds)
        self.child = None
        if self.spare is None:
            self.spare = self._launch()
        if verdict is not None:  # the worker replied, then quit: its CUDA context is unusable
            self._reap(child, wait_s=30.0)
            return Outcome(verdict=verdict, death="cuda-context-poisoned",
                           detail="the case left the CUDA context unusable (" + verdict["poisoned"] + ")",
                           last_words=child.tail(), seconds=seconds)
        if not ready:  # hung: ask for a traceback of every thread, then kill
            with contextlib.suppress(OSError):
                child.proc.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
            child.kill()
            return Outcome(death="hang", detail=f"no result within the {self.case_timeout_s:g}s per-case timeout",
                           last_words=child.tail(), seconds=seconds)
        code = self._reap(child)
        return Outcome(death=_describe_exit(code), detail=f"the worker process {_describe_exit(code, long=True)}",
                       last_words=child.tail(), seconds=seconds)

    def stop(self) -> None:
        """Stop the workers (the spare too)."""
        if self.child is not None:
            with contextlib.suppress(OSError):
                self.child.to_child.send(Stop())
            self.child.close()
            self.child = None
        if self.spare is not None:
            self.spare.kill()
            self.spare = None
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    @staticmethod
    def _reap(child: WorkerChild, wait_s: float = 10.0) -> int:
        try:
            code = child.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            child.proc.kill()
            code = child.proc.wait()
        child.close()
        return code


def _describe_exit(code: int, long: bool = False) -> str:
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"was killed by {name}" if long else f"killed:{name}"
    return f"exited with status {code}" if long else f"exited:{code}"
