"""Reports: a finding's message goes with the case shown, minimization is "yes" only when it ran
to the end, JUnit test names are unique and its timestamps and attributes fit the common schema,
the live status line fits 80 columns, and the dashboard is one self-contained page."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from fuzz.export import repro
from fuzz.export.dashboard import html
from fuzz.export.report import junit_xml, markdown, summarize
from fuzz.store.findings import Finding, record_from_violation
from fuzz.tools.progress import status_line
from tests.cases import small_case

V = {"oracle": "numerics", "severity": "wrong result", "signature": "exact-mismatch:mm:float32",
     "message": "mm: 78 element(s) differ"}


def shrunk(complete: bool = True, known: str | None = None) -> Finding:
    f = record_from_violation(V, {"op": "mm", "first": True}, known_bug={"name": known, "tracking": "t"} if known
                              else None, violations=[V], versions={}, origin={"host": "h", "host_id": "h-1"})
    f.minimal_case, f.minimal_message = small_case().to_json(), "mm: 3 element(s) differ"
    f.minimization = {"complete": complete, "seconds": 12.5, "hypothesis_shrinks": 3, "dropped": []}
    f.repro = {"path": "repros/x.py", "exit_code": 1, "seconds": 4.0}
    return f


def test_reports_pair_the_shrunk_case_with_its_own_message(tmp_path: Path) -> None:
    f = shrunk(complete=False)
    summary = summarize([f], [])
    row = summary["findings"][0]
    assert row["message"] == "mm: 3 element(s) differ" and row["case"] == f.minimal_case
    assert row["minimized"] == "partial"  # its time ran out: not "yes"
    assert "78 element" not in markdown(summary) and "78 element" not in junit_xml(summary)
    assert summarize([shrunk()], [])["findings"][0]["minimized"] == "yes"
    (path, _), = [(p, r) for _, p, r in repro.export_findings([f], tmp_path, emit=print, verify=False)]
    assert "#     mm: 3 element(s) differ" in Path(path).read_text()  # the repro header too


def test_junit_names_are_unique_and_fit_the_schema() -> None:
    new, known = shrunk(), shrunk(known="some-bug")  # same signature: one new, one a known bug
    suite = ET.fromstring(junit_xml(summarize([new, known], []))).find("testsuite")
    assert suite is not None
    names = [c.get("name") for c in suite.iter("testcase")]
    assert len(names) == len(set(names)) == 3
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp", ""))  # no +00:00
    assert suite.get("hostname")
    times = [c.get("time") for c in suite.iter("testcase")][1:]
    assert times == ["16.5", "16.5"]  # minimizing (12.5 s) and checking the repro (4 s)


def test_the_status_line_fits_80_columns() -> None:
    session = {"cases": 1_234_567, "rejected": 234_567, "workers": 8, "restarts": 1234}
    findings = [shrunk() for _ in range(123)]
    line = status_line(8 * 3600 - 1, 8 * 3600, session, findings)
    assert len(line) < 80, (len(line), line)
    assert line.startswith("[7:59:59/8:00:00] 1234567 cases") and "123 found 123 new" in line


def test_the_dashboard_is_one_self_contained_page(tmp_path: Path) -> None:
    f = shrunk()
    (tmp_path / "upstream").mkdir()
    draft = tmp_path / "upstream" / (f.file_name().removesuffix(".json") + ".md")
    draft.write_text("draft")
    samples = [{"t": 1000.0 + 30 * i, "elapsed": 30.0 * i, "cases_per_min": 10.0 + i, "coverage": 20.0 + i}
               for i in range(4)]
    records = [{"sessions": [{"cases": 40, "seconds": 90, "host": "h",
                              "drawn": {"op:mm": 30, "op:bmm": 10, "dtype:float32": 40, "value:normal": 40,
                                        "backends:ATEN": 40, "spelling:mm:call": 30, "flag:backward": 10}}]}]
    summary = summarize([f], records, samples)
    page = html(summary, tmp_path)
    assert page.count("<svg") == 9 and "<script" not in page and "<link" not in page
    assert re.findall(r'(?:src|href)="(?:https?:)?//', page) == []  # nothing fetched
    assert 'href="repros/x.py"' in page and f'href="upstream/{draft.name}"' in page
    assert ">bmm<" in page and "mm: 3 element(s) differ" in page
    md = markdown(summary)
    assert md.count("```mermaid") == 3 and "xychart-beta" in md  # findings, cases/min, coverage
    assert "- case flags: `backward` 10 (25%)" in md and "- ops: `mm` 30 (75%), `bmm` 10 (25%)" in md


def test_reject_rate_per_op_is_reported() -> None:
    records = [{"sessions": [{"cases": 40, "seconds": 60, "rejected": 3, "by_op": {"mm": 30, "bmm": 10},
                              "rejected_by_op": {"mm": 3}},
                             {"cases": 20, "seconds": 60, "rejected": 1, "by_op": {"bmm": 20},
                              "rejected_by_op": {"bmm": 1}}]}]
    summary = summarize([], records)
    assert {op: (row["cases"], row["rejected"]) for op, row in summary["by_op"].items()} == {"mm": (30, 3),
                                                                                             "bmm": (30, 1)}
    md = markdown(summary)
    assert "| mm | 30 | 3 (10%) |" in md and "| bmm | 30 | 1 (3%) |" in md


def test_eager_agreement_and_choices_beyond_the_gpu_are_reported_apart_and_never_new() -> None:
    agreed = shrunk(known="eager-agrees")
    unavailable = {"triton::mm_persistent_tma: shared memory": 3}
    record = {"sessions": [{"cases": 10, "seconds": 60.0, "unavailable": unavailable}]}
    summary = summarize([agreed, shrunk()], [record])
    assert (summary["new_findings"], summary["known_findings"], summary["eager_agrees_findings"]) == (1, 0, 1)
    text = markdown(summary)
    assert "## Eager and compiled agree, the reference differs" in text
    assert "`triton::mm_persistent_tma: shared memory` 3" in text
    junit = ET.fromstring(junit_xml(summary).split("\n", 1)[1])
    assert junit.find("testsuite").get("failures") == "1"
