"""Numerics oracle: the compiled output has eager's shape, dtype and strides, and its values are
bit-exact where the case is provably exact, else within a bound derived from float64."""

from __future__ import annotations

import torch

from oracles.model import WRONG_RESULT, Observation, Violation

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
ACCUMULATE_U = 2.0**-24  # ATen (cuBLAS, oneDNN) and Triton templates accumulate in float32
TF32_U = 2.0**-11


def tolerance(obs: Observation) -> torch.Tensor:
    """Per-element bound, twice the classic dot-product error bound: float32 accumulation over K
    terms, TF32 input rounding, rounding to the output dtype, and for fp16/bf16 split-K partial
    sums rounded to the dtype; never below twice eager's own error."""
    u_out = UNIT_ROUNDOFF[obs.eager.dtype]
    mag, ref = obs.magnitude, obs.reference.abs()
    bound = (obs.reduction_size + 2) * ACCUMULATE_U * mag + u_out * ref
    if obs.tf32 and obs.eager.dtype == torch.float32:
        bound = bound + 2 * TF32_U * mag
    if obs.eager.dtype in (torch.float16, torch.bfloat16):
        bound = bound + 2 * u_out * mag
    return torch.maximum(2 * bound, 2 * (obs.eager.double() - obs.reference).abs())


def _comparable(obs: Observation) -> torch.Tensor:
    """Elements where eager is finite and the reference fits the dtype (overflow is not judged)."""
    limit = torch.finfo(obs.eager.dtype).max / 2
    return torch.isfinite(obs.eager) & (obs.reference.abs() <= limit)


def error_ratio(obs: Observation) -> float:
    """max |compiled - reference| / tolerance (inf for NaN): how close the case came to failing."""
    if obs.compiled is None or obs.eager is None or obs.compiled.shape != obs.eager.shape or obs.eager.numel() == 0:
        return 0.0
    err = (obs.compiled.double() - obs.reference).abs()
    ratio = torch.where(_comparable(obs), err / tolerance(obs).clamp_min(1e-300), torch.zeros_like(err))
    return float(torch.nan_to_num(ratio, nan=float("inf")).max())


def _strides_that_matter(t: torch.Tensor) -> tuple[int, ...]:
    """Strides of the dimensions longer than 1 (a size-1 dimension's stride is never used)."""
    return tuple(s for d, s in zip(t.shape, t.stride()) if d > 1)


def check(obs: Observation) -> list[Violation]:
    if obs.compiled is None or obs.eager is None:
        return []
    op, dtype = obs.case.op, str(obs.eager.dtype).removeprefix("torch.")
    got, want = obs.compiled, obs.eager
    if got.shape != want.shape or got.dtype != want.dtype:
        return [Violation("numerics", WRONG_RESULT, f"output-meta:{op}",
                          f"{op}: compiled output {tuple(got.shape)} {got.dtype}, eager {tuple(want.shape)} {want.dtype}")]
    out = []
    if _strides_that_matter(got) != _strides_that_matter(want):
        out.append(Violation("numerics", WRONG_RESULT, f"output-strides:{op}",
                             f"{op}: compiled output strides {got.stride()}, eager {want.stride()}"))
    if got.numel() == 0:
        return out
    if obs.exact:
        if not (torch.equal(got, want) and torch.equal(got.double(), obs.reference)):
            wrong = int((got.double() != obs.reference).sum())
            out.append(Violation("numerics", WRONG_RESULT, f"exact-mismatch:{op}:{dtype}",
                                 f"{op} {dtype}: exact-integer case, {wrong} element(s) differ from the exact result "
                                 f"(max error {(got.double() - obs.reference).abs().max().item():.6g})"))
        return out
    ratio = error_ratio(obs)
    if not ratio <= 1.0:
        err = (got.double() - obs.reference).abs()
        bad = int((~(err <= tolerance(obs)) & _comparable(obs)).sum())
        out.append(Violation("numerics", WRONG_RESULT, f"tolerance:{op}:{dtype}",
                             f"{op} {dtype}: {bad} element(s) exceed the float64-derived bound "
                             f"(worst error/bound {ratio:.3g})"))
    return out
