"""Process isolation: every case runs in a worker process that a crash, a poisoned CUDA context or
a hang can take down without taking the campaign with it.

`Executor` (used by the process that drives Hypothesis) starts a worker with its
`CUDA_VISIBLE_DEVICES`, `TORCHINDUCTOR_CACHE_DIR` and `TRITON_CACHE_DIR` set before Python starts
(so before torch is imported; the code caches are the machine's, shared by its workers), on a CPU
machine forked from its zygote (fuzz/engine/zygote.py: the imports paid once), sends it one case at a time, and waits at
most the per-case timeout. A worker that dies (signal, exit) or hangs is killed, its last words
(the faulthandler dump in its log) are kept, and the next case starts a new one. `worker_main` is
the worker side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fuzz.engine.children import become_child, popen_python
from fuzz.engine.zygote import ForkedProcess, Zygote
from fuzz.probe.catalogue_cache import CATALOGUE_DIR_ENV

GPU_LOCK_ENV = "MM_FUZZ_GPU_BENCHMARK_LOCK"
"""The lock file the workers of one GPU time kernels under (fuzz.probe.speedups.serialize_gpu_benchmarks)."""
POISONED_CONTEXT = ("illegal memory access", "device-side assert", "unspecified launch failure",
                    "illegal instruction", "misaligned address", "CUDA error: an illegal")
"""Messages after which a CUDA context is unusable: the worker is replaced after reporting."""


def visible_gpu_ids() -> list[str]:
    """Ids of the visible NVIDIA GPUs, found without initializing CUDA in this process."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(line for line in out.splitlines() if line.startswith("GPU "))]


def usable_cpus() -> int:
    """The cores this process may run on (its affinity mask, e.g. under taskset), not the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cache_root() -> Path:
    """Per-user scratch for inductor / Triton caches (not the findings dir: CI uploads that)."""
    return Path(tempfile.gettempdir()) / f"mm-fuzz-{os.getuid()}" / "campaign"


@dataclasses.dataclass
class Child:
    """A Python child process, the two pipe ends this process talks to it through, and its log."""

    proc: subprocess.Popen[bytes] | ForkedProcess
    to_child: Connection
    from_child: Connection
    log_path: Path

    def close(self, grace_s: float = 5.0) -> None:
        for conn in (self.to_child, self.from_child):
            with contextlib.suppress(OSError):
                conn.close()
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


def spawn_python(entry: str, env: dict[str, str], log_path: Path) -> Child:
    """Start `python -c "<entry>(read_fd, write_fd)"` with `env`, stdout/stderr to `log_path`."""
    return _start_child(log_path, lambda down_r, up_w: popen_python(entry, (down_r, up_w), env, log_path))


def _start_child(log_path: Path, start: Callable[[int, int], Any]) -> Child:
    """Two pipes, and the child `start(read_fd, write_fd)` starts at their far ends."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    try:
        proc = start(down_r, up_w)
    finally:
        os.close(down_r)
        os.close(up_w)
    return Child(proc, Connection(down_w, readable=False), Connection(up_r, writable=False), log_path)


def child_connections(read_fd: int, write_fd: int) -> tuple[Connection, Connection]:
    """The child's ends of `spawn_python`'s pipes; also ties its life to its parent's."""
    become_child()
    return Connection(read_fd, writable=False), Connection(write_fd, readable=False)


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
        self.child: Child | None = None
        self.spare: Child | None = None
        self.info: dict[str, Any] = {}
        self.starts = self.launches = 0
        self.zygote: Zygote | None = None
        self.zygote_refused = ""  # why no zygote serves this Executor (its workers then start fresh)
        if coverage_dir is not None:
            self.zygote_refused = "coverage must see the imports"
        elif bool(gpu) if gpu is not None else bool(visible_gpu_ids()):  # gpu "" hides the GPUs
            self.zygote_refused = "a GPU worker: the compiler's modules initialize CUDA at import"

    @property
    def restarts(self) -> int:
        return max(0, self.starts - 1)

    def env(self) -> dict[str, str]:
        # One code cache for all the workers of a machine: inductor's and Triton's caches are keyed by the
        # kernel's source and compile command and locked per key (the way inductor shares them between all
        # of a user's processes by default), so a kernel one worker compiled is loaded, not rebuilt, by the
        # others; the caches that skip lowering or selection stay off (fuzz.probe.observe.LOWERING_SKIPPING_CACHES).
        caches = self.cache_dir
        env = {"TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton"),
               CATALOGUE_DIR_ENV: str(caches / "catalogues"), "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
        if self.compile_threads is not None:  # workers sharing a machine split its cores for kernel compiles
            env["TORCHINDUCTOR_COMPILE_THREADS"] = str(self.compile_threads)
            if self.compile_threads < usable_cpus() and "OMP_WAIT_POLICY" not in os.environ:
                env["OMP_WAIT_POLICY"] = "PASSIVE"  # an idle OpenMP thread sleeps instead of spinning on a shared core
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
            env[GPU_LOCK_ENV] = str(caches / f"gpu{self.gpu}.benchmark.lock")
        if self.coverage_dir is not None:
            env["MM_FUZZ_COVERAGE_DIR"] = str(self.coverage_dir)
        return env

    def _launch(self) -> Child:
        self.launches += 1  # logs rotate over three files: a dead worker's log survives its successor
        log_path = self.log_dir / f"worker-{self.index}.{self.launches % 3}.log"
        zygote = self._zygote()
        if zygote is not None:
            with contextlib.suppress(OSError):  # the zygote died: this worker starts fresh, the next gets a new one
                return _start_child(log_path, lambda read_fd, write_fd: zygote.fork(
                    "fuzz.engine.workers.worker_main", read_fd, write_fd, log_path))
        return spawn_python("fuzz.engine.workers.worker_main", self.env(), log_path)

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
            kind, payload = child.from_child.recv()
        except (EOFError, OSError):
            kind, payload = "error", child.tail() or "the worker exited while starting"
        if kind != "ready":
            child.kill()
            raise WorkerStartError(f"worker {self.index} failed to start: {str(payload).strip().splitlines()[-1]}")
        self.child, self.info = child, payload
        return payload

    def run(self, case_json: dict[str, Any]) -> Outcome:
        """Run one case; never raises for what the case does to the worker."""
        if self.child is None or self.child.proc.poll() is not None:
            self.start()
        child = self.child
        assert child is not None
        began = time.monotonic()
        try:
            child.to_child.send(("case", case_json))
            ready = child.from_child.poll(self.case_timeout_s)
            message = child.from_child.recv() if ready else None
        except (EOFError, OSError):
            message, ready = None, True
        seconds = time.monotonic() - began
        if message is not None and message[0] == "invalid":
            return Outcome(invalid=str(message[1]), seconds=seconds)
        if message is not None and not message[1].get("poisoned"):
            return Outcome(verdict=message[1], seconds=seconds)
        self.child = None
        if self.spare is None:
            self.spare = self._launch()
        if message is not None:  # the worker replied, then quit: its CUDA context is unusable
            self._reap(child, wait_s=30.0)
            return Outcome(verdict=message[1], death="cuda-context-poisoned",
                           detail="the case left the CUDA context unusable (" + message[1]["poisoned"] + ")",
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
                self.child.to_child.send(("stop", None))
            self.child.close()
            self.child = None
        if self.spare is not None:
            self.spare.kill()
            self.spare = None
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    @staticmethod
    def _reap(child: Child, wait_s: float = 10.0) -> int:
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


# --- the worker side -----------------------------------------------------------------------------

def worker_main(read_fd: int, write_fd: int) -> None:
    """Receive cases, evaluate each with one FuzzSession, send back serialized verdicts."""
    inbox, outbox = child_connections(read_fd, write_fd)
    import faulthandler
    import traceback

    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the driver asks for this before killing a hang
    coverage = _start_coverage()
    try:
        from fuzz.run.harness import release_device_memory
        from fuzz.run.session import FuzzSession
        from strategies.case import Case, CaseError

        session = FuzzSession()
        info = environment()
        _warm_up(session, info["device"])
        outbox.send(("ready", info))
    except Exception:  # noqa: BLE001 - reported to the driver as one line, then fatal
        outbox.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            kind, payload = inbox.recv()
        except (EOFError, OSError):
            break
        if kind != "case":
            break
        try:
            case = Case.from_json(payload)
        except CaseError as e:
            outbox.send(("invalid", str(e)))
            continue
        _test_fault(case)
        began = time.monotonic()
        verdict = session.evaluate(case)
        result = serialize_verdict(verdict, time.monotonic() - began)  # first: it asks whether CUDA still works
        if not result["poisoned"]:  # empty_cache on a poisoned context raises: the worker would die unheard
            release_device_memory()  # what this case's tensors took goes back to the GPU's other workers
        if coverage is not None:
            coverage.save()
        outbox.send(("verdict", result))
        if result["poisoned"]:
            break  # a poisoned CUDA context fails everything after it: let the driver start a fresh worker


def _warm_up(session: Any, device: str) -> None:
    """Pay inductor's first-use costs before the first case's timeout starts: one trivial compile
    on the worker's device (Triton's import and CUDA context; on the CPU, the precompiled header),
    on a GPU the shared template catalogue. Install the compile speed-ups and, on a GPU shared with
    other workers, the benchmark lock and this worker's share of the cores for tensor work (on the
    CPU the thread count stays inductor's: it shapes the CPP GEMM code)."""
    import torch

    from fuzz.probe import inductor
    from fuzz.probe.speedups import remember_compile_failures, serialize_gpu_benchmarks, speed_up_compiles

    speed_up_compiles()  # gold first: the failure memory over it keys and raises inductor's own command
    remember_compile_failures()
    if device == "cuda":
        if os.environ.get(GPU_LOCK_ENV):
            serialize_gpu_benchmarks(os.environ[GPU_LOCK_ENV])
        if os.environ.get("TORCHINDUCTOR_COMPILE_THREADS"):
            torch.set_num_threads(int(os.environ["TORCHINDUCTOR_COMPILE_THREADS"]))
    torch.compile(lambda x: x + 1)(torch.ones(2, device=device))
    inductor.reset_dynamo()
    if device == "cuda":
        session.catalogue  # noqa: B018 - read now, not inside the first Triton case


def _test_fault(case: Any) -> None:
    """TEST-ONLY fault injection, for the suite's own fault-tolerance tests: with
    MM_FUZZ_TEST_FAULT="KIND:seed=N" (or "KIND:case=H[,H...]", H the first 16 hex digits of the sha256
    of `case.dumps()`) the worker misbehaves on matching cases (KIND: segv, kill, exit, hang, or
    cuda-assert: an out-of-bounds CUDA index whose device-side assert poisons the context).
    Never set outside tests."""
    spec = os.environ.get("MM_FUZZ_TEST_FAULT")
    if not spec:
        return
    kind, _, condition = spec.partition(":")
    if condition.startswith("case="):
        import hashlib

        if hashlib.sha256(case.dumps().encode()).hexdigest()[:16] not in condition[5:].split(","):
            return
    elif condition and condition != f"seed={case.seed}":
        return
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "exit":
        os._exit(3)
    elif kind == "hang":
        time.sleep(3600)
    elif kind == "cuda-assert":
        import torch

        torch.zeros(1, device="cuda")[torch.tensor([7], device="cuda")]  # asynchronous: the case meets it


def serialize_verdict(verdict: Any, seconds: float) -> dict[str, Any]:
    """A FuzzSession Verdict as plain data for the pipe and the findings store."""
    from oracles.numerics import error_ratio

    obs = verdict.observation
    try:
        ratio = float(min(error_ratio(obs), 1e6))
    except Exception:  # noqa: BLE001 - targeting is a hint; a failure here must not lose the verdict
        ratio = 0.0
    failures = [f for f in (obs.compile_failure, obs.eager_failure) if f is not None]
    return {
        "violations": [dataclasses.asdict(v) for v in verdict.violations],
        "known": [{"violation": dataclasses.asdict(v), "bug": {"name": b.name, "tracking": b.tracking}}
                  for v, b in verdict.known],
        "rejected": bool(verdict.rejected),
        "error_ratio": ratio,
        "failure": dataclasses.asdict(failures[0]) if failures else None,
        "poisoned": _poisoned(obs.case.device, failures),
        "unavailable": [unavailable_key(c, f) for c, f in obs.unavailable],
        "seconds": round(seconds, 3),
        "timings": {k: round(v, 4) for k, v in obs.timings.items()},
    }


def unavailable_key(choice: Any, failure: Any) -> str:
    """What a campaign counts a choice beyond the GPU by: its template and the resource it lacked."""
    resource = re.search(r"out of resource: ([\w ]+)", failure.message)
    return f"{choice.family}: {resource.group(1) if resource else failure.type}"


def _poisoned(device: str, failures: list[Any]) -> str:
    """Why this worker's CUDA context can no longer be trusted ("" when it can)."""
    if device != "cuda":
        return ""
    for f in failures:
        if any(p in f.message for p in POISONED_CONTEXT):
            return f"{f.type}: {f.message}"[:200]
    import torch

    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - any error here means the context is gone
        return f"torch.cuda.synchronize() raised {type(e).__name__}: {str(e).splitlines()[0][:150]}"
    return ""


def environment() -> dict[str, Any]:
    """Versions and hardware this worker runs on (recorded with every finding)."""
    import importlib.metadata
    import platform
    import socket

    import torch

    from strategies.cases import default_device, ops_for

    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    info: dict[str, Any] = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "hip": torch.version.hip,
        "triton": version("triton") or version("pytorch-triton"), "hypothesis": version("hypothesis"),
        "python": platform.python_version(), "platform": platform.platform(), "host": socket.gethostname(),
        "device": default_device(), "gpu": None, "driver": None,
    }
    info["ops"] = list(ops_for(info["device"]))  # asked here: the driver must not initialize CUDA
    if info["device"] == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        with contextlib.suppress(Exception):
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
                                 capture_output=True, text=True, timeout=30, check=False).stdout.strip()
            info["driver"] = out.splitlines()[0] if out else None
    return info


def _start_coverage() -> Any:
    out = os.environ.get("MM_FUZZ_COVERAGE_DIR")
    if not out:
        return None
    from fuzz.tools.coverage_report import start_coverage

    return start_coverage(out)
