"""Upstream issue drafts: one Markdown draft per root-cause group (fuzz/bugs/root_causes.py).

A draft holds what a PyTorch maintainer asks for: the plain repro (fuzz/export/plain_repro.py), what it
printed (the raw traceback), observed vs expected, the single changes that flip the verdict, the
suspected location (file:line of the innermost inductor frame, or the triaged one), the versions
it was measured failing on, and the environment (`torch.utils.collect_env`, CPU model included).
Drafts are written from the findings and the files their export wrote; nothing is re-run here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fuzz.bugs.root_causes import Group, as_dict, group_findings, plain_of
from fuzz.export.plain_repro import plain_summary
from fuzz.store.findings import Finding, now

EXPECTED = {
    "raises": "The compiled program returns what eager returns for these inputs (eager runs them fine).",
    "exact": "The exact result: every input is a small integer, so every product and partial sum is exact in "
             "the dtype, and eager returns it.",
    "bound": "The float64 result within float32 accumulation's error bound (the tolerance in `check`).",
    "nonfinite": "NaN and inf exactly where the float64 result of the same inputs has them.",
    "strides": "The strides eager gives (the values are compared too).",
    "meta": "Eager's shape and dtype.",
}


FULL_OUTPUT_LINES = 150
"""The most lines of a repro's output a draft shows (in a folded block)."""


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[:limit] + " …"


def _read(path: Path | None) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path else None
    except (OSError, UnicodeDecodeError):
        return None


def _locate(rel: str | None, sources: Sequence[Path]) -> Path | None:
    """A path an export recorded (relative to its campaign directory), under one of `sources`."""
    if not rel:
        return None
    for root in sources:
        root = Path(root)
        for base in (root, root.parent):  # a campaign dir, or its findings/ dir
            if (base / rel).is_file():
                return base / rel
    return None


def _fence(text: str, lang: str = "") -> list[str]:
    ticks = "````" if "```" in text else "```"
    return [ticks + lang, text.rstrip("\n"), ticks]


def _observed(output: str) -> str:
    """The end of what the repro printed: from the innermost frame on (the exception and its
    message); when that is long (a C++ compile error's message is the compiler's whole output), its
    first lines, the compiler's `error:` lines and its last lines."""
    lines = output.rstrip("\n").splitlines()
    rest = lines[max((i for i, ln in enumerate(lines) if ln.startswith('  File "')), default=0):]
    if len(rest) <= 40:
        return "\n".join(rest)
    errors = [ln for ln in rest if re.search(r"\berror:", ln)][:10]
    return "\n".join([*rest[:6], "[...]", *errors, *(["[...]"] if errors else []), *rest[-4:]])


def _tail(output: str, limit: int = FULL_OUTPUT_LINES) -> str:
    """The output, or its last `limit` lines (a C++ compile error prints thousands)."""
    lines = output.rstrip("\n").splitlines()
    return output if len(lines) <= limit else "\n".join([f"[{len(lines) - limit} earlier lines cut]", *lines[-limit:]])


def render_draft(group: Group, sources: Sequence[Path]) -> str:
    """The Markdown issue draft of one group."""
    rep = group.representative
    plain = plain_of(rep)
    script = _read(_locate(plain.get("path"), sources))
    log = _read(_locate(plain.get("log"), sources))
    out = [f"# {group.title}", "",
           f"<!-- root-cause group `{group.key}`: {len(group.findings)} finding(s); drafted {now()} by "
           "mm-autotune-fuzz `python -m fuzz report --upstream` -->", "", "### 🐛 Describe the bug", "",
           f"Found by fuzzing inductor's max-autotune matmul path: {_short(rep.message)}. The program below "
           f"{plain_summary(plain)}.", ""]
    if script:
        out += _fence(script, "python") + [""]
    else:
        out += [f"(no plain repro was exported for `{rep.key}`: run `python -m fuzz export` on its campaign; the "
                f"fuzzer's own repro: `{as_dict(rep.repro).get('path') or '-'}`)", ""]
    if (plain.get("confirmed") or plain.get("reproduced")) and log:
        death = as_dict(plain.get("outcome"))
        ending = {"killed": f"\n[the process was killed by {death.get('type')}]",
                  "hang": "\n[the process hung: stopped at the time limit]"}.get(str(death.get("status")), "")
        out += [f"**Observed** (torch {plain.get('torch')}):", "", *_fence(_observed(log) + ending), ""]
        if len(log.splitlines()) > len(_observed(log).splitlines()):
            out += ["<details><summary>Full output</summary>", "", *_fence(_tail(log)), "", "</details>", ""]
    out += [f"**Expected**: {EXPECTED.get(str(plain.get('check')), EXPECTED['raises'])}", ""]
    out += _flips(plain)
    out += ["**Suspected location**: " + _suspect(group, as_dict(plain.get("outcome"))), ""]
    out += _others([f for f in group.findings if f is not rep], sources)
    out += _versions(group, rep, plain, sources)
    return "\n".join(out)


def _others(findings: list[Finding], sources: Sequence[Path]) -> list[str]:
    """The group's other findings, each with its own plain repro folded away."""
    if not findings:
        return []
    out = ["**Same root cause**, other variants:", ""]
    for f in findings:
        plain = plain_of(f)
        script = _read(_locate(plain.get("path"), sources))
        out += [f"- `{f.signature}` ({f.op}, seen {f.count}x): {_short(f.message)}; its plain repro "
                f"{plain_summary(plain)}."]
        if script:
            out += ["", "  <details><summary>plain repro</summary>", "", *_fence(script, "python"), "",
                    "  </details>", ""]
    return out + [""]


def _flips(plain: dict[str, Any]) -> list[str]:
    flips = [as_dict(flip) for flip in plain.get("flips") or []]
    if not flips:
        return []
    outcome = as_dict(plain.get("outcome"))
    same = (outcome.get("status"), outcome.get("type"), outcome.get("frame"))
    out = [f"**What changes the verdict** (one change at a time to the repro, torch {plain.get('torch')}):", ""]
    for flip in flips:
        verdict = "**passes**" if flip.get("status") == "passed" else \
            "still fails the same way" if (flip.get("status"), flip.get("type"), flip.get("frame")) == same else \
            "fails differently: " + plain_summary({"outcome": flip})
        out.append(f"- {flip.get('change')}: {verdict}")
        if str(flip.get("change", "")).startswith("eagerly") and verdict == "still fails the same way":
            out.append("  (eager gives the same wrong values: the bug is in the ATen kernel, not in inductor)")
    return out + [""]


def _suspect(group: Group, outcome: dict[str, Any]) -> str:
    where = str(outcome.get("location", ""))
    parts = [f"`torch/{where.split('/torch/', 1)[1]}` in `{str(outcome.get('frame', '')).rpartition(':')[2]}` "
             "(innermost inductor frame of the traceback)"] if "/torch/" in where else []
    if outcome.get("status") in ("killed", "hang"):
        parts.append("the process dies (or hangs) in native code, so there is no Python frame to blame: "
                     "`gdb -batch -ex run -ex bt --args python repro.py` shows the native frame")
    if group.cause is not None:
        parts.append(f"triage: {group.cause.location}")
    return "; ".join(parts) or "no exception to locate: the wrong values come from the kernel the repro selects " \
                               "(`TORCH_LOGS=output_code python repro.py` prints the generated code)"


def _versions(group: Group, rep: Finding, plain: dict[str, Any], sources: Sequence[Path]) -> list[str]:
    seen = sorted({f"torch {v.get('torch')} on {v.get('host') or '?'}" + (f" ({v['gpu']})" if v.get("gpu") else "")
                   for v in (as_dict(f.versions) for f in group.findings)})
    repros = sorted({f"torch {p.get('torch')}" for p in map(plain_of, group.findings) if p.get("reproduced")})
    registry = _registry_versions(group)
    out = ["**Affected versions (as measured)**: the fuzzer saw it on " + ", ".join(seen) + "; the plain repro "
           + ("fails on " + ", ".join(repros) if repros else "was not verified")
           + (f"; mm-autotune-fuzz's known-bug registry has seen it fail on {', '.join(registry)}." if registry
              else "."), ""]
    tracking = sorted({str(as_dict(f.known_bug).get("tracking")) for f in group.findings if as_dict(f.known_bug)})
    if tracking:
        out += ["**Tracking** (mm-autotune-fuzz's registry): " + "; ".join(tracking), ""]
    env = _read(_locate(plain.get("environment"), sources))
    out += ["### Versions", ""]
    if env:
        return out + _fence(env.strip()) + [""]
    return out + ["(no `collect_env` output was exported; versions recorded with the finding:)", "",
                  *_fence("\n".join(f"{k}: {v}" for k, v in sorted(as_dict(rep.versions).items()) if k != "ops")), ""]


def _registry_versions(group: Group) -> list[str]:
    from fuzz.bugs.known_bugs import KNOWN_BUGS

    names = {as_dict(f.known_bug).get("name") for f in group.findings}
    return sorted({v for bug in KNOWN_BUGS if bug.name in names for v in bug.torch_versions})


def write_drafts(findings: Sequence[Finding], out: Path, sources: Sequence[Path],
                 warn: Callable[[str], None]) -> list[Path]:
    """One draft per root-cause group into `out`, and `out`/index.md listing them and the groups not
    drafted, with the reason. A group whose records cannot be read is reported through `warn` and
    listed, never fatal. Returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    groups = group_findings(findings)
    index = ["# Upstream issue drafts", "", f"{len(findings)} finding(s) in {len(groups)} root-cause group(s).", ""]
    written = []
    for group in groups:
        rows = f"{len(group.findings)} finding(s): " + ", ".join(f"`{f.signature}`" for f in group.findings)
        reasons = {plain_of(f).get("unsupported") for f in group.findings}
        if group.cause is not None and group.cause.not_a_bug:
            index.append(f"- not drafted: **{group.title}** ({rows}): not worth filing as is: {group.cause.not_a_bug}")
            continue
        if None not in reasons:
            index.append(f"- not drafted: **{group.title}** ({rows}): {'; '.join(sorted(map(str, reasons)))}")
            continue
        if all(as_dict(f.repro).get("exit_code") == 0 for f in group.findings):
            index.append(f"- not drafted: **{group.title}** ({rows}): its repros no longer reproduce (FIXED on torch "
                         f"{', '.join(sorted({str(as_dict(f.repro).get('torch')) for f in group.findings}))})")
            continue
        try:
            text = render_draft(group, sources)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            warn(f"no draft for {group.key}: a finding's record is malformed ({type(e).__name__}: {e})")
            index.append(f"- not drafted: **{group.title}** ({rows}): a finding's record is malformed")
            continue
        path = out / f"{group.key}.md"
        path.write_text(text, encoding="utf-8")
        written.append(path)
        index.append(f"- [{group.title}]({path.name}) ({rows})")
    (out / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return written + [out / "index.md"]
