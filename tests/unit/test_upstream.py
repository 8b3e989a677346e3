"""Upstream issue drafts: findings group by triaged root cause (else by symptom and trigger), each
group gets one draft with the plain repro, the observed traceback, the flips, the suspected
location, the measured versions and the environment; non-bugs and internal-only findings are listed,
not drafted; malformed records and unwritable directories never end in a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fuzz.bugs.issue_drafts import write_drafts
from fuzz.bugs.known_bugs import KNOWN_BUGS
from fuzz.bugs.root_causes import ROOT_CAUSES, group_findings, trigger
from fuzz.cli import main
from fuzz.store.findings import Finding, FindingsStore, record_from_violation

MM = {"op": "mm", "device": "cpu", "config": {"max_autotune": True},
      "inputs": [{"shape": [4, 8], "stride": [8, 1], "offset": 0, "dtype": "float32"},
                 {"shape": [8, 5], "stride": [5, 1], "offset": 0, "dtype": "float32"}]}
LOG = """torch 2.13.0+cpu | CPU capability AVX2
Traceback (most recent call last):
  File "x_plain.py", line 23, in <module>
    compiled(*make_inputs())
  File "/site-packages/torch/_inductor/kernel/mm.py", line 675, in tuned_addmm
    inp.get_stride()[0] == 0
torch._inductor.exc.InductorError: LoweringException: IndexError: list index out of range
"""


def finding(signature: str, oracle: str = "crash", bug: str | None = None, case: dict[str, Any] | None = None,
            plain: Any = None, host: str = "h1") -> Finding:
    violation = {"oracle": oracle, "severity": "crash", "signature": signature, "message": f"mm: {signature}"}
    known = {"name": bug, "tracking": f"tracking of {bug}"} if bug else None
    f = record_from_violation(violation, case or MM, known_bug=known, violations=[violation],
                              versions={"torch": "2.13.0+cpu", "host": host}, origin={"host": host})
    f.repro = None if plain is None else {"path": "repros/x.py", "plain": plain}
    return f


def test_every_registered_bug_has_exactly_one_root_cause() -> None:
    covered = [name for cause in ROOT_CAUSES for name in cause.bugs]
    assert sorted(covered) == sorted(b.name for b in KNOWN_BUGS)


def test_known_bugs_group_by_cause_and_new_findings_by_symptom_and_trigger() -> None:
    empty_k = {**MM, "inputs": [{**MM["inputs"][0], "shape": [4, 0]}, {**MM["inputs"][1], "shape": [0, 5]}]}
    groups = group_findings([
        finding("crash:TypeError:codegen/cpp_gemm_template.py:get_cache_blocking", bug="cpp-gemm-frozen-k0-crash"),
        finding("crash:AssertionError:ir.py:x", bug="cpp-bmm-empty-dim-crash"),
        finding("crash:KeyError:kernel/mm.py:tuned_mm", host="h1"),
        finding("crash:KeyError:kernel/mm.py:tuned_mm", case=empty_k, host="h2"),
        finding("exact-mismatch:mm:float32@CppTemplateCaller", oracle="numerics"),
        finding("exact-mismatch:bmm:bfloat16@CppTemplateCaller", oracle="numerics"),
    ])
    by_key = {g.key: sorted(f.signature for f in g.findings) for g in groups}
    assert len(by_key["cpp-template-empty-dims"]) == 2  # two known bugs, one cause
    assert by_key["numerics-exact-mismatch-cpptemplatecaller"] == [
        "exact-mismatch:bmm:bfloat16@CppTemplateCaller", "exact-mismatch:mm:float32@CppTemplateCaller"]
    keyerror = [k for k in by_key if "keyerror" in k]
    assert len(keyerror) == 2  # same frame, another trigger (K == 0): kept apart


def test_trigger_reads_the_plain_repro_form_first() -> None:
    plain = {"form": {"frozen": True, "patch": {"max_autotune_gemm_backends": "CPP"}}}
    assert trigger(finding("crash:X:y", plain=plain)) == ("frozen weights", "backends CPP")


def _exported(tmp_path: Path, findings: list[Finding]) -> Path:
    store = FindingsStore(tmp_path)
    for f in findings:
        store.add(f)
    (tmp_path / "repros").mkdir(exist_ok=True)
    (tmp_path / "repros" / "x_plain.py").write_text('import torch\nprint("torch")\n')
    (tmp_path / "repros" / "x_plain.log").write_text(LOG)
    (tmp_path / "repros" / "environment.txt").write_text("PyTorch version: 2.13.0+cpu\nModel name: AMD EPYC\n")
    return tmp_path


PLAIN = {"path": "repros/x_plain.py", "log": "repros/x_plain.log", "environment": "repros/environment.txt",
         "verified": True, "reproduced": True, "confirmed": True, "torch": "2.13.0+cpu", "check": "raises",
         "outcome": {"status": "raised", "type": "IndexError", "message": "list index out of range",
                     "frame": "kernel/mm.py:tuned_addmm",
                     "location": "/site-packages/torch/_inductor/kernel/mm.py:675"},
         "flips": [{"change": "`torch.compile` without `mode=\"max-autotune\"`", "status": "passed"},
                   {"change": "`max_autotune_gemm_backends='ATEN'`", "status": "raised", "type": "IndexError",
                    "frame": "kernel/mm.py:tuned_addmm"}]}


def test_draft_holds_what_a_maintainer_asks_for(tmp_path: Path) -> None:
    d = _exported(tmp_path, [finding("crash:IndexError:kernel/mm.py:tuned_addmm", bug="addmm-scalar-bias-indexerror",
                                     plain=PLAIN)])
    paths = write_drafts(list(FindingsStore(d)), tmp_path / "out", [d], print)
    draft = (tmp_path / "out" / "addmm-scalar-bias.md").read_text()
    assert draft.startswith("# [inductor] max-autotune addmm with a 0-d bias: IndexError in tuned_addmm")
    assert "raises `IndexError: list index out of range` (every run)" in draft
    assert '```python\nimport torch\nprint("torch")\n```' in draft
    assert ('**Observed** (torch 2.13.0+cpu):\n\n```\n'
            '  File "/site-packages/torch/_inductor/kernel/mm.py", line 675') in draft
    assert '- `torch.compile` without `mode="max-autotune"`: **passes**' in draft
    assert "- `max_autotune_gemm_backends='ATEN'`: still fails the same way" in draft
    assert "`torch/_inductor/kernel/mm.py:675` in `tuned_addmm`" in draft
    assert "the plain repro fails on torch 2.13.0+cpu" in draft and "registry has seen it fail on 2.13" in draft
    assert "Model name: AMD EPYC" in draft
    assert [p.name for p in paths] == ["addmm-scalar-bias.md", "index.md"]


def test_a_bug_eager_shares_is_called_an_aten_bug(tmp_path: Path) -> None:
    plain = {**PLAIN, "check": "exact",
             "outcome": {"status": "mismatch", "type": "AssertionError", "message": "2 of 4"},
             "flips": [{"change": "eagerly (no `torch.compile`)", "status": "mismatch", "type": "AssertionError"}]}
    write_drafts([finding("exact-mismatch:int_mm:int8", oracle="numerics", plain=plain)], tmp_path, [tmp_path], print)
    draft = next(tmp_path.glob("numerics-*.md")).read_text()
    assert "- eagerly (no `torch.compile`): still fails the same way\n  (eager gives the same wrong values" in draft


def test_non_bugs_and_internal_findings_are_listed_not_drafted(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzz.bugs import root_causes

    not_a_bug = root_causes.RootCause("view-strides", "a view's strides", ("view-strides",), "graph.py",
                                   not_a_bug="inductor promises only the stride *order* of view outputs")
    monkeypatch.setattr(root_causes, "ROOT_CAUSES", (*root_causes.ROOT_CAUSES, not_a_bug))
    layout = {"unsupported": "layout_spec / fixed-when-allowed:bmm is about inductor internals"}
    findings = [finding("output-strides:matmul", oracle="numerics", bug="view-strides"),
                finding("fixed-when-allowed:bmm", oracle="layout_spec", plain=layout)]
    paths = write_drafts(findings, tmp_path, [tmp_path], print)
    index = (tmp_path / "index.md").read_text()
    assert [p.name for p in paths] == ["index.md"]
    assert "not worth filing as is: inductor promises only the stride *order*" in index
    assert "not drafted" in index and "is about inductor internals" in index


def test_malformed_records_never_end_in_a_traceback(tmp_path: Path) -> None:
    warnings: list[str] = []
    findings = [finding("crash:IndexError:kernel/mm.py:tuned_addmm", plain={"outcome": "garbage", "flips": [3]}),
                finding("crash:KeyError:kernel/mm.py:tuned_mm", case={"op": "mm", "inputs": "bad"}, plain=[1])]
    findings[1].versions = "garbage"
    paths = write_drafts(findings, tmp_path, [tmp_path], warnings.append)
    assert len(paths) == 3 and warnings == []
    assert "no plain repro was exported" in paths[0].read_text()


def test_cli_writes_drafts_and_an_unwritable_directory_is_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    d = _exported(tmp_path / "c", [finding("crash:IndexError:kernel/mm.py:tuned_addmm", plain=PLAIN)])
    (d / "findings" / "broken.json").write_text("{")
    assert main(["report", str(d), "--upstream", str(tmp_path / "drafts")]) == 0
    err = capsys.readouterr().err
    assert "skipping corrupt finding" in err and "1 issue draft(s) and index.md" in err
    assert json.loads(next((d / "findings").glob("crash*.json")).read_text())["repro"]["plain"] == PLAIN  # untouched
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(d), "--upstream", str(blocker / "drafts")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 2 and err[-1].startswith("python -m fuzz: error: cannot write")


def test_fixed_findings_are_not_drafted_and_long_output_is_cut(tmp_path: Path) -> None:
    fixed = finding("nonfinite:mm:float32", oracle="numerics", plain={**PLAIN, "reproduced": False, "confirmed": False})
    fixed.repro = {**fixed.repro, "exit_code": 0, "torch": "2.13.0+cpu"}
    dropped = finding("dropped:bmm@CppTemplateCaller:benchmark", oracle="template_presence", plain=PLAIN)
    dropped.repro = {**dropped.repro, "exit_code": 1}
    d = _exported(tmp_path, [fixed, dropped])
    (d / "repros" / "x_plain.log").write_text("".join(f"error line {i}\n" for i in range(3000)) + LOG)
    paths = write_drafts(list(FindingsStore(d)), tmp_path / "out", [d], print)
    index = (tmp_path / "out" / "index.md").read_text()
    assert "its repros no longer reproduce (FIXED on torch 2.13.0+cpu)" in index and len(paths) == 2
    draft = paths[0].read_text()
    assert draft.startswith("# [inductor] torch.compile of mm: the CppTemplateCaller choice fails to run while "
                            "autotuning (dropped silently; alone it raises)")
    assert "earlier lines cut]" in draft and "error line 10\n" not in draft and len(draft.splitlines()) < 400


def test_a_process_death_is_shown_as_such(tmp_path: Path) -> None:
    death = {**PLAIN, "check": "raises", "outcome": {"status": "killed", "type": "SIGFPE"}}
    d = _exported(tmp_path, [finding("killed:SIGFPE:addmm", oracle="process", plain=death)])
    draft = write_drafts(list(FindingsStore(d)), tmp_path / "out", [d], print)[0].read_text()
    assert "[the process was killed by SIGFPE]\n```" in draft and "gdb -batch -ex run -ex bt" in draft
    assert "the wrong values come from" not in draft


def test_a_compile_error_is_observed_through_its_error_lines(tmp_path: Path) -> None:
    from fuzz.bugs.issue_drafts import _observed

    log = ('Traceback (most recent call last):\n  File "repro.py", line 3, in <module>\n'
           "torch._inductor.exc.CppCompileError: C++ compile error\n"
           + "".join(f"vec.h:{i}: warning: overflow\n" for i in range(500))
           + "k.cpp:282:83: error: 'ks2' was not declared in this scope\n" + "".join(f"note {i}\n" for i in range(500)))
    seen = _observed(log)
    assert "k.cpp:282:83: error: 'ks2' was not declared in this scope" in seen and "CppCompileError" in seen
    assert len(seen.splitlines()) < 20
