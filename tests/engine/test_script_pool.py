"""The warm pool of repro checks (fuzz.engine.script_pool): a script forked from it sees what a fresh
`python script.py` sees, and its time limit and cancel kill it with what it started."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz.engine.children import REPO_ROOT, run_bounded
from fuzz.engine.script_pool import ScriptPool, warm_pool
from tests.fakes import process_alive

PROBE = """\
import json, os, signal, sys
print(json.dumps({
    "argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("PROBE_VALUE"),
    "leaked": os.environ.get("PROBE_LEAK"), "path0": sys.path[0], "repo": sys.argv[1] in sys.path,
    "suite": sorted(n for n in sys.modules if n.partition(".")[0] in ("fuzz", "strategies", "oracles")),
    "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
    "session": os.getsid(0) == os.getpid(),
}))
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptPool]:
    started = ScriptPool(tmp_path_factory.mktemp("pool"))
    assert started.serves(), started.refused  # ready before the tests time their runs
    yield started
    started.close()


def _probe(tmp_path: Path) -> tuple[list[str], str, dict[str, str]]:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PROBE_VALUE": "here"}
    return [sys.executable, str(script), str(REPO_ROOT), "3"], str(cwd), env


def test_a_forked_script_sees_what_a_fresh_python_sees(pool: ScriptPool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cmd, cwd, env = _probe(tmp_path)
    monkeypatch.setenv("PROBE_LEAK", "the pool's own environment")  # neither may see it: `env` is exact
    fresh = run_bounded(cmd, cwd=cwd, env=env, timeout_s=60)
    forked = pool.run(cmd, cwd=cwd, env=env, timeout_s=60)
    assert pool.serves(), pool.refused
    assert forked[0] == fresh[0] == 3
    assert json.loads(forked[1]) == json.loads(fresh[1]) == {
        "argv": [str(REPO_ROOT), "3"], "cwd": cwd, "env": "here", "leaked": None, "path0": str(tmp_path),
        "repo": False, "suite": [], "sigint": True, "sigterm": True, "session": True}
    assert forked[2].strip() == fresh[2].strip() == "to stderr"


def test_a_module_run_keeps_the_repository_its_pythonpath_names(pool: ScriptPool, tmp_path: Path) -> None:
    env = dict(os.environ) | {"PYTHONPATH": str(REPO_ROOT)}
    cmd = [sys.executable, "-m", "fuzz.engine.machine"]  # imports the suite's module, runs nothing
    code, out, err = pool.run(cmd, cwd=str(tmp_path), env=env, timeout_s=60, merge_output=True)
    assert (code, out, err) == (0, "", "")


def test_the_time_limit_kills_the_script_and_what_it_started(pool: ScriptPool, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"
    script = tmp_path / "hang.py"
    script.write_text("import subprocess, sys, time\n"
                      f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                      f"open({str(pid_file)!r}, 'w').write(str(p.pid))\ntime.sleep(600)\n")
    began = time.monotonic()
    code, _, _ = pool.run([sys.executable, str(script)], cwd=str(tmp_path), env=dict(os.environ), timeout_s=3)
    assert code is None and time.monotonic() - began < 10
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not process_alive(grandchild):
            break
        time.sleep(0.1)
    assert not process_alive(grandchild)


def test_cancel_stops_a_running_script(pool: ScriptPool, tmp_path: Path) -> None:
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(600)\n")
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    began = time.monotonic()
    code, _, _ = pool.run([sys.executable, str(script)], cwd=str(tmp_path), env=dict(os.environ), timeout_s=60,
                          cancel=cancel)
    assert code is None and time.monotonic() - began < 10


def test_without_checks_to_run_no_pool_starts(tmp_path: Path) -> None:
    lines: list[str] = []
    with warm_pool(False, lines.append) as runner:
        assert runner is run_bounded
    assert lines == []
