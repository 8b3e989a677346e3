"""src_hash oracle: sha256 of the template source for Triton templates, the same in a fresh
process and across compiles; None for extern kernels."""

from __future__ import annotations

from oracles.model import UNSOUND, VACUOUS, Observation, Violation

Catalogue = dict[str, dict[str, str | None]]


def is_triton(uid: str) -> bool:
    return uid.startswith("triton::")


def check(obs: Observation) -> list[Violation]:
    out: list[Violation] = []
    for choice in {c.template: c for c in obs.choices}.values():
        uid, value = choice.template, choice.src_hash
        if choice.kind == "extern":
            if not choice.has_src_hash or value is not None:
                out.append(Violation("src_hash", UNSOUND, f"extern-hash:{uid}",
                                     f"extern choice {uid} has src_hash {value!r} (expected None)"))
        elif is_triton(uid):
            entry = obs.catalogue.get(uid)
            if entry is None:
                out.append(Violation("src_hash", VACUOUS, f"not-in-catalogue:{uid}",
                                     f"Triton template {uid} is not among the templates inductor defines at import"))
            else:
                out.extend(_against_catalogue(uid, value, entry))
        if uid in obs.earlier_hashes and obs.earlier_hashes[uid] != value:
            out.append(Violation("src_hash", UNSOUND, f"changed-between-compiles:{uid}",
                                 f"{uid}: src_hash {value!r} differs from {obs.earlier_hashes[uid]!r} "
                                 "seen by an earlier compile in this process"))
    return out


def _against_catalogue(uid: str, value: str | None, entry: dict[str, str | None]) -> list[Violation]:
    if value != entry["src_hash"]:
        return [Violation("src_hash", UNSOUND, f"differs-across-processes:{uid}",
                          f"{uid}: src_hash {value!r} here, {entry['src_hash']!r} in a fresh process")]
    if value != entry["source_sha256"]:
        return [Violation("src_hash", UNSOUND, f"not-source-sha256:{uid}",
                          f"{uid}: src_hash {value!r} is not the sha256 of its source ({entry['source_sha256']!r})")]
    return []


def check_catalogues(first: Catalogue, second: Catalogue) -> list[Violation]:
    """Every Triton template inductor defines: src_hash is its source's sha256 and the same in two processes."""
    out: list[Violation] = []
    for uid in sorted(set(first) | set(second)):
        if uid not in first or uid not in second:
            out.append(Violation("src_hash", UNSOUND, f"template-set-differs:{uid}",
                                 f"{uid} is defined in one fresh process but not the other"))
            continue
        out.extend(_against_catalogue(uid, first[uid]["src_hash"], second[uid]))
        if first[uid]["source_sha256"] is None:
            out.append(Violation("src_hash", VACUOUS, f"source-unseen:{uid}",
                                 f"{uid}: the observer could not capture its source"))
    return out
