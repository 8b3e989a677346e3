"""A worker zygote: one process per Executor that imports torch, inductor and the suite once, then
forks each of the Executor's workers from that state. A fresh worker pays ~9 s of CPU for imports
before its first case (2 cores, torch 2.13); a forked one pays its warm-up compile only, so a
restart after a crash, a hang or a poisoned CUDA context costs little.

The zygote runs with the worker's own environment (everything inductor reads at import is as in a
fresh worker), imports only (no compile, no thread pool, no CUDA: on a CUDA machine it leaves the
compiler's modules to the workers, and it refuses to serve if the CUDA driver was initialized
anyway, the Executor then starting fresh workers), and stays the workers' parent: it
reaps them and reports each exit status, so deaths read as before (`killed:SIGSEGV`). Workers die
with the zygote and the zygote with the Executor's process (PR_SET_PDEATHSIG); all stay in the
campaign's process group. The worker evaluates cases exactly as a fresh one (`worker_main`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from pathlib import Path

from fuzz.engine.children import become_child, popen_python
from fuzz.engine.messages import Exited, Fork, Forked, FromZygote, Receiver, Sender, StartFailed, ToZygote, ZygoteReady

POLL_S = 0.05
"""How often the zygote looks for exited workers between requests."""


CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_driver_path(maps: str) -> str | None:
    """The CUDA driver library a process whose /proc/self/maps reads `maps` has loaded, if any."""
    paths = (line.split()[-1] for line in maps.splitlines() if "/" in line)
    return next((p for p in paths if Path(p).name.startswith("libcuda.so")), None)


def cuda_driver_initialized() -> bool:
    """Whether this process initialized the CUDA driver (cuInit), after which forked workers could
    not use CUDA. A CUDA build of torch loads the driver library at import; only initializing it
    counts. Asked of the loaded library itself: cuDeviceGetCount fails with NOT_INITIALIZED until
    cuInit has run, and initializes nothing."""
    import ctypes

    with open("/proc/self/maps") as maps:
        path = cuda_driver_path(maps.read())
    if path is None:
        return False
    count = ctypes.c_int()
    return ctypes.CDLL(path).cuDeviceGetCount(ctypes.byref(count)) != CUDA_ERROR_NOT_INITIALIZED


class ForkedProcess:
    """The part of `subprocess.Popen` the Executor uses, for a worker the zygote forked: signals go
    through a pidfd (no pid reuse race), the exit status comes from the zygote."""

    def __init__(self, zygote: Zygote, pid: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.returncode: int | None = None
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # already gone: its exit status is on its way
            pass
        except OSError:  # no pidfds (Linux before 5.3): signals go by pid while no exit is reported
            self._pidfd = -1

    def poll(self) -> int | None:
        if self.returncode is None:
            self.zygote.pump(0.0)
            self._take_exit()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            self.zygote.pump(min(1.0, left) if left is not None else 1.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self._pidfd is None or self.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            if self._pidfd < 0:
                os.kill(self.pid, signum)
            else:
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _take_exit(self) -> None:
        code = self.zygote.exits.pop(self.pid, None)
        if code is None and not self.zygote.alive:
            code = -signal.SIGKILL  # the zygote is gone, and its workers with it (PR_SET_PDEATHSIG)
        if code is not None:
            self.returncode = code
            if self._pidfd is not None and self._pidfd >= 0:
                os.close(self._pidfd)
            self._pidfd = None


class Zygote:
    """The Executor's side: start the zygote, ask it for workers, collect their exit statuses."""

    def __init__(self, env: dict[str, str], log_path: Path, entry: str = "fuzz.engine.zygote.zygote_main") -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            self.proc = popen_python(entry, (theirs.fileno(),), env, log_path)
        self.conn = Connection(ours.detach())
        self.requests, self.replies = Sender[ToZygote](self.conn), Receiver[FromZygote](self.conn)
        self.exits: dict[int, int] = {}
        self.alive = True
        self.compiler_preloaded = False  # whether the compiler's modules were imported too (not on CUDA machines)

    def wait_ready(self, timeout_s: float) -> str:
        """Wait until the zygote has imported everything; "" when it serves, else why not."""
        if not self.replies.poll(timeout_s):
            self.close()
            return f"the zygote did not start within {timeout_s:.0f}s"
        try:
            message = self.replies.recv()
        except (EOFError, OSError):
            message = StartFailed("it exited while starting")
        if not isinstance(message, ZygoteReady):
            self.close()
            return message.summary() if isinstance(message, StartFailed) else f"it sent {message}"
        self.compiler_preloaded = message.compiler
        return ""

    def fork(self, entry: str, read_fd: int, write_fd: int, log_path: Path) -> ForkedProcess:
        """A new worker running `entry(read_fd, write_fd)` (a module's function, by name; the zygote
        gets copies of the two descriptors), its output to `log_path`; OSError if the zygote is gone."""
        self.requests.send(Fork(entry, str(log_path)))
        for fd in (read_fd, write_fd):
            send_handle(self.conn, fd, self.proc.pid)
        while True:
            message = self._recv(timeout=60.0)
            if isinstance(message, Forked):
                return ForkedProcess(self, message.pid)

    def pump(self, timeout: float) -> None:
        """Collect the exit statuses the zygote has reported (waiting at most `timeout`)."""
        with contextlib.suppress(OSError, EOFError):
            while self.alive and self.replies.poll(timeout):
                self._recv(timeout=0.0)
                timeout = 0.0

    def _recv(self, timeout: float) -> FromZygote:
        try:
            if not self.replies.poll(timeout):
                raise OSError("the zygote did not answer")
            message = self.replies.recv()
        except (EOFError, OSError):
            self.alive = False
            raise OSError("the worker zygote is gone") from None
        if isinstance(message, Exited):
            self.exits[message.pid] = message.code
        return message

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.conn.close()
        try:
            self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- the zygote side ------------------------------------------------------------------------------

def zygote_main(fd: int, suite: bool = True) -> None:
    """Import (the suite, or with `suite` False torch only), say ready (or why not), then fork
    workers on request and report how each ends."""
    conn = Connection(fd)
    requests, replies = Receiver[ToZygote](conn), Sender[FromZygote](conn)
    become_child()
    try:
        compiler = _preload(suite)
        refusal = "importing initialized the CUDA driver" if cuda_driver_initialized() else ""
    except Exception:  # noqa: BLE001 - the Executor starts fresh workers; their start reports real errors
        refusal = traceback.format_exc()
    if refusal:
        print(f"not serving (workers start fresh): {refusal}", file=sys.stderr)
        replies.send(StartFailed(refusal))
        return
    import gc

    os.environ["MM_FUZZ_PARENT_PID"] = str(os.getpid())  # the workers' parent is this process
    gc.collect()
    gc.freeze()  # imported objects stay out of the workers' collections (fewer copied pages)
    replies.send(ZygoteReady(compiler))
    while True:
        _report_exits(replies)
        try:
            if not requests.poll(POLL_S):
                continue
            request = requests.recv()
        except (EOFError, OSError):
            return  # the Executor is gone or done; our workers follow us (PR_SET_PDEATHSIG)
        read_fd, write_fd = recv_handle(conn), recv_handle(conn)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _run_worker(request.entry, read_fd, write_fd, Path(request.log_path))
        os.close(read_fd)
        os.close(write_fd)
        replies.send(Forked(pid))


def script_zygote_main(fd: int) -> None:
    """The zygote of fuzz.engine.script_pool: torch (and its compiler) only, none of the suite, so
    that a script forked from it starts as in a fresh `python`."""
    zygote_main(fd, suite=False)


def _preload(suite: bool) -> bool:
    """Import the suite (torch, inductor's config and lowering, the oracles), or torch only, and,
    where torch found no CUDA driver, the compiler's modules too: on the H200 (torch 2.11) one of
    them initializes the driver at import, after which no worker could be forked. True if the
    compiler was loaded."""
    if suite:
        import fuzz.run.session  # noqa: F401 - imported for its side effect: loaded before the fork
        import strategies.case  # noqa: F401 - imported for its side effect: loaded before the fork
    from fuzz.probe.speedups import preload_compiler  # imports torch

    with open("/proc/self/maps") as maps:
        if cuda_driver_path(maps.read()) is not None:
            return False
    preload_compiler()
    return True


def _report_exits(replies: Sender[FromZygote]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        replies.send(Exited(pid, os.waitstatus_to_exitcode(status)))


def _run_worker(entry: str, read_fd: int, write_fd: int, log_path: Path) -> None:
    """In the forked child: output to the worker's log, run `entry`, never return."""
    import atexit
    import importlib

    module, _, func = entry.rpartition(".")
    code = 1
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for target in (1, 2):
            os.dup2(log, target)
        os.close(log)
        getattr(importlib.import_module(module), func)(read_fd, write_fd)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - the worker's last words, then the exit status says the rest
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            atexit._run_exitfuncs()  # what a fresh worker runs at exit (inductor's pools shut down)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
