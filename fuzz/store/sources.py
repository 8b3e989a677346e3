"""Where `replay`, `export` and `report` read findings from: campaign output directories, their
`findings/` folders, single finding files, or a shared store (a Redis URL or a shared directory). A source that does not
exist is an error (a typo must not pass as an empty campaign); a campaign named twice (also as
`DIR` and `DIR/findings`) is read once."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fuzz.store.findings import CAMPAIGN_FILE, FINDINGS_DIR, Finding, Warn, iter_finding_files, load_campaign, merge
from fuzz.store.shared_store import HOSTS_DIR, SAMPLES_FILE, StoreError, is_url, open_store, read_samples


class SourceError(Exception):
    """A source that cannot be read; the message is one line."""


@dataclasses.dataclass
class Sources:
    campaigns: list[Path] = dataclasses.field(default_factory=list)  # campaign output directories
    loose: list[Path] = dataclasses.field(default_factory=list)  # finding files, folders of them
    stores: list[str] = dataclasses.field(default_factory=list)  # shared store URLs


def is_shared_directory(path: Path) -> bool:
    """A directory that hosts share as their `--store` (fuzz.store.shared_store.DirectoryStore)."""
    return path.is_dir() and (path / HOSTS_DIR).is_dir() and not is_campaign(path)


def is_campaign(path: Path) -> bool:
    return (path / FINDINGS_DIR).is_dir() or (path / CAMPAIGN_FILE).is_file()


def resolve(texts: Iterable[str]) -> Sources:
    """Sort the command line's sources by kind, each once; SourceError for one that is not there."""
    out, seen = Sources(), set[str | Path]()
    for text in texts:
        if is_url(text):
            if text not in seen:
                seen.add(text)
                out.stores.append(text)
            continue
        path = Path(text)
        if not path.exists():
            raise SourceError(f"no such file or directory: {path}")
        if path.is_dir() and path.name == FINDINGS_DIR and is_campaign(path.parent):
            path = path.parent
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        if is_shared_directory(path):
            out.stores.append(str(path))
        else:
            (out.campaigns if path.is_dir() and is_campaign(path) else out.loose).append(path)
    return out


def load(sources: Sources, warn: Warn) -> tuple[list[Finding], list[dict[str, Any]], list[dict[str, Any]]]:
    """Findings (merged across sources), campaign records and progress samples."""
    findings = [f for _, f in iter_finding_files(sources.campaigns + sources.loose, warn)]
    records = [load_campaign(c, warn) for c in sources.campaigns]
    samples = [s for c in sources.campaigns for s in read_samples(c / SAMPLES_FILE, warn)]
    for spec in sources.stores:
        try:
            store = open_store(spec)
        except StoreError as e:
            raise SourceError(str(e)) from None
        try:
            more, store_records, store_samples = store.load(warn)
        except Exception as e:  # noqa: BLE001 - the store did not answer: one line, never the URL's secret
            raise SourceError(f"cannot read store {store.label}: {type(e).__name__}") from None
        findings += more
        records += store_records
        samples += store_samples
    return merge(findings), records, samples
