"""The findings store: one JSON file per distinct finding, deduplicated by violation signature.

A campaign's output directory holds `findings/<slug>.json` (one file per distinct finding, with
its count), `campaign.json` (sessions and totals) and `repros/`. Every file is written atomically
(a temporary file in the same directory, then `os.replace`), so a `kill -9` at any moment leaves
each file either as it was or as it is meant to be. Loading is tolerant: a corrupt or truncated
file is reported through `warn` and skipped, never fatal.

This module does not import torch: `report` runs anywhere the findings are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

FORMAT = 1
FINDINGS_DIR = "findings"
CAMPAIGN_FILE = "campaign.json"
PROCESS_ORACLE = "process"
"""Oracle name of findings the worker process itself produced: it died, hung or lost its GPU."""

Warn = Callable[[str], None]


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path` so that readers (and a crash) see the old or the new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; findings are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def finding_key(oracle: str, signature: str, known_bug: str | None = None) -> str:
    """What findings are deduplicated by: the violation's oracle and signature (and, for a
    violation a registered upstream bug explains, that bug: the same signature outside the bug's
    region is a different, new finding)."""
    return f"{oracle}/{signature}" + (f"#known:{known_bug}" if known_bug else "")


@dataclasses.dataclass
class Finding:
    """One distinct finding: the first case that showed it, its shrunk form, and how often it came up."""

    key: str
    oracle: str
    severity: str
    signature: str
    message: str
    status: str  # "new" (fails the campaign) or "known" (a registered upstream bug, still reproduces)
    case: dict[str, Any]  # Case.to_json() of the first case that showed it
    first_seen: str
    last_seen: str
    count: int = 1
    known_bug: dict[str, str] | None = None  # {"name", "tracking"}
    minimal_case: dict[str, Any] | None = None  # the shrunk case (same key), once minimization ran
    minimization: dict[str, Any] | None = None  # how it was shrunk: steps, seconds, what was dropped
    minimal_message: str | None = None  # the violation's message on the shrunk case
    violations: list[dict[str, str]] = dataclasses.field(default_factory=list)  # all of the first case's
    traceback: str | None = None  # process findings: the worker's last words (faulthandler dump)
    versions: dict[str, Any] = dataclasses.field(default_factory=dict)  # torch, triton, GPU, driver, ...
    origin: dict[str, Any] = dataclasses.field(default_factory=dict)  # where `case` came from: see drawn_from
    hosts: list[str] = dataclasses.field(default_factory=list)
    sightings: dict[str, int] = dataclasses.field(default_factory=dict)  # count per host id
    repro: dict[str, Any] | None = None  # {"path", "exit_code", "verdict", "torch"} after export
    format: int = FORMAT

    @property
    def best_case(self) -> dict[str, Any]:
        return self.minimal_case or self.case

    @property
    def best_message(self) -> str:
        """The message that goes with `best_case` (a shrunk case fails with its own numbers)."""
        return self.minimal_message if self.minimal_case and self.minimal_message else self.message

    @property
    def minimized(self) -> str:
        """"yes" (minimization ran to the end), "partial" (its time ran out) or "no"."""
        if self.minimal_case is None:
            return "no"
        return "yes" if (self.minimization or {}).get("complete", True) else "partial"

    @property
    def is_new(self) -> bool:
        return self.status == "new"

    @property
    def op(self) -> str:
        return str(self.case.get("op", "?"))

    @property
    def violation(self) -> dict[str, str]:
        """The violation as its best case shows it."""
        return {"oracle": self.oracle, "severity": self.severity, "signature": self.signature,
                "message": self.best_message}

    def file_name(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.key).strip("-")[:80]
        return f"{slug}-{hashlib.sha1(self.key.encode()).hexdigest()[:10]}.json"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Finding:
        """Parse a stored finding; raises ValueError with one line on anything malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"a finding must be a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise ValueError(f"unsupported finding format {data.get('format')!r} (this suite writes {FORMAT})")
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ValueError(f"missing field {missing[0]!r}")
        for name, kind in (("key", str), ("signature", str), ("oracle", str), ("case", dict), ("count", int)):
            if not isinstance(data.get(name), kind):
                raise ValueError(f"field {name!r} must be {kind.__name__}")
        if data["status"] not in ("new", "known"):
            raise ValueError(f"unknown status {data['status']!r}")
        return cls(**{k: v for k, v in data.items() if k in names})


def drawn_from(origin: dict[str, Any], path: str = "FINDING.json") -> str:
    """Where a finding's first case came from, in words: for a case of a campaign's stream, the
    position that draws it again (fuzz.engine.stream.regenerate; `path`: the finding's file)."""
    who = f"worker {origin.get('worker')} (seed {origin.get('seed')}, session {origin.get('session')})"
    if origin.get("phase") == "explore":
        return (f"case {origin['index']} of round {origin['round']} of the stream of {who}; "
                f"`python -m fuzz.engine.regenerate {path}` draws it again")
    if origin.get("phase") == "shrink":
        return f"a candidate while {who} shrank another finding (not in a stream)"
    if origin.get("phase") == "replay":
        return f"the example database, replayed by {who} (not in a stream)"
    return f"{who} (recorded before cases had a stream position)"


def record_from_violation(violation: dict[str, str], case: dict[str, Any], *, known_bug: dict[str, str] | None,
                          violations: list[dict[str, str]], versions: dict[str, Any], origin: dict[str, Any],
                          traceback: str | None = None) -> Finding:
    """A first sighting of a violation, as a Finding (count 1)."""
    stamp = now()
    host = str(origin.get("host", ""))
    host_id = str(origin.get("host_id") or host)
    return Finding(
        key=finding_key(violation["oracle"], violation["signature"], known_bug["name"] if known_bug else None),
        oracle=violation["oracle"], severity=violation["severity"], signature=violation["signature"],
        message=violation["message"], status="known" if known_bug else "new", case=case, first_seen=stamp,
        last_seen=stamp, known_bug=known_bug, violations=violations, traceback=traceback, versions=versions,
        origin=origin, hosts=[host] if host else [], sightings={host_id: 1} if host_id else {})


class FindingsStore:
    """The findings of one output directory. One process (the campaign coordinator) writes it."""

    def __init__(self, root: Path, warn: Warn | None = None) -> None:
        self.root = Path(root)
        self.dir = self.root / FINDINGS_DIR
        self.findings: dict[str, Finding] = {}
        self.paths: dict[str, Path] = {}
        if self.dir.is_dir():
            for path, finding in iter_finding_files([self.dir], warn or (lambda _: None)):
                self.findings[finding.key] = finding
                self.paths[finding.key] = path

    def add(self, finding: Finding) -> tuple[Finding, bool]:
        """Record a sighting: a new key is written at once; a known key's count goes up.
        Returns (the stored finding, whether the key was new to this store)."""
        stored = self.findings.get(finding.key)
        if stored is None:
            self.findings[finding.key] = finding
            self.save(finding)
            return finding, True
        _add_sighting(stored, finding)
        self.save(stored)
        return stored, False

    def save(self, finding: Finding) -> Path:
        path = self.paths.get(finding.key) or self.dir / finding.file_name()
        write_json_atomic(path, finding.to_json())
        self.paths[finding.key] = path
        return path

    def __iter__(self) -> Iterator[Finding]:
        return iter(sorted(self.findings.values(), key=lambda f: (f.status, f.oracle, f.signature)))

    def __len__(self) -> int:
        return len(self.findings)


def iter_finding_files(sources: Iterable[Path], warn: Warn) -> Iterable[tuple[Path, Finding]]:
    """Every finding under `sources` (campaign dirs, their findings/ dirs, or single files);
    a corrupt file is reported through `warn` and skipped."""
    for source in sources:
        source = Path(source)
        if source.is_file():
            files = [source]
        elif (source / FINDINGS_DIR).is_dir():
            files = sorted((source / FINDINGS_DIR).glob("*.json"))
        elif (source / CAMPAIGN_FILE).is_file():
            files = []  # a campaign that found nothing
        elif source.is_dir():
            files = sorted(source.glob("*.json"))
        else:
            warn(f"no findings at {source}: not a file or directory")
            continue
        for path in files:
            if path.name == CAMPAIGN_FILE or path.name.startswith("."):
                continue
            try:
                finding = Finding.from_json(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError, TypeError) as e:
                warn(f"skipping corrupt finding {path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
                continue
            yield path, finding


def repro_state(repro: dict[str, Any]) -> str:
    """How a finding's repro check ended, in a few words: "exit 1", "not checked", "timed out"."""
    if repro.get("exit_code") is not None:
        return f"exit {repro['exit_code']}"
    verdict = str(repro.get("verdict") or "not run")
    return "not checked" if verdict.startswith("not checked") else "timed out" if verdict.startswith("timed out") \
        else verdict


def merge(findings: Iterable[Finding]) -> list[Finding]:
    """Findings of several directories (hosts, sessions) as one list: counts add up, the earliest
    first sighting and the latest last one are kept, and the smallest minimized case wins."""
    merged: dict[str, Finding] = {}
    for f in findings:
        have = merged.get(f.key)
        if have is None:
            merged[f.key] = dataclasses.replace(f, hosts=list(f.hosts), sightings=dict(f.sightings))
            continue
        _add_sighting(have, f)
        if f.first_seen < have.first_seen:
            have.first_seen, have.case, have.versions, have.origin = f.first_seen, f.case, f.versions, f.origin
        if f.minimal_case and (not have.minimal_case or _size(f.minimal_case) < _size(have.minimal_case)):
            have.minimal_case, have.minimization, have.minimal_message = f.minimal_case, f.minimization, \
                f.minimal_message
            have.repro = f.repro or have.repro
        have.repro = have.repro or f.repro
    return sorted(merged.values(), key=lambda f: (f.status, f.oracle, f.signature))


def _add_sighting(into: Finding, f: Finding) -> None:
    """Count `f`'s sightings into `into` (same key): totals, per host, hosts, last seen."""
    into.count += f.count
    for host, n in (f.sightings or {}).items():
        into.sightings[host] = into.sightings.get(host, 0) + n
    into.hosts = sorted(set(into.hosts) | set(f.hosts))
    into.last_seen = max(into.last_seen, f.last_seen)


def _size(case: dict[str, Any]) -> int:
    return len(json.dumps(case, sort_keys=True))


def load_findings(sources: Iterable[Path], warn: Warn) -> list[Finding]:
    """All findings under `sources`, merged by key."""
    return merge(f for _, f in iter_finding_files(sources, warn))


def load_campaign(root: Path, warn: Warn) -> dict[str, Any]:
    """`campaign.json` of a campaign dir, or an empty record (with a warning when it is corrupt)."""
    path = Path(root) / CAMPAIGN_FILE
    empty: dict[str, Any] = {"format": FORMAT, "sessions": []}
    if not path.exists():
        return empty
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("sessions"), list):
            raise ValueError("not a campaign record")
        return data
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
        warn(f"ignoring corrupt campaign record {path}: {str(e).splitlines()[0]}")
        return empty


def campaign_totals(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum of every session's counters over one or more campaign records."""
    totals: dict[str, Any] = {"sessions": 0, "cases": 0, "rejected": 0, "restarts": 0, "seconds": 0.0,
                              "by_op": {}, "rejected_by_op": {}, "drawn": {}, "unavailable": {}}
    for record in records:
        for s in record.get("sessions", []):
            totals["sessions"] += 1
            for k in ("cases", "rejected", "restarts", "seconds"):
                totals[k] += s.get(k, 0) or 0
            for table in ("by_op", "rejected_by_op", "drawn", "unavailable"):
                for name, n in (s.get(table) or {}).items():
                    totals[table][name] = totals[table].get(name, 0) + n
    totals["cases_per_min"] = round(60 * totals["cases"] / totals["seconds"], 1) if totals["seconds"] else 0.0
    return totals
