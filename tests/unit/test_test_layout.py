"""The tests live in rooms (properties, planted, unit, engine) and share helpers only through
conftest fixtures and the helper modules beside the rooms, never through another test module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOMS = ("properties", "planted", "unit", "engine")


def borrowed_names(source: str) -> list[str]:
    """Each import in `source` of a test module (tests...test_*) or of a private name from tests."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
            if node.module.rsplit(".", 1)[-1].startswith("test_"):
                found.append(f"{node.lineno}: from {node.module}")
            found += [f"{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "tests" and a.name.rsplit(".", 1)[-1].startswith("test_")]
    return found


def test_every_test_module_sits_in_a_room() -> None:
    loose = [p.name for p in TESTS.glob("test_*.py")]
    assert loose == [], f"test modules outside {ROOMS}: {loose}"
    assert {p.parent.name for p in TESTS.rglob("test_*.py")} <= set(ROOMS)


def test_no_test_borrows_from_another_test_module() -> None:
    offenders = {str(p.relative_to(TESTS)): found for p in sorted(TESTS.rglob("*.py"))
                 if (found := borrowed_names(p.read_text(encoding="utf-8")))}
    assert offenders == {}


@pytest.mark.parametrize("planted", ["from tests.unit.test_cli import run_cli", "from tests.cases import _private",
                                     "import tests.engine.test_seeds"])
def test_the_rule_fails_on_a_planted_borrow(planted: str) -> None:
    assert borrowed_names(planted)
    assert borrowed_names("from tests.cases import small_case\nimport tests.checking") == []
