"""The rules that keep clean campaigns quiet cannot hide a real bug: each is run against a planted
bug it must still report as new (a wrong value in another choice than a known bug's, a compiled
deviation eager does not share, a wrong value in a case that is exact, a choice that crashes for a
reason other than the GPU's resources), next to the case the rule exists for."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch._inductor import select_algorithm

from fuzz.bugs.entry import EAGER_AGREES_NAME
from fuzz.bugs.known_bugs import KNOWN_BUGS
from fuzz.run import tracking
from fuzz.run.harness import HashLedger, run_case
from fuzz.run.session import FuzzSession
from oracles import check_all
from oracles.model import REFERENCE_DIFFERS
from strategies.case import Case, TensorSpec, contiguous_strides
from tests.checking import is_cpp_choice, rig_benchmarks

REAL_BADDBMM = select_algorithm.extern_kernels.baddbmm


def spec(shape: tuple[int, ...], dtype: str) -> TensorSpec:
    return TensorSpec(shape, contiguous_strides(shape), 0, dtype)


def baddbmm_case(alpha: float, beta: float, dtype: str = "float16") -> Case:
    return Case.make(op="baddbmm", inputs=(spec((2, 8, 16), dtype), spec((2, 16, 4), dtype), spec((2, 8, 4), dtype)),
                     device="cpu", value_mode="normal", seed=5, params={"alpha": alpha, "beta": beta},
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})


def beta_one_when_alpha_is_zero(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, alpha: float = 1,
                                beta: float = 1, out: torch.Tensor) -> torch.Tensor:
    """An extern baddbmm that drops beta when alpha == 0 (close to the registered ATen bug's region)."""
    return REAL_BADDBMM(bias, a, b, alpha=alpha, beta=1.0 if alpha == 0 else beta, out=out)


def test_a_planted_extern_bug_in_a_known_aten_bugs_region_is_new_where_eager_is_right(
        monkeypatch: pytest.MonkeyPatch) -> None:
    case = baddbmm_case(alpha=0.0, beta=0.5)
    bug = next(b for b in KNOWN_BUGS if b.name == "aten-cpu-baddbmm-zero-alpha-wrong")
    assert bug.applies(case), "the case must lie in the registered ATen bug's region"
    session = FuzzSession()
    clean = session.evaluate(case)
    if clean.known:
        pytest.skip("this host's eager baddbmm shows the registered ATen bug on this case")
    assert clean.violations == []
    monkeypatch.setattr(select_algorithm.extern_kernels, "baddbmm", beta_one_when_alpha_is_zero)
    verdict = session.evaluate(case)
    assert any(v.signature.endswith(":baddbmm:float16") for v in verdict.violations), verdict.violations
    assert not verdict.known  # eager is right: not the ATen bug, and not a reference that differs


def test_a_deviation_eager_shares_is_reported_apart_and_not_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted reference mistake (an extra 1 in every product): eager and compiled agree, the
    reference differs; the same case with a wrong compiled kernel besides is still new."""
    real = tracking.Reference.product

    def off_by_one(self: tracking.Reference, left: str, right: str, dtype: torch.dtype) -> tracking.Tracked:
        t = real(self, left, right, dtype)
        return tracking.Tracked(t.value + 1, t.bound, t.mag, t.dtype, t.exact)

    case = baddbmm_case(alpha=1.0, beta=1.0, dtype="float32")
    monkeypatch.setattr(tracking.Reference, "product", off_by_one)
    verdict = FuzzSession().evaluate(case)
    assert verdict.violations == []
    agreed = [(v, b) for v, b in verdict.known if b.name == EAGER_AGREES_NAME]
    assert agreed and all(v.severity == REFERENCE_DIFFERS for v, _ in agreed), verdict.known
    monkeypatch.setattr(select_algorithm.extern_kernels, "baddbmm", beta_one_when_alpha_is_zero)
    zero_alpha = baddbmm_case(alpha=0.0, beta=0.5, dtype="float32")  # compiled uses beta = 1, eager 0.5
    assert any(v.severity != REFERENCE_DIFFERS for v in FuzzSession().evaluate(zero_alpha).violations)


def test_a_scalar_the_dtype_cannot_hold_makes_a_case_inexact_and_a_held_one_keeps_it_exact(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """alpha = 0, beta = 0.3: beta times the input rounds (a campaign's false exact-mismatch, max
    error 7.5e-09); with beta = 0.5 the case stays exact, and a kernel one ulp off fails it."""
    def case(beta: float) -> Case:
        return Case.make(op="addmm",
                         inputs=(spec((8, 16), "float32"), spec((16, 4), "float32"), spec((8, 4), "float32")),
                         device="cpu", value_mode="exact_int", seed=3, params={"alpha": 0.0, "beta": beta},
                         config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN"})

    inexact = run_case(case(0.3), ledger=HashLedger())
    assert not any(r.exact for r in inexact.results) and check_all(inexact) == []
    assert all(r.exact for r in run_case(case(0.5), ledger=HashLedger()).results)
    real = select_algorithm.extern_kernels.addmm

    def one_ulp_off(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor,
                    **scalars: float) -> torch.Tensor:
        real(bias, a, b, out=out, **scalars)
        return out.view(-1)[:1].copy_(torch.nextafter(out.view(-1)[:1], torch.tensor(float("inf"))))

    monkeypatch.setattr(select_algorithm.extern_kernels, "addmm", one_ulp_off)
    assert "exact-mismatch:addmm:float32" in {v.signature for v in check_all(run_case(case(0.5), ledger=HashLedger()))}


def test_a_choice_beyond_the_gpus_resources_is_unavailable_and_any_other_crash_is_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Single-choice compiles: Triton's OutOfResources (planted on the CPP choice: this is a CPU
    machine) is recorded as unavailable, not a crash; a RuntimeError there is a choice-crash."""
    from torch._inductor.codegen.cpp_template_kernel import CppTemplateCaller

    case = Case.make(op="mm", inputs=(spec((16, 32), "float32"), spec((32, 24), "float32")), device="cpu",
                     value_mode="normal", seed=1, frozen_weights=True, every_choice=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,CPP", "freezing": True})
    rig_benchmarks(monkeypatch, lambda timings: {c: 1.0 if is_cpp_choice(c) else 1e-3 for c in timings})
    built = []  # ATen wins autotuning, so the CPP node is built only in its single-choice compile

    def fails(exc: Exception) -> Callable[[CppTemplateCaller], object]:
        def output_node(self: CppTemplateCaller) -> object:
            built.append(self)
            raise exc
        return output_node

    class OutOfResources(Exception):
        pass

    beyond = OutOfResources("out of resource: shared memory, Required: 245808, Hardware limit: 232448")
    monkeypatch.setattr(CppTemplateCaller, "output_node", fails(beyond))
    obs = run_case(case, ledger=HashLedger())
    assert built and obs.compile_failure is None, "the CPP choice must fail only where it is compiled alone"
    assert obs.unavailable and not obs.choice_failures
    assert not any(v.signature.startswith("choice-crash:") for v in check_all(obs))
    monkeypatch.setattr(CppTemplateCaller, "output_node", fails(RuntimeError("a real crash")))
    found = {v.signature for v in check_all(run_case(case, ledger=HashLedger()))}
    assert "choice-crash:mm@CppTemplateCaller:RuntimeError" in found, found


@pytest.mark.gpu
def test_a_template_candidate_that_builds_nothing_keeps_the_gates_fixed_layout_quiet() -> None:
    """mm with K == 0 on the GPU, ATEN,TRITON, flexible layouts allowed: the Triton candidates the
    layout gate counted build no choice (their rendering divides by zero), so the ATen choice left
    has the fixed layout the gate documents: recorded as unbuilt, not a missed optimization (the
    gate that always fixes is still one: test_gate_that_always_fixes_is_a_missed_optimization)."""
    case = Case.make(op="mm", inputs=(spec((64, 0), "float16"), spec((0, 32), "float16")), device="cuda",
                     value_mode="normal", seed=1,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON",
                             "max_autotune_allow_flexible_layouts": True})
    obs = run_case(case, ledger=HashLedger())
    events = [e for e in obs.selections if e.source == "template_configs"]
    assert events and all(c.kind == "extern" and not c.flexible for e in events for c in e.choices), events
    assert any(name != "ExternKernelChoice" for e in events for name in e.unbuilt), events
    assert check_all(obs) == []
