"""The float64 run of a program with what a correct kernel may do: each value carries its error
*bound* and *magnitude* (sum |terms|, what accumulation errors scale with) and whether every
rounding so far was exact (oracles/error_model.py has the terms)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from oracles.error_model import KernelModel, accumulation, prefixes, representable, rounding, unit_roundoff

Tensor = torch.Tensor
FLOAT32_MAX = torch.finfo(torch.float32).max  # a correct kernel's accumulators are float32


@dataclasses.dataclass
class Tracked:
    """A float64 value with its error bound and magnitude, the dtype a kernel holds it in, and
    whether every rounding so far was exact."""

    value: Tensor
    bound: Tensor
    mag: Tensor
    dtype: torch.dtype
    exact: bool


@dataclasses.dataclass
class Reference:
    """What steps may read: float64 inputs (and their magnitudes), params, the kernel model."""

    env: dict[str, Any]
    abs_env: dict[str, Any]
    params: dict[str, float]
    model: KernelModel

    def product(self, left: str, right: str, dtype: torch.dtype) -> Tracked:
        """`left @ right` (expressions over the inputs) as a kernel rounding to `dtype` computes it."""
        a, b = eval(left, self.env), eval(right, self.env)  # noqa: S307 - our own tables
        value, mag = a @ b, eval(left, self.abs_env) @ eval(right, self.abs_env)  # noqa: S307 - our own tables
        bound = accumulation(mag, prefixes(a, b), dtype, self.model) + rounding(value, dtype)
        exact = exact_sum(a, b, mag, dtype, self.model) and representable(value, dtype)
        return partial_sums_overflow(Tracked(value, bound, mag, dtype, exact))


def unbounded(t: Tracked, past: Tensor) -> Tracked:
    """`t` with an infinite bound (any value, NaN included, is allowed) where `past` holds."""
    return dataclasses.replace(t, bound=torch.where(past, torch.inf, t.bound), exact=False) if past.any() else t


def partial_sums_overflow(t: Tracked) -> Tracked:
    """Unbounded where a float32 partial sum of the step may pass float32's range (its magnitude
    does), though the result itself would fit."""
    return unbounded(t, torch.isfinite(t.value) & (t.mag > FLOAT32_MAX))


def overflowed(t: Tracked) -> Tracked:
    """`t` as a step that mixes its elements reads it: where a correct kernel's value may have
    overflowed to an infinity, what that step makes of it (inf - inf is NaN, -inf * 0 too) is
    anything. (Left alone, such an element is judged as an overflow to the reference's own infinity.)"""
    if not t.dtype.is_floating_point:
        return t
    return unbounded(t, torch.isfinite(t.value) & (t.value.abs() + t.bound > torch.finfo(t.dtype).max))


def scalar_representable(scale: float, dtype: torch.dtype) -> bool:
    """The scalar survives rounding to `dtype` (any scalar is, for integer results: no rounding)."""
    return not dtype.is_floating_point or representable(torch.tensor([scale], dtype=torch.float64), dtype)


def exact_sum(a: Tensor, b: Tensor, mag: Tensor, dtype: torch.dtype, model: KernelModel) -> bool:
    """Whether a correct kernel forms `a @ b` without any rounding: every product and partial sum
    is a multiple of the operands' grains and stays within the accumulator's exact range (and
    within the output dtype's when partial sums may be rounded to it)."""
    if not torch.isfinite(mag).all():
        return False
    grain_a, grain_b = grain(a), grain(b)
    if grain_a * grain_b == 0.0:
        return False
    if not dtype.is_floating_point:  # the dtype's range, where the float64 reference is exact too
        return within(mag, grain_a * grain_b, min(float(torch.iinfo(dtype).max), 2.0**53))
    limit = 2.0**24
    if model.half_partials and dtype in (torch.float16, torch.bfloat16):
        limit = 1.0 / unit_roundoff(dtype)
    tf32_exact = not model.tf32 or (within(a.abs(), grain_a, 2.0**11) and within(b.abs(), grain_b, 2.0**11))
    return tf32_exact and within(mag, grain_a * grain_b, limit)


def within(mag: Tensor, grain: float, limit: float) -> bool:
    """Every element of `mag`, counted in units of `grain`, is at most `limit`."""
    return not mag.numel() or float(mag.max()) / grain <= limit


def grain(t: Tensor) -> float:
    """The largest power of two (at most 1) every element is a multiple of; 0 when there is none
    down to 2^-30 (e.g. normal random values)."""
    finite = t[torch.isfinite(t)]
    if not bool(torch.all(torch.remainder(finite * 2.0**30, 1.0) == 0)):
        return 0.0
    return next(2.0**-e for e in range(31) if bool(torch.all(torch.remainder(finite * 2.0**e, 1.0) == 0)))
