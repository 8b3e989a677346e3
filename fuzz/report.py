"""Campaign reports: live progress, JSON and JUnit XML (CI dashboards), a Markdown summary (per
oracle, op and signature), and the coverage of inductor's mm path (`run --coverage`).

Reports are pure functions of findings and campaign records, so `python -m fuzz report` can merge
the output directories of several hosts or sessions."""

from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from fuzz.findings import Finding, campaign_totals, now, write_json_atomic


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class Progress:
    """Live progress: one status line rewritten in place on a terminal, a line every 30 s otherwise."""

    def __init__(self, mode: str, budget_s: float, emit: Callable[[str], None]) -> None:
        if mode == "auto":
            mode = "tty" if sys.stderr.isatty() else "plain"
        self.mode, self.budget_s, self.emit = mode, budget_s, emit
        self.started = time.time()
        self.last = 0.0
        self.line = ""

    def status(self, session: dict[str, Any], findings: Iterable[Finding]) -> str:
        elapsed = time.time() - self.started
        findings = list(findings)
        new = sum(f.is_new for f in findings)
        rate = 60 * session["cases"] / elapsed if elapsed > 0 else 0.0
        return (f"[{_clock(elapsed)}/{_clock(self.budget_s)}] {_plural(session['cases'], 'case')} "
                f"({rate:.1f}/min, {session['rejected']} rejected) | {len(findings)} distinct finding(s): "
                f"{new} new, {len(findings) - new} known | {_plural(session['workers'], 'worker')}, "
                f"{_plural(session['restarts'], 'restart')}")

    def update(self, session: dict[str, Any], findings: Iterable[Finding]) -> None:
        interval = {"tty": 0.5, "plain": 30.0}.get(self.mode)
        if interval is None or time.time() - self.last < interval:
            return
        self.last = time.time()
        self.line = self.status(session, findings)
        if self.mode == "tty":
            sys.stderr.write("\r\x1b[K" + self.line)
            sys.stderr.flush()
        else:
            self.emit(self.line)

    def event(self, line: str) -> None:
        if self.mode == "none":
            return
        if self.mode == "tty" and self.line:
            sys.stderr.write("\r\x1b[K")
        self.emit(line)
        if self.mode == "tty" and self.line:
            sys.stderr.write(self.line)
            sys.stderr.flush()

    def finish(self, session: dict[str, Any], findings: Iterable[Finding]) -> None:
        if self.mode == "tty":
            sys.stderr.write("\r\x1b[K")
        if self.mode != "none":
            self.emit(self.status(session, findings))


def summarize(findings: Sequence[Finding], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
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
        by_op.setdefault(op, {"distinct": 0, "new": 0, "known": 0, "sightings": 0})["cases"] = n
    return {
        "generated": now(),
        "totals": totals,
        "distinct_findings": len(findings),
        "new_findings": sum(f.is_new for f in findings),
        "known_findings": sum(not f.is_new for f in findings),
        "by_oracle": by_oracle,
        "by_op": by_op,
        "findings": [{
            "key": f.key, "status": f.status, "oracle": f.oracle, "severity": f.severity, "signature": f.signature,
            "op": f.op, "count": f.count, "message": f.message, "first_seen": f.first_seen, "last_seen": f.last_seen,
            "known_bug": f.known_bug, "minimized": f.minimal_case is not None, "minimization": f.minimization,
            "repro": f.repro, "hosts": f.hosts, "versions": f.versions, "case": f.best_case,
        } for f in findings],
        "coverage": [r["coverage"] for r in records if r.get("coverage")],
        "environments": [s.get("env") for r in records for s in r.get("sessions", []) if s.get("env")][:1],
    }


def summary_line(findings: Sequence[Finding], records: Sequence[dict[str, Any]]) -> str:
    t = campaign_totals(records)
    new = sum(f.is_new for f in findings)
    return (f"{_plural(t['cases'], 'case')} in {_clock(t['seconds'])} ({t['cases_per_min']} cases/min) over "
            f"{_plural(t['sessions'], 'session')}: {len(findings)} distinct finding(s), {new} new, "
            f"{len(findings) - new} known upstream bug(s) still reproducing")


def junit_xml(summary: dict[str, Any]) -> str:
    """JUnit XML: a passing test for the campaign itself, a failure per new finding, a skip per
    known upstream bug that still reproduces."""
    t = summary["totals"]
    suites = ET.Element("testsuites", name="mm-autotune-fuzz")
    suite = ET.SubElement(suites, "testsuite", name="mm-autotune-fuzz campaign",
                          tests=str(1 + summary["distinct_findings"]), failures=str(summary["new_findings"]),
                          skipped=str(summary["known_findings"]), errors="0", time=f"{t['seconds']:.1f}",
                          timestamp=summary["generated"])
    props = ET.SubElement(suite, "properties")
    for name in ("sessions", "cases", "rejected", "restarts", "cases_per_min"):
        ET.SubElement(props, "property", name=name, value=str(t[name]))
    ET.SubElement(suite, "testcase", classname="fuzz.campaign", name="campaign", time=f"{t['seconds']:.1f}")
    for f in summary["findings"]:
        case = ET.SubElement(suite, "testcase", classname=f"fuzz.{f['oracle']}", name=f["signature"], time="0")
        body = (f"{f['message']}\nseen {f['count']} time(s), first {f['first_seen']}\n"
                + (f"repro: {f['repro']['path']} (exit {f['repro'].get('exit_code')})\n" if f["repro"] else "")
                + f"case: {json.dumps(f['case'], sort_keys=True)}")
        if f["status"] == "new":
            ET.SubElement(case, "failure", type=f["severity"], message=f["message"][:500]).text = body
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


def markdown(summary: dict[str, Any]) -> str:
    t = summary["totals"]
    out = ["# mm-autotune-fuzz campaign report", "",
           f"**{_plural(t['cases'], 'case')}** in {_clock(t['seconds'])} ({t['cases_per_min']} cases/min, "
           f"{t['rejected']} rejected by the op or backend, {_plural(t['restarts'], 'worker restart')}) over "
           f"{_plural(t['sessions'], 'session')}. **{summary['distinct_findings']} distinct finding(s)**: "
           f"{summary['new_findings']} new, {summary['known_findings']} known upstream bug(s) still reproducing.", ""]
    for env in summary["environments"]:
        out += [f"Environment: torch {env.get('torch')}, triton {env.get('triton') or '-'}, "
                f"device {env.get('device')}, GPU {env.get('gpu') or '-'}, driver {env.get('driver') or '-'}, "
                f"python {env.get('python')}, host {env.get('host')}.", ""]
    out += ["## By oracle", ""]
    out += _table(("oracle", "distinct", "new", "known", "sightings"),
                  ((k, v["distinct"], v["new"], v["known"], v["sightings"])
                   for k, v in sorted(summary["by_oracle"].items())))
    out += ["## By op", ""]
    out += _table(("op", "cases run", "distinct findings", "new", "known"),
                  ((k, v.get("cases", 0), v["distinct"], v["new"], v["known"])
                   for k, v in sorted(summary["by_op"].items())))
    out += ["## Findings", ""]
    out += _table(("status", "severity", "oracle", "signature", "op", "count", "minimized", "repro (exit)"),
                  ((f["status"], f["severity"], f["oracle"], f"`{f['signature']}`", f["op"], f["count"],
                    "yes" if f["minimized"] else "no",
                    f"`{f['repro']['path']}` ({f['repro'].get('exit_code')})" if f["repro"] else "-")
                   for f in summary["findings"]))
    for f in summary["findings"]:
        known = f["known_bug"]
        bug = f"known upstream bug `{known['name']}` ({known['tracking']}); " if known else ""
        out += [f"### `{f['key']}`", "", f"{bug}{f['message']}", "",
                f"Seen {f['count']} time(s) from {f['first_seen']} to {f['last_seen']}"
                + (f" on {', '.join(f['hosts'])}" if f["hosts"] else "") + ".", "",
                "<details><summary>case</summary>", "", "```json", json.dumps(f["case"], sort_keys=True), "```",
                "", "</details>", ""]
    for cov in summary["coverage"]:
        out += ["## Coverage of inductor's mm path", "",
                f"{cov['covered']} of {cov['statements']} statements ({cov['percent']}%).", ""]
        out += _table(("file", "statements", "covered", "%"),
                      ((c["file"], c["statements"], c["covered"], c["percent"]) for c in cov["files"]))
    return "\n".join(out)


def write_reports(out: Path, findings: Sequence[Finding], records: Sequence[dict[str, Any]],
                  json_path: Path | None = None, junit_path: Path | None = None,
                  markdown_path: Path | None = None) -> list[Path]:
    """report.json, report.xml (JUnit) and report.md into `out` (or the paths given)."""
    summary = summarize(findings, records)
    paths = [json_path or out / "report.json", junit_path or out / "report.xml", markdown_path or out / "report.md"]
    write_json_atomic(paths[0], summary)
    for path, text in zip(paths[1:], (junit_xml(summary), markdown(summary))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths


def coverage_summary(data_dir: Path) -> dict[str, Any] | None:
    """Combine the workers' coverage data of the mm path; None when nothing was recorded."""
    import coverage

    from fuzz.workers import coverage_config

    parts = sorted(str(p) for p in Path(data_dir).glob(".coverage.*"))
    if not parts:
        return None
    combined = Path(data_dir) / "combined.coverage"
    combined.unlink(missing_ok=True)
    cov = coverage.Coverage(data_file=str(combined), config_file=coverage_config())
    cov.combine(parts, keep=True)
    cov.save()
    files = []
    for name in sorted(cov.get_data().measured_files()):
        _, statements, _, missing, _ = cov.analysis2(name)
        covered = len(statements) - len(missing)
        files.append({"file": name.split("site-packages/")[-1], "statements": len(statements), "covered": covered,
                      "percent": round(100 * covered / len(statements), 1) if statements else 0.0})
    total, hit = sum(f["statements"] for f in files), sum(f["covered"] for f in files)
    return {"files": files, "statements": total, "covered": hit,
            "percent": round(100 * hit / total, 1) if total else 0.0}
