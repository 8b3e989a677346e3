"""One standalone repro script: a header that says what the finding is (the violation, the
versions it was found with, the case in plain torch terms), then fuzz.export.repro_script's text
with the case's values and the vendored suite modules (fuzz.export.vendoring) in place."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fuzz.engine.children import REPO_ROOT
from fuzz.export import repro_script
from fuzz.export.vendoring import SUITE_PACKAGES, ReproError, vendored_modules
from fuzz.store.findings import PROCESS_ORACLE, now


def _as_dict(v: Any) -> dict[str, str]:
    return dict(v) if isinstance(v, Mapping) else dataclasses.asdict(v)


def _literal(source: str) -> str:
    """`source` as a Python string literal, readable (triple-quoted raw) where that is exact."""
    if "'''" not in source and not source.endswith("\\") and "\\\n" not in source:
        return "r'''" + source + "'''"
    return repr(source)


def _suite_version() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", *SUITE_PACKAGES],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return rev + ("+local changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def torch_version() -> str:
    with contextlib.suppress(Exception):
        import torch

        return str(torch.__version__)
    return "-"


def _script(values: Mapping[str, str]) -> str:
    """fuzz.export.repro_script's text without its docstring, each module-level constant named in
    `values` assigned the expression given there in place of its one-line placeholder (its comment
    kept). Raises ReproError unless the template assigns each once, on one line."""
    source = inspect.getsource(repro_script)
    tree = ast.parse(source)
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in values:
            if target.id in found or value.lineno != value.end_lineno:
                raise ReproError(f"repro_script assigns {target.id} twice or over several lines")
            found[target.id] = value
    if set(found) != set(values):
        raise ReproError(f"repro_script lacks the constants {sorted(set(values) - set(found))}")
    lines = source.splitlines(keepends=True)
    for name, value in found.items():
        line = lines[value.lineno - 1].encode()  # the offsets count UTF-8 bytes
        lines[value.lineno - 1] = (line[:value.col_offset] + values[name].encode()
                                   + line[value.end_col_offset:]).decode()
    start = tree.body[0].end_lineno if ast.get_docstring(tree) is not None else 0
    return "".join(lines[start:]).lstrip("\n")


def _plain_torch(case: Any) -> list[str]:
    """The case in plain torch terms, for the header (the script runs the suite's code)."""
    data = case.to_json()
    lines = []
    with contextlib.suppress(Exception):
        from fuzz.run import programs

        lines += ["program (after fuzz.run.programs.source):",
                  *("    " + ln for ln in programs.source(case).splitlines())]
    if not lines:
        lines.append(f"op: {data['op']} with parameters {data['params']}")
    lines.append("inputs, each a view torch.as_strided(storage, size, stride, offset) of a fresh storage:")
    shared = list(case.shared_storage) if len(case.shared_storage) > 1 else []
    for i, t in enumerate(case.held(case.inputs)):  # x0 as held before an upcast
        role = " (frozen module parameter)" if data.get("frozen_weights") and i > 0 else ""
        size = max(case.inputs[j].storage_size() for j in shared) if shared and i == shared[0] else t.storage_size()
        storage = f"storage of {size} elements" if i not in shared[1:] else f"a view of x{shared[0]}'s storage"
        lines.append(f"    x{i}: {t.dtype} size {tuple(t.shape)} stride {tuple(t.stride)} offset {t.offset}, "
                     f"{storage}{role}")
    lines.append(f"values: {data['value_mode']}, storage i filled from torch.Generator().manual_seed("
                 f"{data['seed']} * 1009 + i) in float64, then cast to the dtype and moved to {data['device']}")
    lines.append("inductor config: " + ", ".join(f"{k}={v!r}" for k, v in sorted(data["config"].items())))
    with contextlib.suppress(Exception):
        from fuzz.probe.observe import LOWERING_SKIPPING_CACHES

        lines.append("  plus " + ", ".join(f"{k}={v!r}" for k, v in LOWERING_SKIPPING_CACHES.items())
                     + " (every compile reaches lowering)")
    shown = {"op", "inputs", "params", "value_mode", "seed", "device", "config"}
    extras = [f"{k}={v!r}" for k, v in sorted(data.items()) if k not in shown and v not in (False, [], {}, None, 0)]
    if extras:
        lines.append("also: " + ", ".join(extras))
    return lines


def render_repro(case: Any, violations: Sequence[Any], meta: Mapping[str, Any] | None = None) -> str:
    """The script's text for `case` showing `violations` (Violation objects or dicts)."""
    meta = dict(meta or {})
    expected = [_as_dict(v) for v in violations]
    if not expected:
        raise ReproError("a repro needs at least one violation to check")
    process = [v for v in expected if v["oracle"] == PROCESS_ORACLE]
    checked = [v for v in expected if v["oracle"] != PROCESS_ORACLE]
    mode = "process" if process else "oracle"
    versions = meta.get("versions") or {}
    first = expected[0]
    header = [
        "#!/usr/bin/env python3",
        f"# mm-autotune-fuzz repro: {first['oracle']} / {first['signature']}",
        "#",
    ]
    for v in expected:
        header += [f"# violation [{v['severity']}] {v['oracle']} {v['signature']}:", f"#     {v['message']}"]
    bug = meta.get("known_bug")
    header.append("# status: " + (f"known upstream bug {bug['name']} ({bug['tracking']})" if bug else
                                  "new finding (not a registered upstream bug)"))
    if meta.get("count"):
        header.append(f"# seen {meta['count']} time(s) from {meta.get('first_seen')} to {meta.get('last_seen')}")
    header.append("# found with: " + ", ".join(f"{k} {versions.get(k) or '-'}" for k in
                                                ("torch", "triton", "cuda", "gpu", "driver", "python", "host")))
    header.append(f"# exported {now()} with torch {torch_version()} by mm-autotune-fuzz {_suite_version()}")
    header += ["#", "# The case:"] + [f"#   {line}" for line in _plain_torch(case)]
    header += ["#", f"#   case JSON: {case.dumps()}", "#"]
    if mode == "process":
        header += ["# The bug kills or hangs the process running the case: this script runs the case in a",
                   "# child process and reports how that ends."]
    header += ["# The script runs the case exactly as mm-autotune-fuzz does (its modules are vendored",
               "# verbatim at the end of this file; they need only torch) and applies the oracle(s) above.",
               "# Run it with plain `python`. Exit status: 1 while the bug is present, 0 once it is fixed",
               "# (nothing fails), 2 when the case cannot be checked (e.g. eager rejects it on this torch),",
               "# 3 when it fails differently (other violations). A passing run is repeated (3 runs in",
               "# all) before it says FIXED: some bugs read memory they do not own.", ""]
    vendored = "".join(f"    {name!r}: ({is_package}, {_literal(source)}),\n"
                       for name, (is_package, source) in vendored_modules().items())
    return "\n".join(header) + _script({
        "CASE_JSON": _literal(case.dumps()), "EXPECTED": repr([(v["oracle"], v["signature"]) for v in checked]),
        "PROCESS_DEATHS": repr([v["signature"] for v in process]), "MODE": repr(mode),
        "TIMEOUT_S": repr(float(meta.get("timeout_s", 600.0))), "_VENDORED": "{\n" + vendored + "}"})


# --- writing ------------------------------------------------------------------------------------

def repro_name(case: Any, violations: Sequence[Any]) -> str:
    first = _as_dict(violations[0])
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{first['oracle']}-{first['signature']}").strip("-")[:80]
    digest = hashlib.sha1((case.dumps() + repr([_as_dict(v)["signature"] for v in violations])).encode())
    return f"{slug}-{digest.hexdigest()[:8]}.py"


def write_repro(case: Any, violations: Sequence[Any], repro_dir: str | os.PathLike[str],
                meta: Mapping[str, Any] | None = None, name: str | None = None) -> str:
    """Write the repro script for `case` and its `violations` into `repro_dir`; returns its path.
    (tests/checking.py calls this for every failing property test under `pytest --repro-dir`.)"""
    path = Path(repro_dir) / (name or repro_name(case, violations))
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"versions": {"torch": torch_version(), "python": sys.version.split()[0]}, **(meta or {})}
    path.write_text(render_repro(case, violations, meta), encoding="utf-8")
    path.chmod(0o755)
    return str(path)
