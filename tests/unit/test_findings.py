"""The findings store: atomic writes, dedup by signature with counts, tolerant loading, merging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.store import findings as fs
from fuzz.store.findings import Finding, FindingsStore, load_campaign, load_findings, merge, record_from_violation

CASE = {"op": "mm", "config": {"max_autotune": True}, "inputs": []}
VIOLATION = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float16", "message": "m"}


def finding(signature: str = "tolerance:mm:float16", known: str | None = None, host: str = "h1", **kw) -> Finding:
    v = {**VIOLATION, "signature": signature}
    f = record_from_violation(v, kw.pop("case", CASE), known_bug={"name": known, "tracking": "t"} if known else None,
                              violations=[v], versions={"torch": "2.13"}, origin={"host": host})
    for k, value in kw.items():
        setattr(f, k, value)
    return f


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.json"
    fs.write_json_atomic(path, {"v": 1})

    def explode(*_a, **_k):
        raise KeyboardInterrupt  # e.g. a signal in the middle of writing

    monkeypatch.setattr(fs.json, "dump", explode)
    with pytest.raises(KeyboardInterrupt):
        fs.write_json_atomic(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary file left behind


def test_store_dedups_by_signature_and_counts(tmp_path: Path) -> None:
    store = FindingsStore(tmp_path)
    first, new = store.add(finding())
    again, new_again = store.add(finding(host="h2"))
    other, _ = store.add(finding("tolerance:mm:bfloat16"))
    known, _ = store.add(finding(known="some-bug"))  # same signature, explained by a known bug: its own finding
    assert (new, new_again) == (True, False) and again is first
    assert first.count == 2 and first.hosts == ["h1", "h2"]
    assert len({first.key, other.key, known.key}) == 3 and known.status == "known" and first.is_new
    assert len(list((tmp_path / "findings").glob("*.json"))) == 3
    reloaded = FindingsStore(tmp_path)  # what a resumed campaign (or one after kill -9) sees
    assert reloaded.findings[first.key].count == 2 and len(reloaded) == 3


def test_zero_count_sighting_updates_without_counting(tmp_path: Path) -> None:
    store = FindingsStore(tmp_path)
    store.add(finding())
    shrink_step = finding()
    shrink_step.count = 0
    stored, _ = store.add(shrink_step)
    assert stored.count == 1


def test_corrupt_and_truncated_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    store = FindingsStore(tmp_path)
    good, _ = store.add(finding())
    text = store.paths[good.key].read_text()
    (tmp_path / "findings" / "truncated.json").write_text(text[: len(text) // 2])
    (tmp_path / "findings" / "empty.json").write_text("")
    (tmp_path / "findings" / "list.json").write_text("[]")
    (tmp_path / "findings" / "future.json").write_text(json.dumps({**json.loads(text), "format": 99}))
    (tmp_path / "findings" / "nocase.json").write_text(json.dumps({k: v for k, v in json.loads(text).items()
                                                                    if k != "case"}))
    warnings: list[str] = []
    loaded = load_findings([tmp_path], warnings.append)
    assert [f.key for f in loaded] == [good.key]
    assert len(warnings) == 5 and all(w.startswith("skipping corrupt finding") and "\n" not in w for w in warnings)
    assert len(FindingsStore(tmp_path, warnings.append)) == 1


def test_merge_of_several_hosts(tmp_path: Path) -> None:
    a, b = FindingsStore(tmp_path / "a"), FindingsStore(tmp_path / "b")
    bigger = {**CASE, "config": {"max_autotune": True, "epilogue_fusion": False}}
    fa = finding(host="a", first_seen="2026-01-02", last_seen="2026-01-03", minimal_case=bigger)
    fb = finding(host="b", first_seen="2026-01-01", last_seen="2026-01-05", minimal_case=CASE)
    fa.count, fb.count = 3, 4
    a.add(fa)
    b.add(fb)
    b.add(finding("only-on-b", host="b"))
    merged = {f.key: f for f in load_findings([tmp_path / "a", tmp_path / "b"], print)}
    m = merged[fa.key]
    assert (m.count, m.first_seen, m.last_seen, m.hosts) == (7, "2026-01-01", "2026-01-05", ["a", "b"])
    assert m.minimal_case == CASE  # the smaller shrunk case wins
    assert len(merged) == 2
    assert merge([]) == []


def test_single_finding_file_and_missing_source(tmp_path: Path) -> None:
    store = FindingsStore(tmp_path)
    f, _ = store.add(finding())
    warnings: list[str] = []
    assert [x.key for x in load_findings([store.paths[f.key], tmp_path / "nope"], warnings.append)] == [f.key]
    assert warnings == [f"no findings at {tmp_path / 'nope'}: not a file or directory"]


def test_campaign_record_tolerates_corruption(tmp_path: Path) -> None:
    warnings: list[str] = []
    assert load_campaign(tmp_path, warnings.append)["sessions"] == [] and warnings == []
    (tmp_path / "campaign.json").write_text('{"sessions": [')
    assert load_campaign(tmp_path, warnings.append)["sessions"] == []
    assert warnings and warnings[0].startswith("ignoring corrupt campaign record")
    totals = fs.campaign_totals([{"sessions": [{"cases": 30, "seconds": 60, "by_op": {"mm": 30}},
                                               {"cases": 30, "seconds": 60, "by_op": {"mm": 10, "bmm": 20}}]}])
    assert totals["cases"] == 60 and totals["cases_per_min"] == 30.0 and totals["by_op"] == {"mm": 40, "bmm": 20}
