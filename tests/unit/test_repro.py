"""Repro scripts: standalone (only torch), exit 1 while the bug is present and 0 once it is fixed,
checked against a real inductor bug (the CPP GEMM template ignores a frozen weight's storage
offset on torch 2.13) and the same case on ATen, which is right. `pytest --repro-dir` writes the
same scripts for failing property tests."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from fuzz.export.repro import run_repro
from fuzz.export.repro_render import render_repro, write_repro
from fuzz.export.repro_script import REPRO_DIFFERENT
from fuzz.export.vendoring import ALLOWED_IMPORTS, SUITE_PACKAGES, ReproError, vendored_modules
from oracles.model import Observation, Violation
from strategies.case import Case, TensorSpec, contiguous_strides
from tests.cases import affected, offset_weight_case, small_case

CPP_OFFSET = Violation("numerics", "wrong result", "exact-mismatch:addmm:float32", "addmm: 512 element(s) differ")


def imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add((node.module or "").split(".")[0])
    return names


def run_isolated(path: str) -> subprocess.CompletedProcess[str]:
    """Run a repro with plain python, outside the repository, with hypothesis made unimportable;
    print which loader provided the suite's modules."""
    probe = f"""
import runpy, sys
sys.modules["hypothesis"] = None
sys.argv = [{path!r}]
try:
    runpy.run_path({path!r}, run_name="__main__")
    code = 0
except SystemExit as e:
    code = e.code
loaders = sorted({{type(m.__spec__.loader).__name__ for name, m in list(sys.modules.items())
                  if m is not None and name.split(".")[0] in {SUITE_PACKAGES!r}}})
print("LOADERS", loaders)
sys.exit(code)
"""
    return subprocess.run([sys.executable, "-I", "-c", probe], check=False, cwd="/", capture_output=True, text=True,
                          timeout=600)


def test_vendored_modules_need_only_torch_and_the_standard_library() -> None:
    modules = vendored_modules()
    assert {"fuzz.run.session", "fuzz.run.harness", "oracles.numerics", "strategies.case"} <= set(modules)
    assert not any(name.startswith("strategies.cases") for name in modules)  # no Hypothesis strategies
    for name, (_, source) in modules.items():
        outside = {m for m in imports(source) if m not in ALLOWED_IMPORTS and m not in SUITE_PACKAGES}
        assert not outside, (name, outside)


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
@affected
def test_repro_of_a_real_bug_fails_standalone_and_the_fixed_case_passes(tmp_path: Path) -> None:
    buggy = write_repro(offset_weight_case("CPP"), [CPP_OFFSET], tmp_path)  # CPP alone: no autotuning race
    text = Path(buggy).read_text()
    assert text.startswith("#!/usr/bin/env python3\n# mm-autotune-fuzz repro: numerics / exact-mismatch:addmm:float32")
    assert "# found with: torch " in text and "max_autotune_gemm_backends='CPP'" in text
    assert imports(text.split("# ====")[0]) <= ALLOWED_IMPORTS | set(SUITE_PACKAGES)  # suite: vendored below
    proc = run_isolated(buggy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = [ln for ln in proc.stdout.splitlines() if ln.startswith(("BUG", "FIXED", "CANNOT"))]
    assert len(verdict) == 1 and verdict[0].startswith("BUG") and "exact-mismatch:addmm:float32" in verdict[0]
    assert "LOADERS ['VendoredModules']" in proc.stdout  # nothing came from the repository or an install

    fixed = run_repro(write_repro(offset_weight_case("ATEN"), [CPP_OFFSET], tmp_path))
    assert fixed.exit_code == 0 and fixed.verdict.startswith("FIXED"), fixed


def plant(path: Path, *lines: str) -> None:
    """Run `lines` on each run's verdict (`verdict`, `_attempt`) before the script judges it."""
    run = "        yield session.evaluate(Case.loads(CASE_JSON))\n"
    assert run in path.read_text()
    planted = "".join(f"        {line}\n" for line in ("verdict = session.evaluate(Case.loads(CASE_JSON))", *lines,
                                                         "yield verdict"))
    path.write_text(path.read_text().replace(run, planted))


@affected
def test_a_bug_that_hides_in_the_first_run_is_still_reported(tmp_path: Path) -> None:
    path = Path(write_repro(offset_weight_case("CPP"), [CPP_OFFSET], tmp_path))
    plant(path, "if _attempt == 0:  # planted: the first run happens to read benign memory",
          "    verdict.violations.clear(); verdict.known.clear()")
    result = run_repro(path)
    assert result.exit_code == 1 and "exact-mismatch:addmm:float32" in result.verdict, result


def test_a_warm_cache_repro_whose_cache_never_served_cannot_say_fixed(tmp_path: Path) -> None:
    """A case whose bug lives in the program loaded from the FX graph cache shows nothing where that
    compile ran fresh: when no run loaded from the cache the script cannot check, and a run that
    did (none of them showing the bug) is a fix."""
    case = Case.make(op="mm", device="cpu", warm_cache=True,  # unfrozen: torch 2.11 never caches this frozen graph
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
                     inputs=(TensorSpec((8, 32), (32, 1), 0, "float16"), TensorSpec((32, 24), (24, 1), 0, "float16")))
    bug = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float16", "message": "m"}
    path = Path(write_repro(case, [bug], tmp_path))
    fresh = path.with_name("fresh.py")
    fresh.write_text(path.read_text())
    plant(fresh, "verdict.observation.warm_cache_hit = False  # planted: the second compile missed the cache")
    missed = run_repro(fresh)
    assert missed.exit_code == 2 and missed.verdict.startswith("CANNOT CHECK") and "FX graph cache" in missed.verdict
    loaded = run_repro(path)  # ATen alone is right when loaded from the cache
    assert loaded.exit_code == 0 and loaded.verdict.startswith("FIXED"), loaded


def test_process_death_repro_reports_how_the_child_ends(tmp_path: Path) -> None:
    death = {"oracle": "process", "severity": "crash", "signature": "killed:SIGSEGV:mm", "message": "died"}
    path = Path(write_repro(small_case(), [death], tmp_path))
    assert "MODE = 'process'" in path.read_text()
    clean = run_repro(path)  # the case itself is fine on this torch
    assert clean.exit_code == 0 and clean.verdict.startswith("FIXED"), clean
    # Simulate a torch that segfaults on the case: the child dies, the script says BUG and exits 1.
    anchor = "    (verdict,) = evaluate()\n"
    assert anchor in path.read_text()
    crash = "    import os, signal; os.kill(os.getpid(), signal.SIGSEGV)\n"
    path.write_text(path.read_text().replace(anchor, crash + anchor))
    crashed = run_repro(path)
    assert crashed.exit_code == 1 and crashed.verdict == \
        "BUG: the case killed the process with SIGSEGV (found as: killed:SIGSEGV:mm)", crashed


def test_render_refuses_an_empty_violation_list() -> None:
    with pytest.raises(ReproError):
        render_repro(small_case(), [])


@affected
def test_pytest_repro_dir_writes_the_script_for_a_failing_property(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzz.run import session
    from tests.checking import assert_case_passes

    request = types.SimpleNamespace(config=types.SimpleNamespace(getoption=lambda name: str(tmp_path)),
                                    node=types.SimpleNamespace(user_properties=[]))
    fuzz_session = session.FuzzSession(registry=())  # as if the bug were not registered

    @settings(max_examples=1, database=None, phases=[Phase.generate], deadline=None)
    @given(st.just(offset_weight_case("CPP")))
    def prop(case: Case) -> None:
        assert_case_passes(case, fuzz_session, request)

    with pytest.raises(pytest.fail.Exception):
        prop()
    (name, path), = set(request.node.user_properties)  # Hypothesis replays the failure: same script
    assert name == "repro" and Path(path).parent == tmp_path
    assert "('numerics', 'exact-mismatch:addmm:float32')" in Path(path).read_text()


def test_a_repro_says_fixed_only_when_nothing_fails(tmp_path: Path) -> None:
    gone = Violation("numerics", "wrong result", "exact-mismatch:mm:float32", "mm: 3 element(s) differ")
    path = Path(write_repro(small_case(), [gone], tmp_path))  # ATen mm on this case: right
    plant(path, "from oracles.model import Violation",
          "verdict.violations.append(Violation('layout_spec', 'unsound', 'planted:mm', 'planted'))")
    result = run_repro(path)
    assert result.exit_code == REPRO_DIFFERENT, result
    assert result.verdict.startswith("FAILS DIFFERENTLY") and "layout_spec planted:mm" in result.verdict


def _rows_case(rows: int) -> Case:
    shapes = [(rows, 8), (8, 4)]
    return Case.make(op="mm", device="cpu", value_mode="exact_int", seed=3,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
                     inputs=tuple(TensorSpec(s, contiguous_strides(s), 0, "float32") for s in shapes))


def test_pytest_repro_dir_writes_one_script_for_the_shrunk_case(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzz.run.session import Verdict
    from tests import checking

    class RowsBug:
        """A session whose planted bug shows on every case of 5 rows or more (nothing compiles)."""

        def evaluate(self, case: Case) -> Verdict:
            rows = case.inputs[0].shape[0]
            found = [Violation("numerics", "wrong result", "planted:mm", f"{rows} rows")] if rows >= 5 else []
            return Verdict(Observation(case=case), found, [])

    monkeypatch.setattr(checking, "error_ratio", lambda observation: 0.0)
    request = types.SimpleNamespace(config=types.SimpleNamespace(getoption=lambda name: str(tmp_path)),
                                    node=types.SimpleNamespace(user_properties=[]))

    @settings(max_examples=100, database=None, deadline=None, phases=list(Phase))  # shrinking, as in campaigns
    @given(st.integers(1, 300).map(_rows_case))
    def prop(case: Case) -> None:
        checking.assert_case_passes(case, RowsBug(), request)

    with pytest.raises(pytest.fail.Exception):
        prop()
    scripts = list(tmp_path.glob("*.py"))
    assert len(scripts) == 1, [s.name for s in scripts]  # not one per failing shrink step
    assert '"shape": [5, 8]' in scripts[0].read_text()  # the shrunk case
