"""`python -m fuzz bench --time-to-find` end to end for one cheap planted bug: a real naive loop
(its workload one case the bug shows on) and a real campaign with the bug planted in its workers;
both find it within the cap, and the table says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fuzz import cli
from fuzz.tools import time_to_find
from strategies.case import Case, TensorSpec, contiguous_strides


@pytest.mark.campaign
def test_both_sides_find_a_planted_extern_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    shapes = ((24, 40), (40, 8))
    case = Case.make(op="mm", inputs=tuple(TensorSpec(s, contiguous_strides(s), 0, "float32") for s in shapes),
                     device="cpu", value_mode="exact_int", seed=7,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})
    monkeypatch.setattr(time_to_find, "workload", lambda device, seed, n: [case.to_json()])
    argv = ["bench", "--time-to-find", "--plants", "mm-extern-hashed", "--budget", "100s", "--device", "cpu",
            "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("| mm-extern-hashed |"))
    assert re.fullmatch(r"\| mm-extern-hashed \| \d+s \(1 cases\) \| \d+s \| [\d.]+x \|", row), out
    assert re.fullmatch(r"time to find: suite median \d+s \(worst \d+s\), naive median \d+s \(worst \d+s\): [\d.]+x",
                        out[-1]), out
    found = (tmp_path / "mm-extern-hashed" / "findings").iterdir()
    assert any(p.name.startswith("src_hash-extern-hash") for p in found)
    with pytest.raises(SystemExit) as refused:  # the plant's campaign directory is used: refused
        cli.main(argv)
    assert refused.value.code == 2 and "starts clean" in capsys.readouterr().err
