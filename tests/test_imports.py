"""The suite's modules import each other without a cycle (imports inside functions count too):
the Case vocabulary (strategies.case) depends on nothing that observes inductor."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fuzz", "oracles", "strategies")


def import_graph() -> dict[str, set[str]]:
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts): p for pkg in PACKAGES
               for p in (ROOT / pkg).glob("*.py") if p.name != "__init__.py"}
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
    assert {"strategies.case", "oracles.observe", "fuzz.campaign"} <= set(graph)
    assert cycle(graph) == [], " -> ".join(cycle(graph))


def test_cycle_finds_a_planted_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
