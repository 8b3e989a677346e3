"""Standalone repro scripts: one per finding (or failing property test), needing only torch.

A script carries the case (its JSON), a header comment with the violation, the versions it was
found with and the case in plain torch terms (program, inputs, config), and, vendored verbatim at
its end, the suite modules that run a case and judge it (`fuzz.run.session` and what it imports:
harness, programs, values, the oracles, the Case model; only torch and the standard library).
Running the suite's own code keeps one definition of how inputs are built, how the case compiles
and what each oracle accepts: the script's verdict is the oracle's verdict.

Exit status of a script: 1 while the bug is present, 0 once it is fixed (nothing fails), 2 when
the case could not be checked (e.g. eager now rejects it), 3 when the case fails differently (the
bug's violation is gone but others show). A finding where the worker process itself died or hung
is re-run in a child process, and its death (signal, exit status, timeout) is the bug.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fuzz.engine.children import REPO_ROOT, run_bounded
from fuzz.engine.machine import cache_root
from fuzz.store.findings import PROCESS_ORACLE, Finding, FindingsStore, now

SUITE_PACKAGES = ("fuzz", "oracles", "strategies")
ENTRY_MODULES = ("fuzz.run.session",)
ALLOWED_IMPORTS = frozenset({"torch", "triton", "__future__"}) | frozenset(sys.stdlib_module_names)
REPRO_OK, REPRO_BUG, REPRO_UNCHECKABLE, REPRO_DIFFERENT = 0, 1, 2, 3


class ReproError(Exception):
    """The repro cannot be made standalone (e.g. a vendored module imports a third-party package)."""


# --- vendoring ------------------------------------------------------------------------------------

def _module_file(name: str) -> tuple[Path, bool] | None:
    base = REPO_ROOT.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py"), False
    return None


def vendored_modules(entries: Iterable[str] = ENTRY_MODULES) -> dict[str, tuple[bool, str]]:
    """The suite modules `entries` import, transitively (package __init__s included):
    name -> (is_package, source). Raises ReproError on an import a bare torch install lacks."""
    todo, found = list(entries), {}
    while todo:
        name = todo.pop()
        if name in found:
            continue
        located = _module_file(name)
        if located is None:
            raise ReproError(f"cannot find suite module {name} under {REPO_ROOT}")
        path, is_package = located
        source = path.read_text(encoding="utf-8")
        found[name] = (is_package, source)
        if "." in name:
            todo.append(name.rpartition(".")[0])
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(source, str(path))):
            targets: list[tuple[str, list[str]]]
            if isinstance(node, ast.Import):
                targets = [(a.name, []) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + [module]).strip(".")
                targets = [(module, [a.name for a in node.names])]
            else:
                continue
            for module, names in targets:
                top = module.split(".")[0]
                if top in SUITE_PACKAGES:
                    todo.append(module)
                    todo += [f"{module}.{n}" for n in names if _module_file(f"{module}.{n}")]
                elif top not in ALLOWED_IMPORTS:
                    raise ReproError(f"{name} imports {module}: a standalone repro may only need torch")
    return dict(sorted(found.items()))


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


# --- rendering ------------------------------------------------------------------------------------

def _as_dict(v: Any) -> dict[str, str]:
    return dict(v) if isinstance(v, Mapping) else dataclasses.asdict(v)


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
    for i, t in enumerate(case.inputs):
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
    header.append(f"# exported {now()} with torch {_torch_version()} by mm-autotune-fuzz {_suite_version()}")
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
    body = _BODY.format(case_json=_literal(case.dumps()),
                        expected=repr([(v["oracle"], v["signature"]) for v in checked]),
                        process=repr([v["signature"] for v in process]), mode=repr(mode),
                        timeout=float(meta.get("timeout_s", 600.0)))
    vendor = [_VENDOR_HEAD.format(version=_suite_version()), "_VENDORED = {"]
    for name, (is_package, source) in vendored_modules().items():
        vendor.append(f"    {name!r}: ({is_package}, {_literal(source)}),")
    vendor += ["}", "", "", 'if __name__ == "__main__":',
               ('    sys.exit(run_child() if sys.argv[1:] == ["--child"] else (check_process() if MODE == "process" '
                'else check()))'), ""]
    return "\n".join(header) + body + "\n".join(vendor)


def _torch_version() -> str:
    with contextlib.suppress(Exception):
        import torch

        return str(torch.__version__)
    return "-"


_BODY = '''import sys

CASE_JSON = {case_json}
EXPECTED = {expected}  # (oracle, signature) pairs whose reappearance means the bug is still there
PROCESS_DEATHS = {process}  # how the worker process died, for findings where it did
MODE = {mode}
TIMEOUT_S = {timeout}


ATTEMPTS = 3  # a bug that reads memory it does not own can pass by chance: a pass is retried


def evaluate(times=1):
    """Run the case the way the suite does, `times` times in one session; yields each Verdict."""
    _install_vendored_modules()
    from fuzz.run.session import FuzzSession
    from strategies.case import Case

    session = FuzzSession()
    for _attempt in range(times):
        yield session.evaluate(Case.loads(CASE_JSON))


def check():
    import torch

    where = f"torch {{torch.__version__}}"
    others = set()
    for verdict in evaluate(ATTEMPTS):
        seen = list(verdict.violations) + [v for v, _ in verdict.known]
        hits = [v for v in seen if (v.oracle, v.signature) in EXPECTED]
        if hits:
            v = hits[0]
            print(f"BUG ({{where}}): [{{v.severity}}] {{v.oracle}} {{v.signature}}: {{v.message}}")
            return 1
        if verdict.rejected:
            failure = verdict.observation.eager_failure or verdict.observation.compile_failure
            print(f"CANNOT CHECK ({{where}}): the case is rejected now: {{failure.type}}: {{failure.message}}")
            return 2
        others |= {{f"{{v.oracle}} {{v.signature}}" for v in seen}}
    expected = ", ".join(s for _, s in EXPECTED)
    if others:
        print(f"FAILS DIFFERENTLY ({{where}}): {{expected}} no longer reproduces, but the case fails with: "
              + ", ".join(sorted(others)))
        return 3
    print(f"FIXED ({{where}}): {{expected}} no longer reproduces and nothing else fails in {{ATTEMPTS}} runs")
    return 0


def run_child():
    import faulthandler

    faulthandler.enable()
    (verdict,) = evaluate()
    if verdict.observation.case.device == "cuda":
        import torch

        try:
            torch.cuda.synchronize()
        except Exception as e:
            print(f"the CUDA context is unusable after the case: {{e}}", file=sys.stderr)
            return 3
    return 0


def check_process():
    import signal
    import subprocess

    expected = ", ".join(PROCESS_DEATHS)
    try:
        code = subprocess.run([sys.executable, __file__, "--child"], timeout=TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        print(f"BUG: the case hung for more than {{TIMEOUT_S:g}}s (found as: {{expected}})")
        return 1
    if code < 0:
        print(f"BUG: the case killed the process with {{signal.Signals(-code).name}} (found as: {{expected}})")
        return 1
    if code == 3:
        print(f"BUG: the case left the CUDA context unusable (found as: {{expected}})")
        return 1
    if code == 1:
        print("CANNOT CHECK: the child process raised (traceback above)")
        return 2
    if code != 0:
        print(f"BUG: the process exited with status {{code}} (found as: {{expected}})")
        return 1
    print(f"FIXED: the case ran to completion (found as: {{expected}})")
    return 0


'''

_VENDOR_HEAD = '''# ================================================================================================
# mm-autotune-fuzz {version}, vendored verbatim: the modules that run a case and judge it.
# ================================================================================================

def _install_vendored_modules():
    import importlib.abc
    import importlib.util
    import linecache

    class VendoredModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):
            if name not in _VENDORED:
                return None
            return importlib.util.spec_from_loader(name, self, is_package=_VENDORED[name][0])

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            source = _VENDORED[module.__name__][1]
            filename = f"<vendored {{module.__name__}}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            exec(compile(source, filename, "exec"), module.__dict__)

    sys.meta_path.insert(0, VendoredModules())

'''


# --- writing and verifying -------------------------------------------------------------------------

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
    meta = {"versions": {"torch": _torch_version(), "python": sys.version.split()[0]}, **(meta or {})}
    path.write_text(render_repro(case, violations, meta), encoding="utf-8")
    path.chmod(0o755)
    return str(path)


@dataclasses.dataclass
class ReproResult:
    exit_code: int | None  # None: it ran past the timeout, or was stopped
    verdict: str  # its last line of output
    seconds: float
    skipped: bool = False  # unchecked: not run, or stopped, as the campaign was stopped or the checks' time spent


def run_repro(path: str | os.PathLike[str], timeout_s: float = 900.0,
              cancel: threading.Event | None = None) -> ReproResult:
    """Run a repro with plain `python`, outside the repository, as a user would (killed when
    `cancel` is set: exit_code None, skipped)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MM_FUZZ_TEST_FAULT")}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_root() / "repro" / "inductor")
    env["TRITON_CACHE_DIR"] = str(cache_root() / "repro" / "triton")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-repro-") as cwd:
        code, stdout, stderr = run_bounded([sys.executable, str(Path(path).resolve())], cwd=cwd, env=env,
                                           timeout_s=timeout_s, cancel=cancel)
    seconds = time.monotonic() - began
    if code is None:
        stopped = cancel is not None and cancel.is_set()
        return ReproResult(None, "not checked: the campaign was stopped" if stopped else
                           f"timed out after {timeout_s:g}s", seconds, skipped=stopped)
    lines = [ln for ln in stdout.splitlines() if ln.strip()] or [ln for ln in stderr.splitlines() if ln.strip()] \
        or [""]
    return ReproResult(code, lines[-1][:400], seconds)


def finding_meta(f: Finding) -> dict[str, Any]:
    return {"versions": f.versions, "known_bug": f.known_bug, "count": f.count, "first_seen": f.first_seen,
            "last_seen": f.last_seen}


def check_basis(f: Finding) -> str:
    """What a repro check's result depends on: the finding's best case and violation, this host,
    torch and the suite's code (a check with the same basis need not run again)."""
    code = sorted((str(p.relative_to(REPO_ROOT)), p.read_text(encoding="utf-8"))
                  for package in SUITE_PACKAGES for p in (REPO_ROOT / package).rglob("*.py"))
    basis = [f.best_case, f.violation, socket.gethostname(), _torch_version(), code]
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _checked_before(f: Finding, basis: str, repro_dir: Path) -> bool:
    """Whether `f`'s repro reproduced and its plain form was searched to the end with this basis,
    and the files are still there (a repro that did not reproduce is always checked again)."""
    done, plain = f.repro or {}, (f.repro or {}).get("plain") or {}
    return done.get("basis") == basis and done.get("exit_code") == REPRO_BUG and bool(plain.get("verified")) \
        and not plain.get("out_of_time") and (repro_dir.parent / str(plain.get("path"))).is_file()


def export_findings(findings: FindingsStore | Iterable[Finding], repro_dir: Path, *, emit: Callable[[str], None],
                    verify: bool = True, timeout_s: float = 900.0, jobs: int | None = None,
                    cancel: threading.Event | None = None,
                    time_s: float | None = None) -> list[tuple[Finding, str, ReproResult | None]]:
    """One repro per finding (of its smallest case), each run with plain python to check that it
    reproduces (`jobs` at a time, new findings first, a line as each ends), and beside it the
    plain-torch repro (fuzz.export.plain_repro, searched for its smallest failing form when verifying); the
    results are stored in the finding when `findings` is a store. A check whose basis (check_basis)
    is unchanged since it last ran is not run again. `time_s` bounds the wall time of all the
    checks (the environment report included): none starts after it, and one still running then,
    repro or plain search, is killed; those repros are written unchecked and say why."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from fuzz.export.plain_repro import export_plain, plain_summary, write_environment
    from strategies.case import Case, CaseError

    store = findings if isinstance(findings, FindingsStore) else None
    written = []
    for f in sorted(findings, key=lambda f: not f.is_new):
        try:
            case = Case.from_json(f.best_case)
            meta = {**finding_meta(f), "timeout_s": 0.8 * timeout_s}  # a hang repro's own limit, inside ours
            name = f.file_name().removesuffix(".json") + ".py"
            path = write_repro(case, [f.violation], repro_dir, meta=meta, name=name)
        except (CaseError, ReproError) as e:
            emit(f"warning: no repro for {f.key}: {e}")
            continue
        written.append((f, path))
    bases = [check_basis(f) if verify else "" for f, _ in written]
    again = [i for i, (f, _) in enumerate(written) if verify and _checked_before(f, bases[i], repro_dir)]
    results: dict[int, tuple[ReproResult | None, dict[str, Any]]] = {}
    deadline = time.monotonic() + time_s if time_s is not None else float("inf")

    def left() -> float:
        return deadline - time.monotonic()

    def skipped() -> str | None:
        """Why no check may start now (or go on), if none may."""
        if cancel is not None and cancel.is_set():
            return "not checked: the campaign was stopped"
        return f"not checked: the {time_s:g}s for repro checks were spent" if left() <= 0 else None

    def unchecked(f: Finding, path: str, why: str, seconds: float = 0.0) -> tuple[ReproResult, dict[str, Any]]:
        last = f.repro or {}
        if last.get("exit_code") is not None:  # keep the last check's plain repro, and say when it ran
            why += f" (last checked {last.get('checked')} with torch {last.get('torch')}: exit {last['exit_code']})"
            if (repro_dir.parent / str((last.get("plain") or {}).get("path"))).is_file():
                return ReproResult(None, why, seconds, skipped=True), last["plain"]
        return ReproResult(None, why, seconds, skipped=True), export_plain(
            f.best_case, f.violation, path, repro_dir.parent, verify=False, timeout_s=timeout_s, environment=None)

    def check(f: Finding, path: str) -> tuple[ReproResult | None, dict[str, Any]]:
        if not verify:
            return None, export_plain(f.best_case, f.violation, path, repro_dir.parent, verify=False,
                                      timeout_s=timeout_s, environment=None)
        if why := skipped():
            return unchecked(f, path, why)
        result = run_repro(path, min(timeout_s, left()), cancel)
        if result.exit_code is None and (why := skipped()):  # stopped by the checks' limit, not its own timeout
            return unchecked(f, path, f"{why} (stopped after {result.seconds:.0f}s)", result.seconds)
        return result, export_plain(f.best_case, f.violation, path, repro_dir.parent, verify=not skipped(),
                                    timeout_s=timeout_s, budget_s=min(timeout_s, left()), environment=environment,
                                    cancel=cancel)

    environment = write_environment(repro_dir, timeout_s=min(300.0, left())) \
        if verify and len(again) < len(written) and not skipped() else None
    for i in again:
        f, path = written[i]
        before = f.repro or {}  # `again` holds only findings with a repro record
        results[i] = ReproResult(before["exit_code"], before["verdict"], before["seconds"] or 0.0), before["plain"]
        emit(f"repro {path}: reproduced before with this torch, code and case (exit 1), not run again")
    queue = [i for i in range(len(written)) if i not in again]
    if queue:
        jobs = jobs or max(1, min(4, (os.cpu_count() or 2) // 2))
        if verify:
            limit = f", {time_s:g}s in all" if time_s is not None else ""
            emit(f"checking {len(queue)} repro(s) and their plain-torch forms, new findings first, {jobs} at a time "
                 f"(each up to {timeout_s:g}s{limit})")
        with ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(check, *written[i]): i for i in queue}
            for done, future in enumerate(as_completed(futures), 1):
                i = futures[future]
                result, plain = results[i] = future.result()
                head = f"[{done}/{len(queue)}] repro {written[i][1]}"
                if result is None:
                    emit(head)
                elif result.skipped:
                    emit(f"{head}: {result.verdict}")
                    continue
                else:
                    as_stated = "reproduces" if result.exit_code == REPRO_BUG else "DOES NOT REPRODUCE"
                    emit(f"{head}: exit {result.exit_code} ({as_stated}, {result.seconds:.0f}s): {result.verdict}")
                emit(f"    plain repro {plain.get('path') or '(none)'}: {plain_summary(plain)}")
    for i, (f, path) in enumerate(written):
        result, plain = results.get(i, (None, {}))
        f.repro = {"path": os.path.relpath(path, repro_dir.parent), "torch": _torch_version(),
                   "checked": (f.repro or {}).get("checked") if i in again else now(),
                   "exit_code": result.exit_code if result else None,
                   "verdict": result.verdict if result else "not run",
                   "seconds": round(result.seconds, 1) if result else None, "plain": plain,
                   **({"basis": bases[i]} if result and result.exit_code is not None else {})}
        if store is not None:
            store.save(f)
    return [(f, path, results.get(i, (None, {}))[0]) for i, (f, path) in enumerate(written)]
