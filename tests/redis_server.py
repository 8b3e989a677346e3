"""A throwaway redis-server on loopback for the shared-store tests (no persistence: a restart
comes back empty, the worst case a campaign must survive). Without redis-server the tests skip,
unless MM_FUZZ_REQUIRE_REDIS is set (CI sets it: there a missing server is a failure)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, workdir: Path, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("MM_FUZZ_REQUIRE_REDIS"):
                pytest.fail("redis-server is not installed (MM_FUZZ_REQUIRE_REDIS is set)")
            pytest.skip("needs redis-server (apt-get install redis-server)")
        pytest.importorskip("redis")
        self.binary, self.workdir, self.password = binary, workdir, password
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir)]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
