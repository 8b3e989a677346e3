"""Which suite modules a standalone repro carries: those `fuzz.run.session` imports, transitively,
each needing only torch and the standard library (fuzz.export.repro_render vendors their source)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

from fuzz.engine.children import REPO_ROOT

SUITE_PACKAGES = ("fuzz", "oracles", "strategies")
ENTRY_MODULES = ("fuzz.run.session",)
ALLOWED_IMPORTS = frozenset({"torch", "triton", "__future__"}) | frozenset(sys.stdlib_module_names)


class ReproError(Exception):
    """The repro cannot be made standalone (e.g. a vendored module imports a third-party package)."""


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
