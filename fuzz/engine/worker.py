"""The worker process (started by an Executor: fuzz.engine.executor): warms up, then evaluates the
cases it is sent one at a time with one FuzzSession and sends back each verdict as plain data; it
quits after a case that poisoned its CUDA context. Also the suite's test-only fault injection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import time
from typing import Any

from fuzz.engine.children import child_connections
from fuzz.engine.machine import GPU_LOCK_ENV
from fuzz.engine.messages import (
    CaseVerdict,
    FromWorker,
    InvalidCase,
    Receiver,
    RunCase,
    Sender,
    StartFailed,
    ToWorker,
    WorkerReady,
)

POISONED_CONTEXT = ("illegal memory access", "device-side assert", "unspecified launch failure",
                    "illegal instruction", "misaligned address", "CUDA error: an illegal")
"""Messages after which a CUDA context is unusable: the worker is replaced after reporting."""


def worker_main(read_fd: int, write_fd: int) -> None:
    """Receive cases, evaluate each with one FuzzSession, send back serialized verdicts."""
    read, write = child_connections(read_fd, write_fd)
    inbox, outbox = Receiver[ToWorker](read), Sender[FromWorker](write)
    import faulthandler
    import traceback

    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the driver asks for this before killing a hang
    coverage = _start_coverage()
    try:
        from fuzz.probe.plants import apply_from_env
        from fuzz.run.harness import release_device_memory
        from fuzz.run.session import FuzzSession
        from strategies.case import Case, CaseError

        apply_from_env()  # a planted bug, for `fuzz bench --time-to-find` (fuzz.probe.plants.PLANT_ENV)
        session = FuzzSession()
        info = environment()
        _warm_up(session, info["device"])
        outbox.send(WorkerReady(info))
    except Exception:  # noqa: BLE001 - reported to the driver as one line, then fatal
        outbox.send(StartFailed(traceback.format_exc()))
        return
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            break
        if not isinstance(message, RunCase):
            break
        try:
            case = Case.from_json(message.case)
        except CaseError as e:
            outbox.send(InvalidCase(str(e)))
            continue
        _test_fault(case)
        began = time.monotonic()
        verdict = session.evaluate(case)
        result = serialize_verdict(verdict, time.monotonic() - began)  # first: it asks whether CUDA still works
        if not result["poisoned"]:  # empty_cache on a poisoned context raises: the worker would die unheard
            release_device_memory()  # what this case's tensors took goes back to the GPU's other workers
        if coverage is not None:
            coverage.save()
        outbox.send(CaseVerdict(result))
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
