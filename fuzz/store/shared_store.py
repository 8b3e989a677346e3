"""The store that several hosts of one campaign share: a Redis server, or a shared directory.

It holds Hypothesis' example database and every host's findings and campaign record. Each host
writes only its own entries (`hosts/<host id>/...` in a directory, one hash field per host in
Redis), each write atomic, each the host's whole current state of that entry: a write can be
repeated any number of times (after a timeout, a reconnect, a Redis that restarted empty) without
counting anything twice. Reading merges the hosts (`fuzz.store.findings.merge`: counts add up, the
earliest sighting and the smallest shrunk case win), so a finding is one finding across hosts
the moment two hosts have written it. Claims (who minimizes a finding) are first-wins.

`StoreSync` is the coordinator's side: it keeps what could not be written yet and writes it when
the store answers again, so an unreachable or restarted store costs no findings (the host's own
output directory keeps them meanwhile). All Redis code of the suite is in this module.

A store URL may carry a password (`redis://:secret@host:6379/0`, `rediss://` for TLS): only
`redact(url)` is ever printed or recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hypothesis.database import ExampleDatabase

from fuzz.store.findings import (
    CAMPAIGN_FILE,
    FINDINGS_DIR,
    Finding,
    Warn,
    iter_finding_files,
    load_campaign,
    merge,
    write_json_atomic,
)

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
PREFIX = "mm-autotune-fuzz:"
SAMPLES_FILE = "samples.jsonl"
HOSTS_DIR = "hosts"


class StoreError(Exception):
    """The store cannot be used (bad URL, missing redis package, unreachable at start); one line."""


def is_url(spec: str) -> bool:
    return str(spec).startswith(REDIS_SCHEMES)


def redact(spec: str) -> str:
    """`spec` with any password (and user name) replaced by ***: what logs and reports show."""
    return re.sub(r"^([a-z]+://)[^@/]*@", r"\1***@", str(spec))


def _unavailable() -> tuple[type[BaseException], ...]:
    """Errors meaning 'the store did not answer now' (try again later), not 'the data is wrong'."""
    errors: tuple[type[BaseException], ...] = (OSError,)
    with contextlib.suppress(ImportError):
        import redis

        errors += (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.BusyLoadingError)
    return errors


class DirectoryStore:
    """A shared directory: `examples/` (Hypothesis), `hosts/<id>/findings/*.json`,
    `hosts/<id>/campaign.json`, `hosts/<id>/samples.jsonl`, `claims/`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.label = str(self.root)

    def check(self) -> None:
        try:
            (self.root / "claims").mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-test-{os.getpid()}"
            probe.write_text("ok")
            probe.unlink()
        except OSError as e:
            raise StoreError(f"cannot write to store {self.root}: {e.strerror or e}") from None

    def examples_spec(self) -> str:
        return str(self.root / "examples")

    def publish_finding(self, host_id: str, finding: Finding) -> None:
        write_json_atomic(self.root / HOSTS_DIR / host_id / FINDINGS_DIR / finding.file_name(), finding.to_json())

    def publish_record(self, host_id: str, record: dict[str, Any]) -> None:
        write_json_atomic(self.root / HOSTS_DIR / host_id / CAMPAIGN_FILE, record)

    def publish_samples(self, host_id: str, samples: list[dict[str, Any]], start: int) -> None:
        """Write all of the host's `samples` (those from `start` on are new)."""
        path = self.root / HOSTS_DIR / host_id / SAMPLES_FILE
        tmp = path.with_name(f".{SAMPLES_FILE}.{os.getpid()}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text("".join(json.dumps(s, sort_keys=True) + "\n" for s in samples), encoding="utf-8")
        os.replace(tmp, path)

    def claim(self, key: str, host_id: str) -> bool:
        path = self.root / "claims" / (hashlib.sha1(key.encode()).hexdigest() + ".claim")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "host": host_id}, f)
        return True

    def generation(self) -> str:
        return ""  # a directory does not restart

    def claims(self) -> set[str]:
        keys = set()
        for path in (self.root / "claims").glob("*.claim"):
            with contextlib.suppress(OSError, ValueError):
                keys.add(json.loads(path.read_text())["key"])
        return keys

    def load(self, warn: Warn) -> tuple[list[Finding], list[dict[str, Any]], list[dict[str, Any]]]:
        hosts = sorted(p for p in (self.root / HOSTS_DIR).glob("*") if p.is_dir())
        findings = [f for _, f in iter_finding_files([h / FINDINGS_DIR for h in hosts if (h / FINDINGS_DIR).is_dir()],
                                                      warn)]
        records = [load_campaign(h, warn) for h in hosts]
        samples = [s for h in hosts for s in read_samples(h / SAMPLES_FILE, warn)]
        return merge(findings), records, samples


class RedisStore:
    """A Redis server (keys under `mm-autotune-fuzz:`): `finding:<key>` hashes (host id -> that
    host's Finding JSON), a `keys` set, `hosts` (host id -> campaign record), `samples:<host id>`
    hashes, `claims` (finding key -> host id, first wins) and Hypothesis' `examples:` keys."""

    def __init__(self, url: str) -> None:
        try:
            import redis
            from redis.backoff import ExponentialBackoff
            from redis.retry import Retry
        except ImportError:
            raise StoreError("a Redis store needs the redis package (pip install 'mm-autotune-fuzz[redis]' "
                             "or pip install redis)") from None
        self.url, self.label = url, redact(url)
        try:
            self.client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=10,
                                               retry=Retry(ExponentialBackoff(cap=1.0, base=0.1), 1))
        except ValueError as e:
            raise StoreError(f"bad store URL {self.label}: {str(e).replace(url, self.label)}") from None

    def check(self) -> None:
        try:
            self.client.ping()
        except _unavailable() as e:
            raise StoreError(f"store {self.label} does not answer: {type(e).__name__}") from None
        except Exception as e:  # noqa: BLE001 - e.g. a wrong password; the message never carries it
            raise StoreError(f"store {self.label} refused: {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from None

    def examples_spec(self) -> str:
        return self.url

    def example_database(self) -> ExampleDatabase:
        from hypothesis.extra.redis import RedisExampleDatabase

        return TolerantDatabase(RedisExampleDatabase(self.client, key_prefix=f"{PREFIX}examples:".encode()))

    def publish_finding(self, host_id: str, finding: Finding) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(f"{PREFIX}keys", finding.key)
        pipe.hset(f"{PREFIX}finding:{finding.key}", host_id, json.dumps(finding.to_json(), sort_keys=True))
        pipe.execute()

    def publish_record(self, host_id: str, record: dict[str, Any]) -> None:
        self.client.hset(f"{PREFIX}hosts", host_id, json.dumps(record, sort_keys=True))

    def publish_samples(self, host_id: str, samples: list[dict[str, Any]], start: int) -> None:
        """Add the host's new samples (from `start` on) to its hash (keyed by time: idempotent)."""
        if samples[start:]:
            self.client.hset(f"{PREFIX}samples:{host_id}",
                             mapping={f"{s['t']:.3f}": json.dumps(s, sort_keys=True) for s in samples[start:]})

    def claim(self, key: str, host_id: str) -> bool:
        return bool(self.client.hsetnx(f"{PREFIX}claims", key, host_id))

    def generation(self) -> str:
        """Redis' run id: a new one means the server restarted (and may have lost recent writes)."""
        return str(self.client.info("server").get("run_id", ""))

    def claims(self) -> set[str]:
        return {_text(k) for k in self.client.hkeys(f"{PREFIX}claims")}

    def load(self, warn: Warn) -> tuple[list[Finding], list[dict[str, Any]], list[dict[str, Any]]]:
        keys = sorted(_text(k) for k in self.client.smembers(f"{PREFIX}keys"))
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(f"{PREFIX}finding:{key}")
        findings = []
        for key, per_host in zip(keys, pipe.execute(), strict=True):
            for host, text in sorted(per_host.items()):
                parsed = _parse(text, lambda d: Finding.from_json(d), f"finding {key} of host {_text(host)}", warn)
                if parsed is not None:
                    findings.append(parsed)
        hosts = self.client.hgetall(f"{PREFIX}hosts")
        records = [r for host, text in sorted(hosts.items())
                   if (r := _parse(text, _record, f"campaign record of host {_text(host)}", warn)) is not None]
        samples = []
        for host in sorted(hosts):
            for _, text in sorted(self.client.hgetall(f"{PREFIX}samples:{_text(host)}").items()):
                if (s := _parse(text, dict, "sample", warn)) is not None:
                    samples.append(s)
        return merge(findings), records, samples


def _record(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
        raise ValueError("not a campaign record")
    return data


def _text(value: bytes | str) -> str:
    """A Redis key or field as text (the client returns bytes: no decode_responses)."""
    return value.decode() if isinstance(value, bytes) else value


def _parse(text: bytes | str, make: Callable[[Any], Any], what: str, warn: Warn) -> Any:
    try:
        return make(json.loads(text))
    except (ValueError, TypeError) as e:
        warn(f"skipping corrupt {what} in the store: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return None


def read_samples(path: Path, warn: Warn) -> list[dict[str, Any]]:
    """The samples of a samples.jsonl file (a torn last line, from a kill, is skipped quietly)."""
    if not path.is_file():
        return []
    out = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for i, line in enumerate(lines):
        try:
            sample = json.loads(line)
        except json.JSONDecodeError:
            if i < len(lines) - 1:
                warn(f"skipping corrupt line {i + 1} of {path}")
            continue
        if isinstance(sample, dict) and "t" in sample:
            out.append(sample)
    return out


class TolerantDatabase(ExampleDatabase):
    """Hypothesis' example database over a store that may not answer for a while: a fetch that
    fails finds nothing, a save that fails is dropped (examples are a head start, not findings)."""

    def __init__(self, inner: ExampleDatabase) -> None:
        super().__init__()
        self.inner = inner

    def fetch(self, key: bytes) -> Iterable[bytes]:
        try:
            return list(self.inner.fetch(key))
        except _unavailable():
            return []

    def save(self, key: bytes, value: bytes) -> None:
        with contextlib.suppress(*_unavailable()):
            self.inner.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        with contextlib.suppress(*_unavailable()):
            self.inner.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        with contextlib.suppress(*_unavailable()):
            self.inner.move(src, dest, value)


def open_store(spec: str) -> DirectoryStore | RedisStore:
    """The store a `--store` value names: a Redis URL or a directory."""
    return RedisStore(spec) if is_url(spec) else DirectoryStore(Path(spec))


def open_database(spec: str) -> ExampleDatabase | None:
    """The Hypothesis example database a `--db` value names: a directory, a Redis URL, or none."""
    from hypothesis.database import DirectoryBasedExampleDatabase

    if spec == "none":
        return None
    return RedisStore(spec).example_database() if is_url(spec) else DirectoryBasedExampleDatabase(spec)


class StoreSync:
    """The coordinator's writer to the shared store: what changed is written at most every
    `interval_s`; what could not be written stays pending and is written when the store answers
    again (everything is written again then: a restarted Redis may have lost what it had)."""

    def __init__(self, store: DirectoryStore | RedisStore, host_id: str, emit: Callable[[str], None],
                 interval_s: float = 1.0) -> None:
        self.store, self.host_id, self.emit, self.interval_s = store, host_id, emit, interval_s
        self.findings: dict[str, Finding] = {}
        self.dirty: set[str] = set()
        self.record: dict[str, Any] | None = None
        self.samples: list[dict[str, Any]] = []
        self.samples_written = 0
        self.record_dirty = False
        self.down_since: float | None = None
        self.next_try = 0.0
        self.claimed: set[str] = set()
        self.generation: str | None = None

    def finding(self, finding: Finding) -> None:
        self.findings[finding.key] = finding
        self.dirty.add(finding.key)

    def campaign(self, record: dict[str, Any], samples: list[dict[str, Any]]) -> None:
        self.record, self.samples, self.record_dirty = record, samples, True

    @property
    def pending(self) -> int:
        return len(self.dirty) + self.record_dirty + (len(self.samples) > self.samples_written)

    def mark_all(self) -> None:
        """Write everything this host has again (the store may have lost it)."""
        self.dirty, self.record_dirty, self.samples_written = set(self.findings), True, 0

    def claim(self, key: str) -> None:
        """Claim `key` for this host (best effort: a store that does not answer just loses the race)."""
        with contextlib.suppress(*_unavailable()):
            self.store.claim(key, self.host_id)

    def flush(self, force: bool = False) -> bool:
        """Write what is pending (unless the store failed less than a back-off ago); True when
        nothing is pending afterwards. Also refreshes `claimed` (keys any host minimizes)."""
        now = time.monotonic()
        if not force and now < self.next_try:
            return not self.pending
        try:
            generation = self.store.generation()
            if self.generation is not None and generation != self.generation:
                self.emit(f"store {self.store.label} restarted: writing everything again")
                self.mark_all()
            self.generation = generation
            for key in sorted(self.dirty):
                self.store.publish_finding(self.host_id, self.findings[key])
                self.dirty.discard(key)
            if self.record_dirty and self.record is not None:
                self.store.publish_record(self.host_id, self.record)
                self.record_dirty = False
            if len(self.samples) > self.samples_written:
                self.store.publish_samples(self.host_id, self.samples, self.samples_written)
                self.samples_written = len(self.samples)
            self.claimed = self.store.claims()
        except _unavailable() as e:
            if self.down_since is None:
                self.down_since = now
                self.emit(f"store {self.store.label} does not answer ({type(e).__name__}): keeping "
                          f"{self.pending} change(s) here and retrying")
            self.next_try = now + min(30.0, 1.0 + (now - self.down_since) / 2)
            return False
        if self.down_since is not None:
            self.emit(f"store {self.store.label} answers again after {now - self.down_since:.0f}s: "
                      "everything written again")
            self.down_since = None
            self.mark_all()
            return self.flush(force=True)
        self.next_try = now + self.interval_s
        return True

    def drain(self, timeout_s: float) -> bool:
        """Write everything pending, trying for up to `timeout_s`; True when nothing is left."""
        deadline = time.monotonic() + timeout_s
        while not self.flush(force=True):
            if time.monotonic() >= deadline:
                return False
            time.sleep(1.0)
        return True
