"""The campaign dashboard: `report.html`, one self-contained page (inline SVG and CSS, nothing
fetched), and the same time charts as Mermaid `xychart-beta` blocks for report.md (GitHub renders
them). Charts: distinct findings over time (from each finding's first sighting), cases/min and
coverage over time (from the 30 s progress samples, all hosts added up per interval), and what
was drawn (ops, dtypes, backend sets, value modes)."""

from __future__ import annotations

import datetime
import html as html_lib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fuzz.store.findings import repro_state

BUCKET_S = 30.0
DRAWN = (("op:", "ops"), ("dtype:", "dtypes"), ("backends:", "backend sets"), ("value:", "value modes"),
         ("spelling:", "spellings"), ("flag:", "case flags"), ("prologue:", "prologue steps"),
         ("consumer:", "consumer steps"),
         ("weight_form:", "weight forms"), ("stride:", "operand layouts"), ("knob:", "config knobs"))
Points = list[tuple[float, float]]


def _epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp).timestamp()


def time_series(summary: dict[str, Any]) -> dict[str, Points]:
    """Minutes since the campaign began -> distinct / new findings, cases/min, coverage %."""
    samples = summary["samples"]
    firsts = sorted(_epoch(f["first_seen"]) for f in summary["findings"])
    new_firsts = sorted(_epoch(f["first_seen"]) for f in summary["findings"] if f["status"] == "new")
    starts = [s["t"] - s.get("elapsed", 0) for s in samples] + firsts
    if not starts:
        return {"distinct": [], "new": [], "rate": [], "coverage": []}
    t0 = min(starts)
    end = max([s["t"] for s in samples] + firsts)
    steps = [t0 + i * (end - t0) / 40 for i in range(41)] if end > t0 else [t0]
    rate: dict[int, float] = {}
    coverage: dict[int, float] = {}
    for s in samples:
        bucket = int((s["t"] - t0) // BUCKET_S)
        rate[bucket] = rate.get(bucket, 0.0) + float(s.get("cases_per_min") or 0)
        if s.get("coverage") is not None:
            coverage[bucket] = max(coverage.get(bucket, 0.0), float(s["coverage"]))

    def minutes(bucket: int) -> float:
        return round((bucket + 1) * BUCKET_S / 60, 2)

    return {
        "distinct": [(round((t - t0) / 60, 2), float(sum(f <= t for f in firsts))) for t in steps],
        "new": [(round((t - t0) / 60, 2), float(sum(f <= t for f in new_firsts))) for t in steps],
        "rate": [(minutes(b), round(v, 1)) for b, v in sorted(rate.items())],
        "coverage": [(minutes(b), v) for b, v in sorted(coverage.items())],
    }


def drawn_groups(summary: dict[str, Any]) -> list[tuple[str, list[tuple[str, int]]]]:
    drawn = summary["totals"].get("drawn") or {}
    return [(title, sorted(((k[len(prefix):], n) for k, n in drawn.items() if k.startswith(prefix)),
                           key=lambda kv: -kv[1]))
            for prefix, title in DRAWN]


# --- Markdown (Mermaid) ---------------------------------------------------------------------------

def _thin(points: Points, most: int = 12) -> Points:
    step = max(1, -(-len(points) // most))
    return points[::step] + ([points[-1]] if (len(points) - 1) % step else [])


def _mermaid(title: str, y_label: str, points: Points) -> list[str]:
    points = _thin(points)
    top = max([y for _, y in points] + [1.0])
    xs = ", ".join(f'"{x:g}"' for x, _ in points)
    return ["```mermaid", "xychart-beta", f'    title "{title}"', f'    x-axis "minutes" [{xs}]',
            f'    y-axis "{y_label}" 0 --> {top * 1.1:.4g}', f"    line [{', '.join(f'{y:g}' for _, y in points)}]",
            "```", ""]


def mermaid_charts(summary: dict[str, Any]) -> list[str]:
    """Markdown lines: the time charts as Mermaid xychart blocks (none without data)."""
    series = time_series(summary)
    out: list[str] = []
    for key, title, label in (("distinct", "Distinct findings over time", "findings"),
                              ("rate", "Cases per minute over time", "cases/min"),
                              ("coverage", "Coverage of the mm path over time", "% statements")):
        if len(series[key]) >= 2:
            out += _mermaid(title, label, series[key])
    return (["## Over time", ""] + out) if out else []


# --- HTML ------------------------------------------------------------------------------------------

def nice_ticks(top: float, most: int = 5) -> list[float]:
    """0, step, 2 step, ... up to at least `top`, step 1, 2, 2.5 or 5 times a power of ten."""
    raw = max(top, 1e-9) / (most - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [round(i * step, 10) for i in range(math.ceil(top / step - 1e-9) + 1)] or [0.0, step]


def _esc(text: Any) -> str:
    return html_lib.escape(str(text), quote=True)


def svg_lines(title: str, y_label: str, lines: Sequence[tuple[str, str, Points]], x_top: float,
              empty: str = "no data yet", width: int = 460, height: int = 220) -> str:
    """A line chart (x: minutes, 0 to `x_top`: the same for every chart) as inline SVG; an empty
    one says `empty`."""
    left, right, top, bottom = 48, 12, 28, 34
    pts = [p for _, _, ps in lines for p in ps]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{_esc(title)}"><text x="{width / 2}" y="16" text-anchor="middle" class="t">'
             f'{_esc(title)}</text>']
    if not pts:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" class="n">{_esc(empty)}</text>'
                     '</svg>')
        return "".join(parts)
    x_ticks, y_ticks = nice_ticks(max(x_top, 1e-9)), nice_ticks(max(max(y for _, y in pts), 1.0))
    x_max, y_max = x_ticks[-1], y_ticks[-1]
    w, h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + w * x / x_max

    def sy(y: float) -> float:
        return top + h - h * y / y_max

    for y in y_ticks:
        parts.append(f'<line x1="{left}" x2="{left + w}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" class="g"/>'
                     f'<text x="{left - 4}" y="{sy(y) + 4:.1f}" text-anchor="end" class="a">{y:g}</text>')
    for x in x_ticks:
        parts.append(f'<text x="{sx(x):.1f}" y="{top + h + 14}" text-anchor="middle" class="a">{x:g}</text>')
    parts.append(f'<text x="{left + w / 2}" y="{height - 4}" text-anchor="middle" class="a">minutes</text>'
                 f'<text x="12" y="{top + h / 2}" transform="rotate(-90 12 {top + h / 2})" text-anchor="middle" '
                 f'class="a">{_esc(y_label)}</text>')
    for i, (label, color, ps) in enumerate(lines):
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in ps)
        dash = ' stroke-dasharray="6 4"' if i else ""  # a second line stays visible where they coincide
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2" fill="{color}"/>' for x, y in ps if len(ps) < 60]
        parts.append(f'<text x="{left + w - 70 * i}" y="{top - 6}" text-anchor="end" class="a" '
                     f'style="fill:{color}">{_esc(label)}</text>')
    return "".join(parts) + "</svg>"


def svg_bars(title: str, items: Sequence[tuple[str, int]], width: int = 460) -> str:
    """A horizontal bar chart (label: count) as inline SVG."""
    row, left = 18, 170
    height = 28 + row * max(1, len(items))
    top = max([n for _, n in items] + [1])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{_esc(title)}"><text x="{width / 2}" y="16" text-anchor="middle" class="t">'
             f'{_esc(title)}</text>']
    if not items:
        parts.append(f'<text x="{width / 2}" y="40" text-anchor="middle" class="n">nothing counted</text>')
    for i, (label, n) in enumerate(items):
        y = 24 + i * row
        bar = (width - left - 60) * n / top
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end" class="a">{_esc(label[:28])}</text>'
                     f'<rect x="{left}" y="{y + 2}" width="{bar:.1f}" height="{row - 5}" class="b"/>'
                     f'<text x="{left + bar + 4:.1f}" y="{y + 12}" class="a">{n}</text>')
    return "".join(parts) + "</svg>"


def _drafts(base: Path, stem: str) -> list[str]:
    """Upstream issue drafts (OUT/upstream/) that name a finding's file stem."""
    folder = base / "upstream"
    return sorted(f"upstream/{p.name}" for p in folder.glob(f"*{stem}*")) if folder.is_dir() else []


_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1f2328}h1{font-size:22px}
h2{font-size:17px;margin-top:28px}.grid{display:flex;flex-wrap:wrap;gap:16px}
svg{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px}.t{font-size:13px;font-weight:600}
.a{font-size:11px;fill:#57606a}.n{font-size:13px;fill:#8c959f}.g{stroke:#d0d7de}.b{fill:#0969da}
table{border-collapse:collapse;margin-top:8px}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}.new{color:#cf222e;font-weight:600}.known{color:#9a6700}
code{font-size:12px}"""


def html(summary: dict[str, Any], base: Path) -> str:
    """The dashboard page; links (repros, upstream drafts) are relative to `base`, where it is written."""
    t = summary["totals"]
    series = time_series(summary)
    x_top = max([x for points in series.values() for x, _ in points] + [1.0])
    charts = [svg_lines("Distinct findings over time", "findings",
                        [("distinct", "#0969da", series["distinct"]), ("new", "#cf222e", series["new"])], x_top),
              svg_lines("Cases per minute", "cases/min", [("all hosts", "#1a7f37", series["rate"])], x_top),
              svg_lines("Coverage of the mm path", "% statements", [("coverage", "#8250df", series["coverage"])],
                        x_top, empty="not measured (run --coverage)")]
    rows = []
    for f in summary["findings"]:
        links = [f'<a href="{_esc(f["repro"]["path"])}">repro</a> ({_esc(repro_state(f["repro"]))})'
                 ] if f["repro"] else []
        links += [f'<a href="{_esc(d)}">upstream draft</a>' for d in _drafts(base, f["file"].removesuffix(".json"))]
        rows.append(f'<tr><td class="{_esc(f["status"])}">{_esc(f["status"])}</td><td>{_esc(f["severity"])}</td>'
                    f'<td>{_esc(f["oracle"])}</td><td><code>{_esc(f["signature"])}</code><br>{_esc(f["message"])}'
                    f'</td><td>{_esc(f["op"])}</td><td>{f["count"]}</td><td>{_esc(f["minimized"])}</td>'
                    f'<td>{" ".join(links) or "-"}</td></tr>')
    upstream = ' Upstream issue drafts: <a href="upstream/">upstream/</a>.' if (base / "upstream").is_dir() else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>mm-autotune-fuzz campaign report</title>
<style>{_CSS}</style></head><body>
<h1>mm-autotune-fuzz campaign report</h1>
<p><b>{t['cases']} cases</b> in {t['seconds'] / 60:.1f} min ({t['cases_per_min']} cases/min, {t['rejected']} rejected,
{t['restarts']} worker restarts) over {t['sessions']} session(s) on {_esc(', '.join(summary['hosts']) or '-')}.
<b>{summary['distinct_findings']} distinct finding(s)</b>: {summary['new_findings']} new,
{summary['known_findings']} known upstream bug(s) still reproducing.
Generated {_esc(summary['generated'])}.{upstream}</p>
<h2>Over time</h2><div class="grid">{''.join(charts)}</div>
<h2>What was drawn</h2>
<div class="grid">{''.join(svg_bars(title, items) for title, items in drawn_groups(summary) if items)}</div>
<h2>Findings</h2>
<table><tr><th>status</th><th>severity</th><th>oracle</th><th>signature and message</th><th>op</th><th>sightings</th>
<th>minimized</th><th>links</th></tr>
{''.join(rows) or '<tr><td colspan="8">none</td></tr>'}
</table></body></html>
"""
