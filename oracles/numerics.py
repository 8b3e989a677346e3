"""Numerics oracle: every compiled output has eager's shape, dtype, strides (the stride order for
views) and aliasing, NaN and inf exactly where the float64 reference has them, and values that are
bit-exact where a correct kernel is exact, else within the bound of oracles/error_model.py."""

from __future__ import annotations

import torch

from oracles.model import (
    CRASH,
    REFERENCE_DIFFERS,
    VACUOUS,
    WRONG_RESULT,
    Observation,
    OutputCheck,
    TensorMeta,
    Violation,
)
from oracles.signature import AGREES_PREFIX


def _judged(check: OutputCheck) -> tuple[torch.Tensor, torch.Tensor]:
    """(elements judged against the bound, elements whose value may legitimately overflow to the
    reference's infinity). Neither: the reference's own NaN/inf, and elements with an infinite
    bound (an earlier step may have overflowed there: any value, NaN included, is allowed)."""
    ref, bound = check.reference, check.bound
    if not check.compiled.dtype.is_floating_point:
        return torch.ones_like(ref, dtype=torch.bool), torch.zeros_like(ref, dtype=torch.bool)
    bounded = torch.isfinite(ref) & torch.isfinite(bound)
    overflow = bounded & (ref.abs() + bound > torch.finfo(check.compiled.dtype).max)
    return bounded & ~overflow, overflow


def _ratio(got: torch.Tensor, check: OutputCheck) -> torch.Tensor:
    """|got - reference| / bound on the judged elements (0 elsewhere, inf for a non-finite value)."""
    judged, _ = _judged(check)
    err = (got.double() - check.reference).abs()
    ratio = torch.where(judged, err / check.bound.clamp_min(1e-300), torch.zeros_like(err))
    return torch.nan_to_num(ratio, nan=float("inf"))


def check_ratio(check: OutputCheck) -> float:
    """The worst |compiled - reference| / bound: how close the output came to failing."""
    if check.compiled.shape != check.reference.shape or check.reference.numel() == 0:
        return 0.0
    return float(_ratio(check.compiled, check).max())


def error_ratio(obs: Observation) -> float:
    """The worst check_ratio over the case's outputs (for hypothesis.target)."""
    return max((check_ratio(c) for c in obs.results), default=0.0)


def stride_order(meta: TensorMeta, shape: tuple[int, ...]) -> list[int]:
    """The dims longer than 1, innermost (smallest stride) first."""
    dims = [d for d, n in enumerate(shape) if n > 1]
    return sorted(dims, key=lambda d: (meta.stride[d], -d))


def check(obs: Observation) -> list[Violation]:
    out = [v for c in obs.results for v in _check_output(f"{obs.case.op}.grad" if c.gradient else obs.case.op, c)]
    for choice, failure in obs.choice_failures:
        out.append(Violation("numerics", CRASH, f"choice-crash:{obs.case.op}@{choice.family}:{failure.type}",
                                 f"{obs.case.op}: compiling with only {choice.template} [{choice.description}] "
                                 f"raised {failure.type}: {failure.message}"))
    for choice in obs.unisolated:
        out.append(Violation("numerics", VACUOUS, f"not-isolated:{obs.case.op}@{choice.family}",
                             f"{obs.case.op}: the compile meant to run {choice.template} [{choice.description}] alone "
                             f"found no such choice in its first graph, so it autotuned: that choice went unchecked"))
    return out


def _check_output(op: str, c: OutputCheck) -> list[Violation]:
    got, want = c.compiled, c.eager
    where = f"@{c.choice.family}" if c.choice else ""
    what = f"{op} {c.label}" + (f" [{c.choice.description}]" if c.choice else "")
    dtype = str(want.dtype).removeprefix("torch.")
    if got.shape != want.shape or got.dtype != want.dtype:
        return [Violation("numerics", WRONG_RESULT, f"output-meta:{op}{where}",
                          f"{what}: compiled {tuple(got.shape)} {got.dtype}, eager {tuple(want.shape)} {want.dtype}",
                          c.label)]
    out = _layout_violations(op, where, what, tuple(want.shape), c.eager_meta, c.compiled_meta)
    if got.numel() == 0:
        return out
    if c.exact:  # judged against the exact result alone (NaN where it has NaN): eager has its own bugs (README)
        differ = _exact_wrong(got, c)
        if bool(differ.any()):
            worst = (got.double() - c.reference).abs()[differ].max().item()
            out.append(_value_violation(f"exact-mismatch:{op}:{dtype}{where}", c, differ,
                                        f"{what} {dtype}: exact case, {int(differ.sum())} element(s) differ from the "
                                        f"exact result (max error {worst:.6g})"))
        return out
    nonfinite = _nonfinite_wrong(got, c)
    if bool(nonfinite.any()):
        ref = c.reference
        out.append(_value_violation(f"nonfinite:{op}:{dtype}{where}", c, nonfinite,
                                    f"{what} {dtype}: {int(nonfinite.sum())} element(s) have NaN/inf where the float64 "
                                    f"reference has not, or miss the reference's ({int(torch.isnan(ref).sum())} NaN, "
                                    f"{int(torch.isinf(ref).sum())} inf expected; eager differs in "
                                    f"{int(_nonfinite_wrong(want, c).sum())})"))
    beyond = _beyond_bound(got, c)
    if bool(beyond.any()):
        judged, _ = _judged(c)
        ratio = float(torch.where(beyond, _ratio(got, c), torch.zeros_like(c.reference)).max())
        eager = float(_ratio(want, c).max())
        out.append(_value_violation(f"tolerance:{op}:{dtype}{where}", c, beyond,
                                    f"{what} {dtype}: {int(beyond.sum())} of {int(judged.sum())} element(s) exceed the "
                                    f"error bound of a correct kernel "
                                    f"(worst error/bound {ratio:.3g}; eager's {eager:.3g})"))
    return out


def _exact_wrong(values: torch.Tensor, c: OutputCheck) -> torch.Tensor:
    """Elements of `values` that differ from the exact result (NaN matches NaN)."""
    v64 = values.double()
    ref: torch.Tensor = c.reference
    return (v64 != ref) & ~(v64.isnan() & ref.isnan())


def _beyond_bound(values: torch.Tensor, c: OutputCheck) -> torch.Tensor:
    """Finite elements of `values` farther from the reference than the bound allows."""
    return torch.isfinite(values) & (_ratio(values, c) > 1.0)


def wrong_elements(values: torch.Tensor, c: OutputCheck) -> torch.Tensor:
    """Where `values` (the compiled output, or eager's) fails this output's check: bit for bit in an
    exact case, else NaN/inf placement and the error bound."""
    if c.exact:
        return _exact_wrong(values, c)
    return _nonfinite_wrong(values, c) | _beyond_bound(values, c)


def eager_wrong_too(c: OutputCheck, wrong: torch.Tensor) -> bool:
    """Eager deviates from the reference at every element of `wrong` (values aside)."""
    return not bool((wrong & ~wrong_elements(c.eager, c)).any())


def eager_agrees(c: OutputCheck, wrong: torch.Tensor) -> bool:
    """Eager deviates from the reference at every element where the compiled output does (`wrong`),
    and the same way: the same value there (NaN for NaN) or, outside exact cases, two values within
    twice the bound of each other (each may err by the bound). Then the reference, not inductor,
    is what differs."""
    if not eager_wrong_too(c, wrong):
        return False
    got, eager = c.compiled.double(), c.eager.double()
    same = (got == eager) | (got.isnan() & eager.isnan())
    if not c.exact:
        same |= (got - eager).abs() <= 2 * c.bound
    return bool(same[wrong].all())


def _value_violation(signature: str, c: OutputCheck, wrong: torch.Tensor, message: str) -> Violation:
    """A wrong value, or (REFERENCE_DIFFERS) a deviation eager shows the same way."""
    if eager_agrees(c, wrong):
        return Violation("numerics", REFERENCE_DIFFERS, f"{AGREES_PREFIX}{signature}",
                         f"{message}; eager shows the same deviation at the same elements: the reference differs, "
                         f"not inductor", c.label)
    return Violation("numerics", WRONG_RESULT, signature, message, c.label)


def _nonfinite_wrong(values: torch.Tensor, c: OutputCheck) -> torch.Tensor:
    """Where `values` has NaN where the reference has not (or misses its NaN), another value where
    it is infinite, or an infinity elsewhere (one of the reference's sign is allowed where the
    value may overflow)."""
    got = values.double()
    ref: torch.Tensor = c.reference
    judged, overflow = _judged(c)
    nan_wrong = (torch.isnan(got) != torch.isnan(ref)) & (judged | overflow | ~torch.isfinite(ref))
    inf_wrong = torch.isinf(ref) & (got != ref)
    overflow_wrong = overflow & torch.isinf(got) & (torch.sign(got) != torch.sign(ref))
    finite_wrong = judged & ~torch.isfinite(got) & ~torch.isnan(got)  # NaN there is already counted
    return nan_wrong | inf_wrong | overflow_wrong | finite_wrong


def used_strides(meta: TensorMeta, shape: tuple[int, ...]) -> list[int]:
    """The strides of the dims longer than 1 (a dim of size 1 may have any stride)."""
    return [s for s, n in zip(meta.stride, shape, strict=True) if n > 1]


def _layout_violations(op: str, where: str, what: str, shape: tuple[int, ...], eager: TensorMeta | None,
                       compiled: TensorMeta | None) -> list[Violation]:
    """Exact strides (dims longer than 1) and offset for a fresh tensor, and for a view of an input
    (where the program's view of the caller's tensor sits); the stride order for another view (all
    inductor promises, see graph.py); the same aliasing as eager."""
    if eager is None or compiled is None:
        return []
    out = []
    if 0 in shape:
        pass  # an empty tensor has no layout to get wrong
    elif eager.is_view:
        inputs = sorted(a for a in set(eager.aliases) & set(compiled.aliases) if a.startswith("in"))
        if inputs and (compiled.offset, used_strides(compiled, shape)) != (eager.offset, used_strides(eager, shape)):
            out.append(Violation("numerics", WRONG_RESULT, f"output-view:{op}{where}",
                                 f"{what}: a view of {inputs[0]} at offset {compiled.offset} strides "
                                 f"{compiled.stride}, eager's at offset {eager.offset} strides {eager.stride}"))
        elif stride_order(compiled, shape) != stride_order(eager, shape):
            out.append(Violation("numerics", WRONG_RESULT, f"output-stride-order:{op}{where}",
                                 f"{what}: a view output with strides {compiled.stride}, whose order differs from "
                                 f"eager's {eager.stride}"))
    elif used_strides(compiled, shape) != used_strides(eager, shape) or compiled.offset != eager.offset:
        out.append(Violation("numerics", WRONG_RESULT, f"output-strides:{op}{where}",
                             f"{what}: compiled strides {compiled.stride} offset {compiled.offset}, eager "
                             f"{eager.stride} offset {eager.offset}"))
    if sorted(compiled.aliases) != sorted(eager.aliases):
        out.append(Violation("numerics", WRONG_RESULT, f"output-aliasing:{op}{where}",
                             f"{what}: shares storage with {sorted(compiled.aliases) or 'nothing'} compiled, "
                             f"with {sorted(eager.aliases) or 'nothing'} in eager"))
    return out
