"""What every child process of the suite shares: the repository root on its path, the parent's
handle on it (`Child`: the process, the typed pipe ends to it, its log), and a life tied to its
parent's (the coordinator starts drivers, an Executor workers, fuzz.engine.zygote forks workers), or
a time limit that kills its whole process group (run_bounded: repro checks and their plain forms)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from fuzz.engine.messages import Receiver, Sender

REPO_ROOT = Path(__file__).resolve().parents[2]


def die_with_parent(parent_pid: int) -> None:
    """Be killed when the process that started this one dies (Linux), e.g. on `kill -9` of the campaign."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def python_env(env: dict[str, str]) -> dict[str, str]:
    """This process's environment with `env` on top, for a child Python that imports the suite."""
    return {**os.environ, **env, "MM_FUZZ_PARENT_PID": str(os.getpid()),
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)}


def popen_python(entry: str, fds: tuple[int, ...], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start `python -c "<entry>(*fds)"` (a module's function, by name) with `env` on this process's
    environment, passing it `fds`, stdout/stderr to `log_path`."""
    module, _, func = entry.rpartition(".")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        return subprocess.Popen([sys.executable, "-c", f"import {module}; {module}.{func}({', '.join(map(str, fds))})"],
                                env=python_env(env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                pass_fds=fds, cwd=os.getcwd())


def become_child() -> None:
    """Tie this process's life to its parent's and leave Ctrl-C, CI cancel and timeouts to the coordinator."""
    die_with_parent(int(os.environ.get("MM_FUZZ_PARENT_PID", os.getppid())))
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


class ChildProcess(Protocol):
    """What a Child's process offers: `subprocess.Popen`'s, or a forked worker's (zygote.ForkedProcess)."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, signum: int) -> None: ...

    def kill(self) -> None: ...


S = TypeVar("S")
R = TypeVar("R")


@dataclasses.dataclass
class Child(Generic[S, R]):
    """A Python child process, the two pipe ends this process talks to it through (it is sent S and
    sends R), and its log."""

    proc: ChildProcess
    to_child: Sender[S]
    from_child: Receiver[R]
    log_path: Path

    def close(self, grace_s: float = 5.0) -> None:
        self.to_child.close()
        self.from_child.close()
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.close()

    def tail(self, limit: int = 6000) -> str:
        """Its last words: the last fatal-error dump from its start (innermost frames come first),
        else the end of its log (a dump asked for with SIGUSR1 is its last lines)."""
        with contextlib.suppress(OSError):
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * limit))
                text = f.read().decode("utf-8", "replace")
            fatal = text.rfind("Fatal Python error")
            return text[fatal:fatal + limit] if fatal >= 0 else text[-limit:]
        return ""


def spawn_python(entry: str, env: dict[str, str], log_path: Path) -> Child[S, R]:
    """Start `python -c "<entry>(read_fd, write_fd)"` with `env`, stdout/stderr to `log_path`."""
    return start_child(log_path, lambda down_r, up_w: popen_python(entry, (down_r, up_w), env, log_path))


def start_child(log_path: Path, start: Callable[[int, int], ChildProcess]) -> Child[S, R]:
    """Two pipes, and the child `start(read_fd, write_fd)` starts at their far ends."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    try:
        proc = start(down_r, up_w)
    finally:
        os.close(down_r)
        os.close(up_w)
    return Child(proc, Sender(Connection(down_w, readable=False)), Receiver(Connection(up_r, writable=False)),
                 log_path)


def child_connections(read_fd: int, write_fd: int) -> tuple[Connection, Connection]:
    """The child's ends of `spawn_python`'s pipes; also ties its life to its parent's."""
    become_child()
    return Connection(read_fd, writable=False), Connection(write_fd, readable=False)


class Runner(Protocol):
    """How a command runs to a time limit: `run_bounded`, or a ScriptPool's run (fuzz.engine.script_pool)."""

    def __call__(self, cmd: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout_s: float,
                 cancel: threading.Event | None = None, merge_output: bool = False) -> tuple[int | None, str, str]: ...


def run_bounded(cmd: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout_s: float,
                cancel: threading.Event | None = None, merge_output: bool = False) -> tuple[int | None, str, str]:
    """Run `cmd` in a session of its own and return (exit status, stdout, stderr); at `timeout_s`
    (or once `cancel` is set) its whole process group is killed, the children it started too, and
    the exit status is None."""
    began = time.monotonic()
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env), text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
                            start_new_session=True)
    while True:
        try:
            stdout, stderr = proc.communicate(timeout=max(0.0, min(0.5, began + timeout_s - time.monotonic())))
            return proc.returncode, stdout, stderr or ""
        except subprocess.TimeoutExpired:
            if time.monotonic() - began >= timeout_s or (cancel is not None and cancel.is_set()):
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                stdout, stderr = proc.communicate()
                return None, stdout, stderr or ""
