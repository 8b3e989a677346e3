"""Repro checks on a warm pool: scripts run as a fresh `python script.py` (or `python -m module`)
would, each in a process forked from one zygote that imported torch and inductor's compiler once.

A repro check runs its script, then the plain form's candidates, each in a clean process; a fresh
one spends ~4 s of CPU importing torch and the compiler (2 cores, torch 2.13), as much as a cached
compile. The zygote (fuzz.engine.zygote.script_zygote_main) imports torch only, none of the suite;
each forked child takes the run's environment, working directory, `sys.argv` and `sys.path` as
`python` would set them (the repository only where the run's PYTHONPATH names it, the suite's
modules dropped otherwise, so a vendored repro imports its own copies), a session of its own (a
timeout kills what it started too) and default signal handlers. `ScriptPool.run` has
`run_bounded`'s signature and falls back to it wherever the zygote cannot serve.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from fuzz.engine.children import REPO_ROOT, Child, Runner, become_child, run_bounded, start_child
from fuzz.engine.machine import usable_cpus
from fuzz.engine.messages import Receiver, RunScript
from fuzz.engine.zygote import ForkedProcess, Zygote

ENTRY = "fuzz.engine.script_pool.script_child"
SUITE_PACKAGES = ("fuzz", "strategies", "oracles")
READY_TIMEOUT_S = 120.0
POLL_S = 0.05


class ScriptPool:
    """`run_bounded` for Python scripts, forked from a warm zygote (started at the first run;
    thread-safe). Close it when done."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.zygote: Zygote | None = None
        self.started = self.ready = False
        self.began = 0.0
        self.refused = ""  # why the zygote does not serve, once known

    def serves(self, wait_s: float = READY_TIMEOUT_S) -> bool:
        """Whether a run now is forked (else it starts a fresh process): starts the zygote at the
        first call and waits for it at most `wait_s` (half a run's own time limit: not ready by then,
        that run starts fresh while the zygote goes on starting; READY_TIMEOUT_S after its start it
        is given up)."""
        with self.lock:
            if not self.started:
                self.started = True
                self.log_dir.mkdir(parents=True, exist_ok=True)
                self.zygote = Zygote({}, self.log_dir / "script-zygote.log",
                                     entry="fuzz.engine.zygote.script_zygote_main")
                self.began = time.monotonic()
            if self.zygote is not None and not self.ready:
                left = READY_TIMEOUT_S - (time.monotonic() - self.began)
                if not self.zygote.replies.poll(max(0.0, min(wait_s, left))):
                    if wait_s < left:
                        return False
                    self.zygote.close()
                    self.zygote, self.refused = None, f"it did not start within {READY_TIMEOUT_S:g}s"
                    return False
                self.refused = self.zygote.wait_ready(0.0)
                self.ready = not self.refused
                if self.refused:
                    self.zygote = None
            return self.zygote is not None and self.zygote.alive

    def run(self, cmd: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout_s: float,
            cancel: threading.Event | None = None, merge_output: bool = False) -> tuple[int | None, str, str]:
        """Run `cmd` (`python script args...` or `python -m module args...`) as `run_bounded` does."""
        module = len(cmd) > 2 and cmd[1] == "-m"
        began = time.monotonic()
        if Path(cmd[0]).resolve() != Path(sys.executable).resolve() or not self.serves(timeout_s / 2):
            return run_bounded(cmd, cwd=cwd, env=env, timeout_s=max(0.0, began + timeout_s - time.monotonic()),
                               cancel=cancel, merge_output=merge_output)
        with tempfile.TemporaryDirectory(prefix="mm-fuzz-script-") as tmp:
            err = Path(tmp, "stderr")
            out = err if merge_output else Path(tmp, "stdout")
            try:
                with self.lock:
                    assert self.zygote is not None
                    zygote = self.zygote
                    child: Child[RunScript, None] = start_child(err, lambda r, w: zygote.fork(ENTRY, r, w, err))
            except OSError:  # the zygote is gone: fresh processes from now on
                self.zygote = None
                return run_bounded(cmd, cwd=cwd, env=env, timeout_s=timeout_s, cancel=cancel,
                                   merge_output=merge_output)
            child.to_child.send(RunScript(tuple(cmd[2:] if module else cmd[1:]), module, cwd, dict(env),
                                          "" if merge_output else str(out)))
            child.to_child.close()
            child.from_child.close()
            code = self._wait(child.proc, began + timeout_s, cancel)
            stdout = out.read_text(errors="replace") if out.is_file() else ""
            stderr = "" if merge_output or not err.is_file() else err.read_text(errors="replace")
        return code, stdout, stderr

    def _wait(self, proc: object, deadline: float, cancel: threading.Event | None) -> int | None:
        """The child's exit status; None when it was killed at `deadline` or on `cancel`."""
        assert isinstance(proc, ForkedProcess)
        while True:
            with self.lock:
                code = proc.poll()
            if code is not None:
                return code
            if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)  # its session: what it started dies too
                proc.kill()
                with self.lock:
                    proc.wait()
                return None
            time.sleep(POLL_S)

    def close(self) -> None:
        with self.lock:
            if self.zygote is not None:
                self.zygote.close()
            self.zygote = None


@contextlib.contextmanager
def warm_pool(needed: bool, emit: Callable[[str], None]) -> Iterator[Runner]:
    """For the block: a ScriptPool's run where `needed` (closed after; says so where the pool could
    not serve), else `run_bounded`."""
    if not needed:
        yield run_bounded
        return
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-pool-") as logs:
        pool = ScriptPool(Path(logs))
        try:
            yield pool.run
        finally:
            if pool.refused:
                emit(f"repro checks ran in fresh processes: the warm pool did not start "
                     f"({pool.refused.strip().splitlines()[-1]})")
            pool.close()


def check_jobs() -> int:
    """How many repro checks run at once: one per usable core (8 at most); each is mostly one
    compile at a time."""
    return max(1, min(8, usable_cpus()))


def script_child(read_fd: int, write_fd: int) -> None:
    """In a child forked from the script zygote: become the fresh `python` a RunScript names, run
    it, and exit as it would (fuzz.engine.zygote._run_worker turns SystemExit into the status)."""
    receiver = Receiver[RunScript](Connection(read_fd, writable=False))
    request = receiver.recv()
    receiver.close()
    os.close(write_fd)
    become_child()  # dies with the zygote
    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if request.stdout:
        with contextlib.suppress(OSError):
            fd = os.open(request.stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 1)
            os.close(fd)
    os.chdir(request.cwd)
    inherited = set(_python_path(os.environ))  # the zygote's PYTHONPATH (the repository's root among them)
    os.environ.clear()
    os.environ.update(request.env)
    python_path = _python_path(request.env)
    if str(REPO_ROOT) not in python_path:
        for name in [n for n in sys.modules if n.partition(".")[0] in SUITE_PACKAGES]:
            del sys.modules[name]
    first = request.cwd if request.module else str(Path(request.argv[0]).resolve().parent)
    sys.path[:] = [first, *python_path, *(p for p in sys.path[1:] if p not in inherited and p not in python_path)]
    sys.argv = list(request.argv)
    if request.module:
        sys.modules.pop(request.argv[0], None)  # `python -m` runs it afresh as __main__, never imported
        runpy.run_module(request.argv[0], run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(request.argv[0], run_name="__main__")


def _python_path(env: Mapping[str, str]) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
