"""Campaign reports: JSON and JUnit XML (CI dashboards), a Markdown summary (per oracle, op and
signature, with Mermaid charts), and the HTML dashboard (fuzz.export.dashboard).

Reports are pure functions of findings, campaign records and progress samples, so `python -m fuzz
report` can merge the output directories of several hosts or sessions, or read a shared store."""

from __future__ import annotations

import datetime
import json
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fuzz.bugs.entry import EAGER_AGREES_NAME
from fuzz.store.findings import Finding, campaign_totals, drawn_from, now, repro_state, write_json_atomic
from fuzz.tools.pairs import DIMENSIONS, pairwise_coverage
from fuzz.tools.progress import clock, plural


def summarize(findings: Sequence[Finding], records: Sequence[dict[str, Any]],
              samples: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Everything the reports show, as plain data (this is report.json)."""
    by_oracle: dict[str, dict[str, int]] = {}
    by_op: dict[str, dict[str, int]] = {}
    for f in findings:
        for table, name in ((by_oracle, f.oracle), (by_op, f.op)):
            row = table.setdefault(name, {"distinct": 0, "new": 0, "known": 0, "sightings": 0})
            row["distinct"] += 1
            row["new" if f.is_new else "known"] += 1
            row["sightings"] += f.count
    totals = campaign_totals(records)
    for op, n in totals["by_op"].items():
        row = by_op.setdefault(op, {"distinct": 0, "new": 0, "known": 0, "sightings": 0})
        row["cases"], row["rejected"] = n, totals["rejected_by_op"].get(op, 0)
    return {
        "generated": now(),
        "totals": totals,
        "distinct_findings": len(findings),
        "new_findings": sum(f.is_new for f in findings),
        "known_findings": sum(not f.is_new and not eager_agrees(f) for f in findings),
        "eager_agrees_findings": sum(eager_agrees(f) for f in findings),
        "by_oracle": by_oracle,
        "by_op": by_op,
        "findings": [{
            "key": f.key, "status": f.status, "oracle": f.oracle, "severity": f.severity, "signature": f.signature,
            "op": f.op, "count": f.count, "message": f.best_message, "first_seen": f.first_seen,
            "last_seen": f.last_seen, "known_bug": f.known_bug, "minimized": f.minimized,
            "minimization": f.minimization, "repro": f.repro, "hosts": f.hosts, "sightings": f.sightings,
            "versions": f.versions, "case": f.best_case, "file": f.file_name(), "origin": f.origin,
        } for f in findings],
        "coverage": [r["coverage"] for r in records if r.get("coverage")],
        "environments": [s.get("env") for r in records for s in r.get("sessions", []) if s.get("env")][:1],
        "hosts": sorted({s.get("host") for r in records for s in r.get("sessions", []) if s.get("host")}),
        "samples": sorted(samples, key=lambda x: x["t"]),
    }


def eager_agrees(f: Finding | dict[str, Any]) -> bool:
    """A finding where eager and compiled agree and the float64 reference differs (not inductor's)."""
    bug = (f.known_bug if isinstance(f, Finding) else f["known_bug"]) or {}
    return bug.get("name") == EAGER_AGREES_NAME


def summary_line(findings: Sequence[Finding], records: Sequence[dict[str, Any]]) -> str:
    t = campaign_totals(records)
    new, agree = sum(f.is_new for f in findings), sum(eager_agrees(f) for f in findings)
    return (f"{plural(t['cases'], 'case')} in {clock(t['seconds'])} ({t['cases_per_min']} cases/min) over "
            f"{plural(t['sessions'], 'session')}: {len(findings)} distinct finding(s), {new} new, "
            f"{len(findings) - new - agree} known upstream bug(s) still reproducing"
            + (f", {agree} where eager agrees and the reference differs" if agree else "")
            + _pairs(t.get("drawn") or {}))


def _pairs(drawn: dict[str, int]) -> str:
    drew, possible = pairwise_coverage(drawn)
    return f"; {drew} of {possible} pairs of the values drawn of {', '.join(DIMENSIONS)}" if possible else ""


def _junit_time(stamp: str) -> str:
    """ISO 8601 without a UTC offset, as the common JUnit schema wants it."""
    return datetime.datetime.fromisoformat(stamp).astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _seconds_on(f: dict[str, Any]) -> float:
    """Time the campaign spent on a finding: minimizing it and checking its repro."""
    return float((f["minimization"] or {}).get("seconds") or 0) + float((f["repro"] or {}).get("seconds") or 0)


def junit_xml(summary: dict[str, Any]) -> str:
    """JUnit XML: a passing test for the campaign itself, a failure per new finding, a skip per
    known upstream bug that still reproduces (test names are finding keys: unique)."""
    t = summary["totals"]
    suites = ET.Element("testsuites", name="mm-autotune-fuzz")
    suite = ET.SubElement(suites, "testsuite", name="mm-autotune-fuzz campaign",
                          tests=str(1 + summary["distinct_findings"]), failures=str(summary["new_findings"]),
                          skipped=str(summary["known_findings"] + summary["eager_agrees_findings"]), errors="0",
                          time=f"{t['seconds']:.1f}",
                          timestamp=_junit_time(summary["generated"]),
                          hostname=",".join(summary["hosts"]) or socket.gethostname())
    props = ET.SubElement(suite, "properties")
    for name in ("sessions", "cases", "rejected", "restarts", "cases_per_min"):
        ET.SubElement(props, "property", name=name, value=str(t[name]))
    ET.SubElement(suite, "testcase", classname="fuzz.campaign", name="campaign", time=f"{t['seconds']:.1f}")
    for f in summary["findings"]:
        case = ET.SubElement(suite, "testcase", classname=f"fuzz.{f['oracle']}", name=f["key"],
                             time=f"{_seconds_on(f):.1f}")
        body = (f"{f['message']}\nseen {f['count']} time(s), first {f['first_seen']}\n"
                + (f"repro: {f['repro']['path']} ({repro_state(f['repro'])})\n" if f["repro"] else "")
                + f"case: {json.dumps(f['case'], sort_keys=True)}")
        if f["status"] == "new":
            ET.SubElement(case, "failure", type=f["severity"], message=f["message"][:500]).text = body
        elif eager_agrees(f):
            ET.SubElement(case, "skipped", message="eager and compiled agree, the reference differs").text = body
        else:
            bug = f["known_bug"] or {}
            ET.SubElement(case, "skipped", message=f"known upstream bug {bug.get('name')} still reproduces "
                                                   f"({bug.get('tracking')})").text = body
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines + [""]


def _share(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.0f}%)" if whole else str(part)


def _drawn(summary: dict[str, Any]) -> list[str]:
    """What was drawn, one line per dimension: each value's count and share of the cases drawn."""
    from fuzz.export.dashboard import drawn_groups

    groups = drawn_groups(summary)
    cases = sum(n for _, n in groups[0][1])  # the cases drawn (not shrink steps): one op each
    lines = [f"- {title}: " + ", ".join(f"`{name}` {_share(n, cases)}" for name, n in items)
             for title, items in groups if items]
    return ["## What was drawn", "", *lines, ""] if lines else []


def markdown(summary: dict[str, Any]) -> str:
    from fuzz.export.dashboard import mermaid_charts

    t = summary["totals"]
    out = ["# mm-autotune-fuzz campaign report", "",
           f"**{plural(t['cases'], 'case')}** in {clock(t['seconds'])} ({t['cases_per_min']} cases/min, "
           f"{t['rejected']} rejected by the op or backend, {plural(t['restarts'], 'worker restart')}) over "
           f"{plural(t['sessions'], 'session')}. **{summary['distinct_findings']} distinct finding(s)**: "
           f"{summary['new_findings']} new, {summary['known_findings']} known upstream bug(s) still reproducing, "
           f"{summary['eager_agrees_findings']} where eager and compiled agree and the reference differs"
           f"{_pairs(t.get('drawn') or {})}.", ""]
    for env in summary["environments"]:
        out += [f"Environment: torch {env.get('torch')}, triton {env.get('triton') or '-'}, "
                f"device {env.get('device')}, GPU {env.get('gpu') or '-'}, driver {env.get('driver') or '-'}, "
                f"python {env.get('python')}, host {env.get('host')}.", ""]
    if t.get("unavailable"):
        out += ["Choices beyond this GPU's resources, compiled alone (skipped by autotuning by design; not "
                "findings): " + ", ".join(f"`{k}` {n}" for k, n in sorted(t["unavailable"].items())) + ".", ""]
    out += mermaid_charts(summary)
    out += _drawn(summary)
    out += ["## By oracle", ""]
    out += _table(("oracle", "distinct", "new", "known", "sightings"),
                  ((k, v["distinct"], v["new"], v["known"], v["sightings"])
                   for k, v in sorted(summary["by_oracle"].items())))
    out += ["## By op", ""]
    out += _table(("op", "cases run", "rejected", "distinct findings", "new", "known"),
                  ((k, v.get("cases", 0), _share(v.get("rejected", 0), v.get("cases", 0)), v["distinct"], v["new"],
                    v["known"])
                   for k, v in sorted(summary["by_op"].items())))
    for title, group in _sections(summary["findings"]):
        out += [f"## {title}", ""]
        out += _table(("status", "severity", "oracle", "signature", "op", "sightings", "minimized", "repro"),
                      ((f["status"], f["severity"], f["oracle"], f"`{f['signature']}`", f["op"], f["count"],
                        f["minimized"], f"`{f['repro']['path']}` ({repro_state(f['repro'])})" if f["repro"] else "-")
                       for f in group))
    for f in summary["findings"]:
        known = f["known_bug"]
        bug = f"known upstream bug `{known['name']}` ({known['tracking']}); " if known else ""
        per_host = ", ".join(f"{h} {n}" for h, n in sorted(f["sightings"].items()))
        out += [f"### `{f['key']}`", "", f"{bug}{f['message']}", "",
                f"Seen {f['count']} time(s) from {f['first_seen']} to {f['last_seen']}"
                + (f" on {', '.join(f['hosts'])}" if f["hosts"] else "")
                + (f" (per host: {per_host})" if len(f["sightings"]) > 1 else "") + ".", "",
                *([f"First case (before shrinking): {drawn_from(f['origin'], 'findings/' + f['file'])}.", ""]
                  if f.get("origin") else []),
                "<details><summary>case</summary>", "", "```json", json.dumps(f["case"], sort_keys=True), "```",
                "", "</details>", ""]
    for cov in summary["coverage"]:
        out += ["## Coverage of inductor's mm path", "",
                f"{cov['covered']} of {cov['statements']} statements ({cov['percent']}%).", ""]
        out += _table(("file", "statements", "covered", "%"),
                      ((c["file"], c["statements"], c["covered"], c["percent"]) for c in cov["files"]))
    return "\n".join(out)


def _sections(findings: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Findings, then (where there are any) those where eager and compiled agree."""
    agree = [f for f in findings if eager_agrees(f)]
    rest = [f for f in findings if not eager_agrees(f)]
    return [("Findings", rest)] + ([("Eager and compiled agree, the reference differs", agree)] if agree else [])


def write_reports(out: Path, findings: Sequence[Finding], records: Sequence[dict[str, Any]],
                  samples: Sequence[dict[str, Any]] = ()) -> list[Path]:
    """report.json, report.xml (JUnit), report.md and report.html into `out`."""
    from fuzz.export.dashboard import html

    summary = summarize(findings, records, samples)
    paths = [out / "report.json", out / "report.xml", out / "report.md", out / "report.html"]
    write_json_atomic(paths[0], summary)
    texts = (junit_xml(summary), markdown(summary), html(summary, paths[3].parent))
    for path, text in zip(paths[1:], texts, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths
