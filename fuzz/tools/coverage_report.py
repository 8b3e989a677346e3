"""Coverage of inductor's mm path reached by a campaign (`run --coverage`): starting it in a
worker, and combining the workers' data into a summary for the reports."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

CONFIG = Path(__file__).resolve().with_name("coverage.toml")
"""The coverage settings naming inductor's mm path (package data: found by installed copies too)."""


def tracer_core(version: tuple[int, ...], branch: bool) -> str | None:
    """COVERAGE_CORE to ask for: sys.monitoring ("sysmon", much cheaper) where it measures what
    we need (branches need Python 3.14), else coverage's default."""
    return "sysmon" if version >= ((3, 14) if branch else (3, 12)) else None


def start_coverage(data_dir: str) -> Any:
    """Start measuring this process into `data_dir` (one data file per process)."""
    core = tracer_core(sys.version_info[:2], branch=True)
    if core:
        os.environ.setdefault("COVERAGE_CORE", core)
    import coverage

    cov = coverage.Coverage(data_file=str(Path(data_dir) / ".coverage"), data_suffix=f"{os.getpid()}",
                            config_file=str(CONFIG))
    cov.start()
    return cov


def coverage_summary(data_dir: Path) -> dict[str, Any] | None:
    """Combine the workers' coverage data of the mm path; None when nothing was recorded."""
    import coverage

    parts = sorted(str(p) for p in Path(data_dir).glob(".coverage.*"))
    if not parts:
        return None
    combined = Path(data_dir) / "combined.coverage"
    combined.unlink(missing_ok=True)
    cov = coverage.Coverage(data_file=str(combined), config_file=str(CONFIG))
    cov.combine(parts, keep=True)
    cov.save()
    files: list[dict[str, Any]] = []
    for name in sorted(cov.get_data().measured_files()):
        _, statements, _, missing, _ = cov.analysis2(name)
        covered = len(statements) - len(missing)
        files.append({"file": name.split("site-packages/")[-1], "statements": len(statements), "covered": covered,
                      "percent": round(100 * covered / len(statements), 1) if statements else 0.0})
    total, hit = sum(f["statements"] for f in files), sum(f["covered"] for f in files)
    return {"files": files, "statements": total, "covered": hit,
            "percent": round(100 * hit / total, 1) if total else 0.0}
