"""The project around the code: packaging (an installed suite, not only a checkout, has its
coverage config and a console script), pytest settings, the nightly workflow, the README."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
import zipfile
from pathlib import Path

import pytest
import tomllib

from fuzz.tools.coverage_report import CONFIG, tracer_core

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "README.md").read_text()


def test_dependencies_and_entry_points() -> None:
    project = PYPROJECT["project"]
    coverage = next(d for d in project["optional-dependencies"]["test"] if d.startswith("coverage"))
    assert coverage == "coverage>=7.10"  # the first release with patch = ["subprocess"]
    assert any(d.startswith("redis") for d in project["optional-dependencies"]["redis"])
    assert project["scripts"] == {"mm-autotune-fuzz": "fuzz.cli:main"}


NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)", re.IGNORECASE)
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)")


def unexplained_suppressions(source: str) -> list[str]:
    """Each `# noqa` without its rule codes and ` - reason`, and each `# type: ignore` without its
    error codes and a `  # reason` comment, in `source` (comments only: strings do not count)."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        if (m := NOQA.search(tok.string)) and not re.fullmatch(r": [A-Z]+\d+(, [A-Z]+\d+)* - \S.*", m["rest"]):
            out.append(f"{tok.start[0]}: {tok.string}")
        if (m := TYPE_IGNORE.search(tok.string)) and not re.fullmatch(r"\[[a-z-]+(,[a-z-]+)*\]  # \S.*", m["rest"]):
            out.append(f"{tok.start[0]}: {tok.string}")
    return out


def test_every_noqa_and_type_ignore_says_what_and_why() -> None:
    files = [ROOT / "conftest.py", *sorted(p for d in ("fuzz", "oracles", "strategies", "tests", "repros")
                                           for p in (ROOT / d).rglob("*.py"))]
    offenders = {str(p.relative_to(ROOT)): found for p in files
                 if (found := unexplained_suppressions(p.read_text(encoding="utf-8")))}
    assert offenders == {}
    for planted in ("x = 1  # noqa", "x = 1  # noqa: E501", "x = 1  # type: ignore",
                    "x = 1  # type: ignore[assignment]", "x = 1  # type: ignore[assignment] - why"):
        assert unexplained_suppressions(planted + "\n"), planted
    assert not unexplained_suppressions('x = "# noqa"  # noqa: E501 - a URL\ny = 1  # type: ignore[misc]  # why\n')


def test_ci_lints_and_type_checks_before_the_tests() -> None:
    test_extra = PYPROJECT["project"]["optional-dependencies"]["test"]
    assert {d for d in test_extra if d.startswith(("ruff", "mypy"))} == {"ruff==0.17.6", "mypy==2.4.1"}  # pinned
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("python -m ruff check .") < ci.index("python -m mypy\n") < ci.index("python -m pytest")


@pytest.mark.slow
def test_the_wheel_carries_the_coverage_config_and_the_console_script(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, timeout=300, capture_output=True)
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "fuzz/tools/coverage.toml" in names and CONFIG == ROOT / "fuzz" / "tools" / "coverage.toml"
    assert "mm-autotune-fuzz = fuzz.cli:main" in entry_points


def test_coverage_uses_sys_monitoring_only_where_it_measures_branches() -> None:
    assert tracer_core((3, 12), branch=True) is None  # would warn and fall back on 3.12 and 3.13
    assert tracer_core((3, 13), branch=True) is None
    assert tracer_core((3, 14), branch=True) == "sysmon"
    assert tomllib.loads(CONFIG.read_text())["tool"]["coverage"]["run"]["branch"] is True


def test_pytest_keeps_its_cache_and_knows_its_markers() -> None:
    options = PYPROJECT["tool"]["pytest"]["ini_options"]
    assert "cacheprovider" not in options.get("addopts", "")  # --lf, --ff, --sw work
    assert "--strict-markers" in options["addopts"]
    assert {m.split(":")[0] for m in options["markers"]} == {"slow", "campaign", "gpu", "reject_ceiling"}


def test_the_gpu_marker_selects_the_gpu_tests() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "-p", "no:randomly"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {i.split("::")[0] for i in ids} >= {"tests/engine/test_campaign.py", "tests/engine/test_engine_speedups.py",
                                               "tests/planted/test_planted_edge_bugs.py"}, ids


def test_the_longest_tests_are_handed_out_first() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                           "tests/unit/test_cli.py", "tests/engine/test_campaign.py"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    modules = [line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line]
    assert proc.returncode == 0 and modules, proc.stdout + proc.stderr
    first_unit = modules.index("tests/unit/test_cli.py")  # collected first, but has no campaign test
    assert modules[first_unit - 1] == "tests/engine/test_campaign.py" and modules[0] == modules[first_unit - 1]


def test_xdist_workers_share_the_cores_and_one_left_alone_has_two() -> None:
    from fuzz.engine.machine import core_window

    sixteen = list(range(16))
    windows = [core_window(i, 16, sixteen) for i in range(16)]
    assert all(len(w) == 2 for w in windows)
    assert sorted(c for w in windows for c in w) == sorted(sixteen * 2)  # every core serves two workers
    assert core_window(0, 4, sixteen) == list(range(8))
    assert core_window(1, 2, [0, 1]) == [0, 1] and core_window(0, 1, sixteen) == sixteen


def test_parameter_ids_read_well() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                           "tests/unit/test_cli.py", "tests/engine/test_campaign.py",
                           "tests/engine/test_shared_store.py"],
                          check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids and proc.returncode == 0, proc.stdout + proc.stderr
    bad = [i for i in ids if not re.fullmatch(r"[\w/.:-]+(\[[\w.-]+\])?", i)]
    assert bad == []


def workflow() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / ".github" / "workflows" / "nightly-gpu.yml").read_text())


def test_the_nightly_workflow() -> None:
    wf = workflow()
    assert wf["permissions"] == {"contents": "read"}
    torch = re.search(r"pip install (torch==[\d.]+)", README)
    assert torch and wf["env"]["TORCH_SPEC"] == torch.group(1)  # the version the README promises
    campaign, merge = wf["jobs"]["campaign"], wf["jobs"]["merge"]
    assert "host" in campaign["strategy"]["matrix"] and merge["needs"] == "campaign"
    check = next(s["run"] for s in wf["jobs"]["plan"]["steps"] if "check-budget" in s.get("run", ""))
    assert check.split()[-1] == str(campaign["timeout-minutes"])
    junit = [s for s in merge["steps"] if "junit" in s.get("uses", "")]
    assert junit and junit[0]["with"]["report_paths"] == "merged/report.xml"
    assert merge["permissions"]["checks"] == "write"
    assert "--seed" in next(s["run"] for s in campaign["steps"] if "fuzz run" in s.get("run", ""))


@pytest.mark.parametrize(("budget", "status"), [("3h", 0), ("5h", 1), ("five hours", 2)])
def test_the_budget_check(budget: str, status: int) -> None:
    proc = subprocess.run([sys.executable, ".ci/check-budget", budget, "330"], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == status and len((proc.stdout + proc.stderr).strip().splitlines()) == 1


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, title
    return match.group(1)


def test_the_readme() -> None:
    quick = section("Quick start (fresh machine)")
    assert quick.count("```bash") == 2
    assert "--out findings" not in README  # findings/findings/
    oracles = section("What the oracles check")
    intro = oracles.index("are pure functions of that `Observation`:")
    assert oracles[intro:].split("\n", 2)[2].lstrip().startswith("| oracle |")  # the table follows its intro
    glossary = section("Words used in reports")
    for word in ("signature", "known", "sightings", "rejected", "STILL FAILS", "FAILS DIFFERENTLY",
                 "CANNOT CHECK", "FIXED", "minimized"):
        assert f"**{word}**" in glossary, word
    hosts = section("Many hosts")
    assert "--store redis://" in hosts and "redis-server" in hosts and "report redis://" in hosts
    assert "Example output" in README
