"""Plain-torch repros: the rendered inputs are the fuzzer's (bit for bit, layouts and aliasing
included), the script needs only torch and stays short, the search keeps the smallest form that
fails the same way and records the single changes that flip it, and a real inductor bug's repro
fails standalone with its own traceback."""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings

from fuzz.bugs.known_bugs import KNOWN_BUGS
from fuzz.export.plain_form import Form, PlainReproError, check_kind
from fuzz.export.plain_render import render
from fuzz.export.plain_repro import export_plain, write_plain_repro
from fuzz.export.plain_search import Outcome, family_backend, more_flips, same_failure, search
from fuzz.run.values import materialize
from fuzz.store.findings import FindingsStore, record_from_violation
from strategies.case import Case, TensorSpec
from strategies.cases import cases
from tests.cases import CRASH, affected_by, scalar_bias_case
from tests.checking import known_aten_bug

EXACT = {"oracle": "numerics", "severity": "wrong result", "signature": "exact-mismatch:mm:float32",
         "message": "mm call0/out0 float32: 3 element(s) differ"}
SCALAR_BIAS = next(b for b in KNOWN_BUGS if b.name == "addmm-scalar-bias-indexerror")


def _up_to_compile(script: str) -> dict[str, Any]:
    """The names a rendered plain repro defines before its compile (the program, the inputs, the check)."""
    namespace: dict[str, Any] = {}
    exec(compile(script.split("\ncompiled = ")[0], "<plain>", "exec"), namespace)  # noqa: S102 - the script we rendered
    return namespace


def _program_args(case: Case, namespace: dict[str, Any]) -> list[torch.Tensor]:
    """Fresh arguments of a rendered program (a consumer may mutate one): a weight form's program
    takes the weights its module holds."""
    inputs = namespace["make_inputs"]()
    return [inputs[0], *namespace["weights"]] if case.weight_form != "plain" else inputs


def _run_make_inputs(case: Case, seeded: bool, second: bool = False) -> list[torch.Tensor]:
    namespace = _up_to_compile(render(case, EXACT if seeded else CRASH, Form.make(None, {}, False, seeded)))
    return namespace["make_second_inputs" if second else "make_inputs"]()


def _aliasing(ts: list[torch.Tensor]) -> list[list[bool]]:
    return [[a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() for b in ts] for a in ts]


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """Every byte of the storage `t` views (NaN padding included): torch.equal on these is bit for bit."""
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())


@settings(max_examples=150, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(device="cpu"))
def test_inputs_are_the_fuzzers_values_and_layouts(case: Case) -> None:
    """Seeded inputs equal fuzz.run.values' bit for bit, whole storages (NaN outside the views, NaN and
    infinities inside them) included; plain random ones keep every layout and alias."""
    for second in (False, True) if case.second_call else (False,):
        want = materialize(case, case.second_call if second else None)[:len(case.inputs)]  # an int8 scale: the Model's
        for seeded in (True, False):
            got = _run_make_inputs(case, seeded, second)
            assert [(t.shape, t.stride(), t.storage_offset(), t.dtype) for t in got] == \
                [(t.shape, t.stride(), t.storage_offset(), t.dtype) for t in want]
            assert _aliasing(got) == _aliasing(want)
            if seeded:
                assert all(torch.equal(_storage_bytes(g), _storage_bytes(w)) for g, w in zip(got, want, strict=True))


PAGE = 66 + 6
"""A printed page (11 inches at 6 lines an inch): a repro a developer reads without scrolling back;
and a float64 `reference` where the program cannot run on float64 (an upcast prologue's x0.float())."""
BOUND = {"oracle": "numerics", "severity": "wrong result", "signature": "tolerance:mm:float32", "message": "m"}
NONFINITE = {"oracle": "numerics", "severity": "wrong result", "signature": "nonfinite:mm:float32", "message": "m"}


UPCAST = Case.from_json({  # its float64 check once ran x0.float() on float64 weights (a dtype error)
    "config": {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP"}, "device": "cpu", "op": "mm",
    "prologue": ["upcast_float16", "neg"], "consumers": ["tanh"], "seed": 1, "inputs": [
        {"dtype": "float32", "shape": [8, 16], "stride": [16, 1], "offset": 0},
        {"dtype": "float32", "shape": [16, 4], "stride": [4, 1], "offset": 0}]})


@settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(device="cpu"))
@example(UPCAST)
def test_the_value_checks_accept_eagers_own_result_and_fit_a_page(case: Case) -> None:
    """A check that failed eager too would call any compiled result wrong (negative alpha once did)."""
    for violation in (BOUND, NONFINITE, EXACT, CRASH):
        script = render(case, violation, Form.make("max-autotune", case.config_dict, case.frozen_weights))
        assert len(script.splitlines()) - _warm_cache_lines(script) - _training_lines(script) <= PAGE, script
    if case.inputs[0].dtype.startswith(("float", "bfloat")) and case.op not in ("int_mm", "scaled_mm") \
            and known_aten_bug(case) is None:  # where eager is known wrong, the check must fail it
        for violation in (BOUND, NONFINITE):
            namespace = _up_to_compile(render(case, violation, Form.make(None, {}, False)))
            with contextlib.nullcontext() if case.backward else torch.no_grad():  # a training case's own step
                try:
                    args = _program_args(case, namespace)
                    eager = namespace["train"](namespace["program"], args, namespace["SEED"]) if case.backward \
                        else namespace["program"](*args)
                except (RuntimeError, IndexError):
                    return  # eager rejects the case (e.g. a transpose after a reduction): the suite skips it too
                namespace["check"](eager, _program_args(case, namespace))


def _warm_cache_lines(script: str) -> int:
    """The lines a warm-cache case's script spends on its second compile from the cache (and a
    frozen case's on the second model's inputs): the page holds the rest."""
    lines = script.splitlines()
    fills = [i for i, ln in enumerate(lines) if "# fills inductor's FX graph cache" in ln]
    while fills and ("mark_dynamic(args" in lines[fills[0] - 1] or "args = make_inputs()" in lines[fills[0] - 1]):
        fills[0] -= 1  # the filling call's arguments, marked dynamic
    loads = [i for i, ln in enumerate(lines) if "# this one loads the graph from that cache" in ln]
    block = loads[0] - fills[0] + 1 if fills and loads else 0
    if "def make_other_inputs():" in lines:
        start = lines.index("def make_other_inputs():")
        block += lines.index("", start) - start + 1
    return block


def test_a_warm_cache_repro_fills_the_cache_with_the_graph_it_loads() -> None:
    """Both compiles mark the same dims dynamic: a static first graph has another cache key, and the
    second compile, marked dynamic, missed it (a 10-minute campaign's plain repro 'did NOT fail')."""
    case = Case.from_json({
        "config": {"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP"}, "device": "cpu", "op": "mm",
        "frozen_weights": True, "warm_cache": True, "mark_dynamic": [[0, 0]], "inputs": [
            {"dtype": "float16", "shape": [56, 24], "stride": [24, 1], "offset": 0},
            {"dtype": "float16", "shape": [24, 41], "stride": [41, 1], "offset": 0}]})
    lines = render(case, BOUND, Form.make("max-autotune", {}, True)).splitlines()
    fill = next(i for i, ln in enumerate(lines) if "# fills inductor's FX graph cache" in ln)
    load = next(i for i, ln in enumerate(lines) if "# this one loads the graph from that cache" in ln)
    marks = [ln.strip() for ln in lines if "mark_dynamic" in ln]
    assert marks == ["torch._dynamo.mark_dynamic(args, 0)"] * 2
    assert "mark_dynamic" in lines[fill - 1] and "mark_dynamic" in lines[load + 2]


def _training_lines(script: str) -> int:
    """The lines a training case's script spends on its training step (`train`): the page holds the rest."""
    lines = script.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("SEED = ")), None)
    return 0 if start is None else lines.index("", start + 3) - start + 1


def test_the_value_checks_bound_the_projections_step_by_its_own_magnitude() -> None:
    """The projections step's -x2 bias, run on |inputs|, is no magnitude: with K = 1 the product is
    smaller than the bias and eager failed its own bound check until the magnitude program took |-x2|."""
    case = Case.make(op="addmm", device="cpu", value_mode="normal", seed=3, params={"alpha": 1.0}, config={},
                     inputs=(TensorSpec((64, 1), (1, 1), 0, "float32"), TensorSpec((1, 16), (16, 1), 0, "float32"),
                             TensorSpec((16,), (1,), 0, "float32")), consumers=("projections",))
    for violation in (BOUND, NONFINITE):
        namespace = _up_to_compile(render(case, violation, Form.make(None, {}, False)))
        assert "def magnitude(" in render(case, violation, Form.make(None, {}, False))
        with torch.no_grad():
            namespace["check"](namespace["program"](*_program_args(case, namespace)), _program_args(case, namespace))


def test_the_value_checks_leave_out_only_a_known_aten_bugs_region() -> None:
    """The case the H200's CPU drew (bf16 baddbmm, alpha = beta = 0: ATen leaves the output
    uninitialized on oneDNN hosts, eager too) is the registered bug's; with alpha = 1 it is checked."""
    def baddbmm(alpha: float) -> Case:
        return Case.make(op="baddbmm", device="cpu", value_mode="normal", seed=291,
                         params={"alpha": alpha, "beta": 0.0},
                         config={}, inputs=(TensorSpec((9, 128, 15), (1920, 15, 1), 17, "bfloat16"),
                                            TensorSpec((9, 15, 128), (1920, 128, 1), 11, "bfloat16"),
                                            TensorSpec((), (), 0, "bfloat16")))

    bug = known_aten_bug(baddbmm(0.0))
    assert bug is not None and bug.name == "aten-cpu-baddbmm-zero-alpha-uninitialized"
    assert known_aten_bug(baddbmm(1.0)) is None


def test_the_nonfinite_check_wants_nan_exactly_where_float64_has_it() -> None:
    case = Case.make(op="addmm", device="cpu", value_mode="nonfinite", seed=4, params={"alpha": 1.0, "beta": 0.0},
                     config={}, inputs=(TensorSpec((4, 8), (8, 1), 0, "float32"),
                                        TensorSpec((8, 3), (3, 1), 0, "float32"),
                                        TensorSpec((3,), (1,), 0, "float32")))
    namespace = _up_to_compile(render(case, NONFINITE, Form.make(None, {}, False)))
    args = namespace["make_inputs"]()
    assert not args[0].isfinite().all() and not args[2].isfinite().all()  # NaN/inf in x and in the ignored bias
    (eager,) = namespace["program"](*args)
    namespace["check"]((eager,), args)
    leaked = eager.clone()
    leaked[eager.isfinite()] = float("nan")  # a kernel that reads the bias although beta == 0
    with pytest.raises(AssertionError, match="elements have NaN/inf"):
        namespace["check"]((leaked,), args)


def test_script_needs_only_torch_and_fits_a_page() -> None:
    case = Case.make(op="baddbmm", device="cpu", value_mode="exact_int", frozen_weights=True, dynamic=True,
                     consumers=("relu", "mutate_input"), mark_dynamic=((0, 1),), params={"alpha": 2.0, "beta": 0.5},
                     config={"max_autotune": True, "max_autotune_gemm_backends": "CPP"},
                     inputs=(TensorSpec((2, 4, 8), (32, 1, 4), 0, "float32"),
                             TensorSpec((2, 8, 5), (0, 5, 1), 0, "float32"), TensorSpec((5,), (1,), 3, "float32")),
                     second_call=(TensorSpec((2, 6, 8), (48, 8, 1), 0, "float32"),
                                  TensorSpec((2, 8, 5), (40, 5, 1), 0, "float32"),
                                  TensorSpec((5,), (1,), 0, "float32")))
    script = render(case, EXACT, Form.make("max-autotune", {"max_autotune_gemm_backends": "CPP"}, True))
    tree = ast.parse(script)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"torch"} and not any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))
    assert len(script.splitlines()) <= PAGE, script
    assert 'torch.compile(Model(*weights), mode="max-autotune", dynamic=True)' in script
    assert "torch._dynamo.mark_dynamic(args, 1)" in script and "make_second_inputs" in script
    assert "'max_autotune_gemm_backends': 'CPP', 'freezing': True" in script


def test_only_violations_a_program_can_show_get_a_plain_repro() -> None:
    assert check_kind(CRASH) == "raises" and check_kind(EXACT) == "exact" and check_kind(NONFINITE) == "nonfinite"
    assert check_kind({"oracle": "numerics", "signature": "choice-crash:mm@CppTemplateCaller:CppCompileError"}) == \
        "raises"
    dropped = {"oracle": "template_presence", "signature": "dropped:bmm@CppTemplateCaller:benchmark"}
    assert check_kind(dropped) == "raises" and family_backend(dropped) == "CPP"  # CPP alone: the failure raises
    assert same_failure(Outcome("raised", "CppCompileError"), dropped) and not same_failure(Outcome("passed"), dropped)
    for internal in ({"oracle": "layout_spec", "signature": "fixed-when-allowed:bmm"},
                     {"oracle": "template_presence", "signature": "missing:bmm:CPP"}):
        with pytest.raises(PlainReproError):
            check_kind(internal)


@pytest.mark.parametrize(("outcome", "violation", "same"), [
    (Outcome("raised", "IndexError", frame="kernel/mm.py:tuned_addmm"), CRASH, True),
    (Outcome("raised", "IndexError", frame="kernel/bmm.py:tuned_bmm"), CRASH, False),
    (Outcome("raised", "TypeError", frame="kernel/mm.py:tuned_addmm"), CRASH, False),
    (Outcome("mismatch", "AssertionError"), EXACT, True),
    (Outcome("raised", "AssertionError", frame="ir.py:f"), EXACT, False),
    (Outcome("killed", "SIGFPE"), {"oracle": "process", "signature": "killed:SIGFPE:mm"}, True),
    (Outcome("killed", "SIGSEGV"), {"oracle": "process", "signature": "killed:SIGFPE:mm"}, False),
    (Outcome("hang"), {"oracle": "process", "signature": "hang:mm"}, True),
    (Outcome("raised", "CppCompileError", frame="x"),
     {"oracle": "numerics", "signature": "choice-crash:mm@CppTemplateCaller:CppCompileError"}, True),
])
def test_same_failure(outcome: Outcome, violation: dict[str, str], same: bool) -> None:
    assert same_failure(outcome, violation) is same


def _fake_run(fails_when: Any, runs: list[Form]) -> Any:
    def run(form: Form) -> Outcome:
        runs.append(form)
        return Outcome("mismatch", "AssertionError") if fails_when(form) else Outcome("passed")
    return run


def test_search_prefers_the_plain_form_and_confirms_it() -> None:
    runs: list[Form] = []
    case = Case.make(op="mm", device="cpu", config={"max_autotune": True, "epilogue_fusion": False},
                     inputs=(TensorSpec((2, 3), (3, 1), 0, "float32"), TensorSpec((3, 2), (2, 1), 0, "float32")))
    found = search(case, EXACT, _fake_run(lambda f: not f.eager and f.mode == "max-autotune", runs))
    # wrong values: pinned to the template backend, so that autotuning cannot pick ATen by timing
    assert found.form == Form.make("max-autotune", {"max_autotune_gemm_backends": "CPP"}, False)
    assert found.confirmed and found.reproduced
    assert runs[0] == Form.make("max-autotune", {}, False) and runs.count(found.form) == 2  # found, then confirmed
    assert dict(found.flips)['`torch.compile` without `mode="max-autotune"`'].status == "passed"
    assert dict(found.flips)["eagerly (no `torch.compile`)"].status == "passed"


def test_search_drops_config_keys_and_freezing_that_do_not_matter() -> None:
    runs: list[Form] = []
    case = Case.make(op="mm", device="cpu", frozen_weights=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP", "epilogue_fusion": False},
                     inputs=(TensorSpec((2, 3), (3, 1), 0, "float32"), TensorSpec((3, 2), (2, 1), 0, "float32")))

    def cpp_chosen(form: Form) -> bool:  # the bug: the CPP kernel, once it wins autotuning (not in the first 2 runs)
        patch = dict(form.patch)
        return len(runs) > 2 and (form.mode == "max-autotune" or patch.get("max_autotune") is True) and \
            not form.eager and "CPP" in patch.get("max_autotune_gemm_backends", "ATEN,TRITON,CPP")

    found = search(case, EXACT, _fake_run(cpp_chosen, runs))
    assert runs[2] == Form.make(None, case.config_dict, True)  # the plain forms passed: the case's own form next
    # keys and freezing dropped, max_autotune=True spelt as the mode, pinned to CPP, confirmed
    assert found.form == Form.make("max-autotune", {"max_autotune_gemm_backends": "CPP"}, False) and found.confirmed
    flips = {change: o.status for change, o in found.flips}
    assert flips['`torch.compile` without `mode="max-autotune"`'] == "passed"
    assert flips["`max_autotune_gemm_backends='ATEN'`"] == "passed"


def test_search_takes_config_values_that_are_dicts() -> None:
    """decompose_mm_pass is drawn as post_grad_fusion_options={"decompose_mm_pass": {}}: a form with
    it is tried, kept where it matters and told apart from the form without it (once, a campaign's
    repro checks died here on an unhashable dict)."""
    runs: list[Form] = []
    options = {"decompose_mm_pass": {}}
    case = Case.make(op="mm", device="cpu", config={"max_autotune": True, "post_grad_fusion_options": options},
                     inputs=(TensorSpec((2, 3), (3, 1), 0, "float32"), TensorSpec((3, 2), (2, 1), 0, "float32")))
    found = search(case, EXACT, _fake_run(lambda f: dict(f.patch).get("post_grad_fusion_options") == options, runs))
    assert found.confirmed and dict(found.form.patch) == {"post_grad_fusion_options": options}
    assert len(set(runs)) == len(runs) - 1  # only the found form ran twice
    assert dict(found.flips)["without `post_grad_fusion_options={'decompose_mm_pass': {}}`"].status == "passed"


def test_flips_left_for_later_are_the_same_runs_and_none_is_run_twice() -> None:
    """Repro checks find every finding's form first, then run the single changes that make it pass:
    deferred, they give what the search would have given, without rerunning a change it already ran."""
    case = Case.make(op="mm", device="cpu", frozen_weights=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP", "epilogue_fusion": False},
                     inputs=(TensorSpec((2, 3), (3, 1), 0, "float32"), TensorSpec((3, 2), (2, 1), 0, "float32")))

    def bug(form: Form) -> bool:
        return not form.eager and form.frozen
    runs: list[Form] = []
    at_once, later = search(case, EXACT, _fake_run(bug, [])), search(case, EXACT, _fake_run(bug, runs), flips=False)
    assert later.form == at_once.form and later.confirmed and later.pending
    assert all(form not in runs for form in later.pending) and set(dict(later.flips)) < set(dict(at_once.flips))
    more: list[Form] = []
    done, left = more_flips(later.form, later.pending, _fake_run(bug, more), budget_s=60)
    assert left == [] and more == later.pending
    assert sorted((c, o.status) for c, o in [*later.flips, *done]) == sorted((c, o.status) for c, o in at_once.flips)
    done, left = more_flips(later.form, later.pending, _fake_run(bug, []), budget_s=0.0)
    assert done == [] and left == later.pending  # no time: all still pending


def test_search_without_a_failing_form_keeps_the_case_and_says_so() -> None:
    found = search(scalar_bias_case(), CRASH, lambda form: Outcome("passed"))
    assert not found.reproduced and not found.confirmed and found.flips == []
    assert found.form == Form.make(None, scalar_bias_case().config_dict, False)


def test_search_tries_nothing_new_once_its_budget_is_spent() -> None:
    runs: list[Form] = []
    found = search(scalar_bias_case(), CRASH, _fake_run(lambda f: True, runs), budget_s=0.0)
    assert runs == [] and not found.reproduced


def test_export_writes_the_plain_repro_beside_the_vendored_one(tmp_path: Path) -> None:
    store = FindingsStore(tmp_path)
    layout = {"oracle": "layout_spec", "severity": "missed optimization", "signature": "fixed-when-allowed:mm",
              "message": "m"}
    for violation in (CRASH, layout):
        store.add(record_from_violation(violation, scalar_bias_case().to_json(), known_bug=None, violations=[violation],
                                        versions={"torch": torch.__version__}, origin={}))
    from fuzz.export.repro import export_findings

    export_findings(store, tmp_path / "repros", emit=lambda _: None, verify=False)
    by_oracle = {f.oracle: f.repro["plain"] for f in FindingsStore(tmp_path)}
    assert "inductor internals" in by_oracle["layout_spec"]["unsupported"]
    plain = by_oracle["crash"]
    assert plain["path"].startswith("repros/") and plain["path"].endswith("_plain.py") and not plain["verified"]
    assert "torch.addmm(x2, x0, x1" in (tmp_path / plain["path"]).read_text()


@affected_by(SCALAR_BIAS.name)
def test_a_real_bug_gets_a_plain_repro_that_fails_with_its_traceback(tmp_path: Path) -> None:
    """The scalar-bias IndexError: plain mode="max-autotune" already fails, freezing is dropped."""
    record = write_plain_repro(scalar_bias_case(frozen=True), CRASH, tmp_path / "bug_plain.py", timeout_s=300)
    assert record["confirmed"] and record["form"] == {"mode": "max-autotune", "patch": {}, "frozen": False,
                                                      "seeded": False, "eager": False}
    assert "torch/_inductor/kernel/mm.py:" in record["outcome"]["location"]
    log = (tmp_path / "bug_plain.log").read_text()
    assert log.startswith("torch ") and 'File "bug_plain.py"' in log and "IndexError" in log
    assert "Fails on torch" in (tmp_path / "bug_plain.py").read_text()
    flips = {f["change"]: f["status"] for f in record["flips"]}
    assert flips['`torch.compile` without `mode="max-autotune"`'] == "passed"
    assert flips["`max_autotune_gemm_backends='ATEN'`"] == "raised"  # the bug is not in a template


def test_export_plain_paths_are_relative_to_the_campaign(tmp_path: Path) -> None:
    record = export_plain(scalar_bias_case().to_json(), CRASH, str(tmp_path / "repros" / "x.py"), tmp_path,
                          verify=False, timeout_s=10, environment=None)
    assert record["path"] == "repros/x_plain.py"


@pytest.mark.parametrize(("record", "summary"), [
    ({"verified": True, "reproduced": True, "confirmed": True,
      "outcome": {"status": "raised", "type": "IndexError", "message": "list index out of range"}},
     "raises `IndexError: list index out of range` (every run)"),
    ({"verified": True, "reproduced": True, "confirmed": False, "outcome": {"status": "mismatch", "message": "3 of 8"}},
     "returns wrong results (`3 of 8`) (one of two runs: autotuning picks its winner by timing)"),
    ({"verified": False}, "was not run"),
    ({"unsupported": "layout_spec is about inductor internals"}, "none: layout_spec is about inductor internals"),
])
def test_plain_summary_says_what_the_repro_does_and_how_reliably(record: dict[str, Any], summary: str) -> None:
    from fuzz.export.plain_repro import plain_summary

    assert plain_summary(record) == summary


REPROS = Path(__file__).resolve().parents[2] / "repros"
NOTHING_USER_VISIBLE = {"layout_gate_counts_failed_templates"}  # README: an observation no program can show


def test_every_curated_repro_has_a_short_plain_torch_version() -> None:
    verdicts = {p.stem for p in REPROS.glob("*.py") if not p.stem.endswith(("_plain", "_host", "_kernel"))}
    plains = {p.stem.removesuffix("_plain") for p in REPROS.glob("*_plain.py")}
    assert plains == verdicts - NOTHING_USER_VISIBLE
    for path in REPROS.glob("*_plain.py"):
        text = path.read_text()
        tree = ast.parse(text)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert imported <= {"torch", "triton", "sys"} and not any(isinstance(n, ast.ImportFrom) for n in ast.walk(tree))
        assert len(text.splitlines()) <= PAGE and 'print("torch", torch.__version__' in text, path.name


def test_the_view_check_accepts_eagers_views_of_an_input_and_rejects_one_moved() -> None:
    """output-view: an output sharing an input's storage must sit where eager's does."""
    case = Case.make(op="mm", device="cpu", seed=3, spelling="out", consumers=("narrow",),
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"},
                     inputs=(TensorSpec((6, 4), (4, 1), 0, "float32"), TensorSpec((4, 8), (8, 1), 0, "float32"),
                             TensorSpec((6, 8), (8, 1), 1, "float32")))
    view = {"oracle": "numerics", "severity": "wrong result", "signature": "output-view:mm", "message": "m"}
    namespace = _up_to_compile(render(case, view, Form.make(None, {}, False)))
    args = namespace["make_inputs"]()
    y, buffer = namespace["program"](*args)
    namespace["check"]((y, buffer), namespace["make_inputs"]())
    moved = buffer.as_strided(y.shape, y.stride(), buffer.storage_offset() - 1)
    with pytest.raises(AssertionError, match="offset 0 strides"):
        namespace["check"]((moved, buffer), namespace["make_inputs"]())
