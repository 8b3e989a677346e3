"""The suite's modules import each other without a cycle (imports inside functions count too):
the Case model (strategies.case, strategies.vocabulary) depends on nothing that observes inductor. Only fuzz.probe
touches inductor/dynamo internals, no module is over 400 lines, and none holds Python source in a
string literal (a script run in a fresh process, or a repro's template, is a module of its own)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fuzz", "oracles", "strategies")


def import_graph() -> dict[str, set[str]]:
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts): p for pkg in PACKAGES
               for p in (ROOT / pkg).rglob("*.py") if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph`, or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_suite_has_no_import_cycle() -> None:
    graph = import_graph()
    assert {"strategies.case", "fuzz.probe.observe", "fuzz.engine.campaign"} <= set(graph)
    assert cycle(graph) == [], " -> ".join(cycle(graph))


def test_cycle_finds_a_planted_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


# --- the probe rule and the module size rule --------------------------------------------------------

PROBE = "fuzz.probe"
INTERNALS = ("torch._inductor", "torch._dynamo")
MAX_LINES = 400


def _is_internal(name: str) -> bool:
    return any(name == t or name.startswith(t + ".") for t in INTERNALS)


def internals_used(source: str) -> list[str]:
    """Each `torch._inductor` / `torch._dynamo` use in `source` (imports, `import torch` then
    attribute access), as `line: what`; string literals do not count."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _is_internal(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if _is_internal(node.module) or (node.module == "torch" and any(
                    a.name in ("_inductor", "_dynamo") for a in node.names)):
                found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch" \
                and node.attr in ("_inductor", "_dynamo"):
            found.append(f"{node.lineno}: torch.{node.attr}")
    return found


def source_modules() -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): p for pkg in PACKAGES
            for p in sorted((ROOT / pkg).rglob("*.py"))}


def test_only_the_probe_touches_inductor_internals() -> None:
    offenders = {name: used for name, path in source_modules().items()
                 if not (name == PROBE or name.startswith(PROBE + "."))
                 and (used := internals_used(path.read_text(encoding="utf-8")))}
    assert offenders == {}, f"inductor/dynamo internals outside {PROBE}: {offenders}"
    assert internals_used((ROOT / "fuzz" / "probe" / "observe.py").read_text())  # the scan sees the probe's


@pytest.mark.parametrize("planted", ["import torch._inductor.config", "from torch._dynamo import reset",
                                     "from torch import _inductor", "import torch\ntorch._dynamo.reset()",
                                     "def f():\n    import torch._inductor.select_algorithm as s\n"])
def test_the_probe_rule_fails_on_a_planted_use(planted: str) -> None:
    assert internals_used(planted)
    assert internals_used('"""torch._inductor.config.patch in a docstring"""\nx = "torch._dynamo"') == []


def test_no_module_is_over_400_lines() -> None:
    long = {name: n for name, path in source_modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines (split them along a real seam): {long}"


# --- code as code -----------------------------------------------------------------------------------

CODE_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign,
                   ast.AugAssign, ast.AnnAssign)


def _holds_code(text: str) -> bool:
    """Whether `text` is Python source: three lines or more that parse (dedented) and hold a def,
    class, import, assignment or call statement."""
    if len(text.strip().splitlines()) < 3:
        return False
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return False
    return any(isinstance(n, CODE_STATEMENTS) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))
               for n in ast.walk(tree))


def python_in_strings(source: str) -> list[str]:
    """Each string literal of `source` that holds Python source (an f-string's fields read as names),
    as `line: its first line`; docstrings (a string that is a statement of its own) do not count."""
    tree = ast.parse(source)
    skip = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    skip |= {id(part) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for part in ast.walk(n) if part is not n}
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "_" for v in node.values)
        else:
            continue
        if _holds_code(text):
            found.append(f"{node.lineno}: {text.strip().splitlines()[0]}")
    return found


def test_no_module_holds_python_source_in_a_string() -> None:
    offenders = {name: found for name, path in source_modules().items()
                 if (found := python_in_strings(path.read_text(encoding="utf-8")))}
    assert offenders == {}, f"Python source in string literals (make it a module: run it with `python -m`, or read " \
                            f"its text where a repro must stay standalone): {offenders}"


@pytest.mark.parametrize("planted", [
    'SCRIPT = """\nimport json, sys\nprint(json.dumps(sys.argv))\nsys.exit(0)\n"""',
    'def run():\n    return subprocess.run(["python", "-c", """\n        import os\n        pid = os.getpid()\n'
    '        print(pid)\n    """])',
    "BODY = f\"\"\"\ndef check():\n    return {expected}\n\n\nprint(check())\n\"\"\"",
])
def test_the_code_check_fails_on_planted_source(planted: str) -> None:
    assert python_in_strings(planted)


def test_the_code_check_passes_prose_data_and_docstrings() -> None:
    example = '"""\n        x = f()\n        print(x)\n        y = x\n    """'  # as a docstring shows code
    ordinary = [
        'raise ValueError("the case failed:\\n  x0 is 4 x 8\\n  x1 is 8 x 4\\nsee the log")',
        'print(f"{n} repro(s) written\\n  check them with: python -m fuzz export {out}\\n  or rerun them")',
        'TABLE = "a\\nb\\nc\\n1"',  # parses, but only names and a number
        'CODE = "import os\\nos.getpid()"',  # two lines: below the check's limit
        f"def f():\n    {example}\n    return 1\n",  # docstrings, a function's or an attribute's
        f"LIMIT = 3\n{example}\n",
    ]
    assert [python_in_strings(source) for source in ordinary] == [[]] * len(ordinary)
    assert python_in_strings(f"USE = {example}")  # the same text as a value is source
