"""Numerics oracle: every compiled output has eager's shape, dtype and strides, and its values are
bit-exact where the case is provably exact, else within a bound derived from float64."""

from __future__ import annotations

from collections.abc import Callable

import torch

from oracles.model import CRASH, WRONG_RESULT, Observation, OutputCheck, Violation

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
ACCUMULATE_U = 2.0**-24  # ATen (cuBLAS, oneDNN), Triton and CPP templates accumulate in float32
TF32_U = 2.0**-11


def underflow(dtype: torch.dtype) -> float:
    """Absolute error of rounding into the subnormal range: half the smallest subnormal."""
    if not dtype.is_floating_point:
        return 0.0
    info = torch.finfo(dtype)
    return float(info.smallest_normal * info.eps / 2)


def op_bound(reduction: int, dtype: torch.dtype, tf32: bool) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Error bound of one mm-family result (value, magnitude = sum |terms|): float32 accumulation
    over K terms, TF32 input rounding, rounding to `dtype`, and for fp16/bf16 split-K partial sums
    rounded to the dtype. Integer results are exact."""
    if not dtype.is_floating_point:
        return lambda value, mag: torch.zeros_like(mag)
    u_out, eta = UNIT_ROUNDOFF.get(dtype, 2.0**-8), underflow(dtype)

    def bound(value: torch.Tensor, mag: torch.Tensor) -> torch.Tensor:
        b = (reduction + 2) * ACCUMULATE_U * mag + u_out * value.abs() + eta
        if tf32 and dtype == torch.float32:
            b = b + 2 * TF32_U * mag
        if dtype in (torch.float16, torch.bfloat16):
            b = b + 2 * u_out * mag
        return b

    return bound


EAGER_SLACK_CAP = 16.0


def tolerance(check: OutputCheck) -> torch.Tensor:
    """Twice (the propagated bound + the final rounding to the output dtype, subnormals included). Eager's own error
    (reduced-precision library paths) widens it, by at most 16x, so a broken eager hides nothing."""
    dtype = check.compiled.dtype
    u_final = UNIT_ROUNDOFF.get(dtype, 0.0 if not dtype.is_floating_point else 2.0**-8)
    bound = 2 * (check.bound + u_final * check.reference.abs() + underflow(dtype))
    eager_error = torch.nan_to_num((check.eager.double() - check.reference).abs(), nan=0.0, posinf=0.0)
    return torch.maximum(bound, torch.minimum(2 * eager_error, EAGER_SLACK_CAP * bound))


def _comparable(check: OutputCheck) -> torch.Tensor:
    """Elements where eager is finite and the reference fits the dtype (overflow is not judged)."""
    if not check.eager.dtype.is_floating_point:
        return torch.ones_like(check.reference, dtype=torch.bool)
    limit = torch.finfo(check.eager.dtype).max / 2
    return torch.isfinite(check.eager) & (check.reference.abs() <= limit)


def check_ratio(check: OutputCheck) -> float:
    """max |compiled - reference| / tolerance (inf for NaN): how close the output came to failing."""
    if check.compiled.shape != check.eager.shape or check.eager.numel() == 0:
        return 0.0
    err = (check.compiled.double() - check.reference).abs()
    ratio = torch.where(_comparable(check), err / tolerance(check).clamp_min(1e-300), torch.zeros_like(err))
    return float(torch.nan_to_num(ratio, nan=float("inf")).max())


def error_ratio(obs: Observation) -> float:
    """The worst check_ratio over the case's outputs (for hypothesis.target)."""
    return max((check_ratio(c) for c in obs.results), default=0.0)


def _strides_that_matter(t: torch.Tensor) -> tuple[int, ...]:
    """Strides of the dimensions longer than 1 (a size-1 dimension's stride is never used)."""
    return tuple(s for d, s in zip(t.shape, t.stride()) if d > 1)


def check(obs: Observation) -> list[Violation]:
    out = [v for c in obs.results for v in _check_output(obs.case.op, c)]
    for choice, failure in obs.choice_failures:
        if not failure.config_limit:
            out.append(Violation("numerics", CRASH, f"choice-crash:{obs.case.op}@{choice.family}:{failure.type}",
                                 f"{obs.case.op}: compiling with only {choice.template} [{choice.description}] "
                                 f"raised {failure.type}: {failure.message}"))
    return out


def _check_output(op: str, c: OutputCheck) -> list[Violation]:
    got, want = c.compiled, c.eager
    where = f"@{c.choice.family}" if c.choice else ""
    what = f"{op} {c.label}" + (f" [{c.choice.description}]" if c.choice else "")
    dtype = str(want.dtype).removeprefix("torch.")
    if got.shape != want.shape or got.dtype != want.dtype:
        return [Violation("numerics", WRONG_RESULT, f"output-meta:{op}{where}",
                          f"{what}: compiled {tuple(got.shape)} {got.dtype}, eager {tuple(want.shape)} {want.dtype}")]
    out = []
    if got.numel() and _strides_that_matter(got) != _strides_that_matter(want):
        out.append(Violation("numerics", WRONG_RESULT, f"output-strides:{op}{where}",
                             f"{what}: compiled strides {got.stride()}, eager {want.stride()}"))
    if got.numel() == 0:
        return out
    if c.exact:  # judged against the exact result alone: eager has its own bugs (see README)
        if not torch.equal(got.double(), c.reference):
            wrong = int((got.double() != c.reference).sum())
            out.append(Violation("numerics", WRONG_RESULT, f"exact-mismatch:{op}:{dtype}{where}",
                                 f"{what} {dtype}: exact-integer case, {wrong} element(s) differ from the exact "
                                 f"result (max error {(got.double() - c.reference).abs().max().item():.6g})"))
        return out
    ratio = check_ratio(c)
    if not ratio <= 1.0:
        err = (got.double() - c.reference).abs()
        bad = int((~(err <= tolerance(c)) & _comparable(c)).sum())
        out.append(Violation("numerics", WRONG_RESULT, f"tolerance:{op}:{dtype}{where}",
                             f"{what} {dtype}: {bad} element(s) exceed the float64-derived bound "
                             f"(worst error/bound {ratio:.3g})"))
    return out
