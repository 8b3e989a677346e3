"""The store the hosts of one campaign share (a real redis-server on loopback, or a directory):
findings merge across hosts with exact counts, writes can be repeated without counting twice,
an unreachable or restarted Redis costs no findings, and a password in the URL never shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fuzz.cli import main
from fuzz.store.findings import Finding, record_from_violation
from fuzz.store.shared_store import DirectoryStore, RedisStore, StoreError, StoreSync, open_store, redact
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
CASE = {"op": "mm", "config": {"max_autotune": True}, "inputs": []}


def finding(host: str, count: int, signature: str = "tolerance:mm:float16") -> Finding:
    v = {"oracle": "numerics", "severity": "wrong result", "signature": signature, "message": "m"}
    f = record_from_violation(v, CASE, known_bug=None, violations=[v], versions={},
                              origin={"host": host.split("-")[0], "host_id": host})
    f.count, f.sightings = count, {host: count}
    return f


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["directory", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> DirectoryStore | RedisStore:
    if request.param == "directory":
        return DirectoryStore(tmp_path / "shared")
    return RedisStore(request.getfixturevalue("redis_server").url)


def test_hosts_merge_into_one_finding_and_repeated_writes_count_once(store: DirectoryStore | RedisStore) -> None:
    store.check()
    for _ in range(2):  # a write repeated (a retry, a resync) is the same state, not more sightings
        store.publish_finding("a-1", finding("a-1", 3))
        store.publish_finding("b-2", finding("b-2", 4))
    store.publish_finding("b-2", finding("b-2", 1, "other"))
    store.publish_record("a-1", {"sessions": [{"cases": 10, "seconds": 60}]})
    store.publish_record("b-2", {"sessions": [{"cases": 20, "seconds": 60}]})
    findings, records, _ = store.load(pytest.fail)
    merged = {f.signature: f for f in findings}
    assert set(merged) == {"tolerance:mm:float16", "other"}
    assert merged["tolerance:mm:float16"].count == 7
    assert merged["tolerance:mm:float16"].sightings == {"a-1": 3, "b-2": 4}
    assert merged["tolerance:mm:float16"].hosts == ["a", "b"]
    assert sorted(r["sessions"][0]["cases"] for r in records) == [10, 20]


def test_claims_are_first_wins(store: DirectoryStore | RedisStore) -> None:
    store.check()
    assert store.claim("numerics/x", "a-1") and not store.claim("numerics/x", "b-2")
    assert store.claims() == {"numerics/x"}


def test_an_unreachable_or_restarted_redis_costs_no_findings(redis_server: RedisServer) -> None:
    said: list[str] = []
    sync = StoreSync(RedisStore(redis_server.url), "a-1", said.append)
    sync.finding(finding("a-1", 2))
    assert sync.flush(force=True)
    redis_server.stop()  # unreachable: what changes meanwhile waits here
    later = finding("a-1", 5, "later")
    sync.finding(later)
    assert not sync.flush(force=True) and sync.pending == 1 and "does not answer" in said[-1]
    redis_server.start()  # back, empty (no persistence): everything is written again
    assert sync.flush(force=True) and "answers again" in said[-1]
    findings, _, _ = RedisStore(redis_server.url).load(pytest.fail)
    assert {(f.signature, f.count) for f in findings} == {("tolerance:mm:float16", 2), ("later", 5)}

    redis_server.stop()  # a restart between two writes (no failed write): seen by Redis' run id
    redis_server.start()
    assert sync.flush(force=True) and "restarted" in said[-1]
    findings, _, _ = RedisStore(redis_server.url).load(pytest.fail)
    assert {(f.signature, f.count) for f in findings} == {("tolerance:mm:float16", 2), ("later", 5)}


def test_report_reads_the_store(store: DirectoryStore | RedisStore, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    store.check()
    store.publish_finding("a-1", finding("a-1", 3))
    store.publish_finding("b-2", finding("b-2", 4))
    spec = store.url if isinstance(store, RedisStore) else str(store.root)
    assert main(["report", spec, "--json", str(tmp_path / "r.json")]) == 0
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["distinct_findings"] == 1 and summary["findings"][0]["count"] == 7
    assert summary["findings"][0]["sightings"] == {"a-1": 3, "b-2": 4}
    assert "`tolerance:mm:float16`" in capsys.readouterr().out


def test_a_password_in_the_store_url_never_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert redact("redis://:s3cret@host:6379/0") == "redis://***@host:6379/0"
    assert redact("rediss://user:s3cret@host/1") == "rediss://***@host/1"
    assert redact("redis://host:6379/0") == "redis://host:6379/0" and redact("/shared/dir") == "/shared/dir"
    server = RedisServer(tmp_path, password="right-one")
    server.start()
    try:
        wrong = f"redis://:s3cret@127.0.0.1:{server.port}/0"
        with pytest.raises(StoreError) as e:
            open_store(wrong).check()
        assert "s3cret" not in str(e.value) and "***" in str(e.value)
        with pytest.raises(SystemExit) as exit_info:
            main(["report", wrong])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and "s3cret" not in err and len(err.strip().splitlines()) == 1, err
    finally:
        server.stop()


@pytest.mark.campaign
def test_a_campaign_on_a_password_protected_store(tmp_path: Path) -> None:
    """The campaign writes its findings, record and the examples it shrank to the store; the password
    appears nowhere in its output directory (logs, reports, findings, repros)."""
    server = RedisServer(tmp_path, password="s3cret-word")
    server.start()
    try:
        out = tmp_path / "out"
        # from the environment: not on the command line; every case fails (the worker exits), so a finding
        # is shrunk and its example saved (exploration alone writes no example)
        env = {**os.environ, "MM_FUZZ_STORE": server.url, "MM_FUZZ_TEST_FAULT": "exit"}
        proc = subprocess.run([sys.executable, "-m", "fuzz", "run", "--budget", "10s", "--out", str(out),
                               "--op", "mm", "--backend", "ATEN", "--device", "cpu", "--workers", "1", "--seed", "7",
                               "--progress", "plain"], check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode in (0, 1), proc.stderr
        assert "store redis://***@127.0.0.1" in proc.stderr and "s3cret-word" not in proc.stdout + proc.stderr
        leaks = [p for p in out.rglob("*") if p.is_file() and b"s3cret-word" in p.read_bytes()]
        assert leaks == []
        store = RedisStore(server.url)
        _, records, samples = store.load(pytest.fail)
        assert len(records) == 1 and records[0]["sessions"][0]["cases"] > 0 and records[0]["store"].startswith(
            "redis://***@") and samples
        assert store.client.keys("mm-autotune-fuzz:examples:*")  # Hypothesis' example database lives there
    finally:
        server.stop()
