"""Steps a program applies to the op's result (a Case's consumers): each as Python source that
rebinds `y`, with how it moves a correct kernel's error bound (a transfer over Tracked values)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from fuzz.run.tracking import Reference, Tracked, grain, overflowed, partial_sums_overflow, within
from oracles.error_model import (
    KernelModel,
    accumulation,
    prefixes,
    representable,
    rounding,
    row_prefixes,
    unit_roundoff,
)
from strategies.vocabulary import UPCASTS

GELU_LIPSCHITZ = 1.13  # max |d gelu / dx|
GELU_CANCELLATION = 6
"""gelu(y) = y/2 * (1 + erf(y/sqrt 2)): erf's absolute error (and, for y << 0, the cancellation in
1 + erf) times |y|/2 scales with |y|, not with the result: beyond 5 roundings of its result, eager's
CPU gelu errs by up to 4.8u|y| (y = -2.9), inductor's by 2.5u|y| (y = 0.06; 4e5 values, |y| in
[1e-3, 20]). A 5-minute CPU campaign's frozen mm + bias row + gelu was 1.05 times the bound without it."""
SILU_LIPSCHITZ = 1.1  # max |d silu / dx| (1.0998 at x = 2.4)
BIAS_ROW = "x1[..., :1, :]"  # the first row of the second operand, broadcast over the result's rows


Transfer = Callable[[Tracked, Tracked, Reference], Tracked]  # (before the step, after it in float64, ...) -> after


@dataclasses.dataclass(frozen=True)
class Consumer:
    """One step after the op. `code` rebinds `y` (it may read the inputs x0..); `transfer` gives
    the step's result with its bound and magnitude; None means the step only moves data, so its
    code applied to bound and magnitude is exact."""

    code: str
    transfer: Transfer | None = None
    output: str = ""  # an extra program output ("y" again, or a mutated input "x0")
    magnitude: str = ""  # the code a plain repro's magnitude program (on |inputs|) runs instead
    op_weights: tuple[tuple[str, str], ...] = ()  # the op again on x0 with these (weight, bias), cat after y

    @property
    def own_magnitude(self) -> bool:
        """Whether its code on |inputs| is no magnitude (an activation, a negated bias): a plain
        repro's magnitude program then runs its own (`magnitude`; the op's calls on |weights|)."""
        return bool(self.magnitude or self.op_weights)


LIBM_ROUNDINGS = 4
"""An activation's own error, in float32 roundings (half ulps), where every dtype computes it: e.g.
sigmoid = 1 / (1 + exp(-y)): exp within 1 ulp (vectorized, Sleef's u10), the add and the division
half an ulp each, 2 ulps in all (a 2-minute CPU campaign: eager's sigmoid at 1.9 roundings, K = 1)."""


def _lipschitz(slope: float, input_roundings: int = 0) -> Transfer:
    """An activation whose derivative is at most `slope` in size: the error scales by it, the
    activation's own float32 error (LIBM_ROUNDINGS of its result, and `input_roundings` of its input
    where it cancels) adds, and the result is rounded once more (a correct kernel may apply it to the
    unrounded value)."""
    def transfer(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
        before = overflowed(before)
        own = LIBM_ROUNDINGS * rounding(after.value, torch.float32) \
            + input_roundings * rounding(before.value, torch.float32)
        return Tracked(after.value, slope * before.bound + own + rounding(after.value, before.dtype),
                       slope * before.mag, before.dtype, False)
    return transfer


def _scaled(slope: float) -> str:
    """An activation's magnitude code: slope times the magnitude before it (the error moves by at
    most that), plus it again for the activation's own rounding (|gelu(y)|, |silu(y)| <= |y|).
    tanh and sigmoid add 1 (their bound) instead; each keeps an inf magnitude (e.g. tanh(inf), finite) inf."""
    return f"y = {slope + 1} * y"


def _add_row(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    """y + the first row of x1 (a bias row): the row is an exact input; the sum is rounded once, in
    any association: freezing's binary folding computes x @ W + (b + row), rounding b + row first,
    which may be far larger than y + row (a 10-minute CPU campaign: fp16 `F.linear(x, W, b) + W[:1]`
    at 1.39 times a bound of one rounding of y + row): that rounding, u(|b| + |row|), and the final
    one of y + row, which y's own rounding covers but for u|row|, are within u(mag + |row|)."""
    before = overflowed(before)
    row = eval(BIAS_ROW, ref.abs_env)  # noqa: S307 - our own table
    mag = before.mag + row
    return Tracked(after.value, before.bound + rounding(mag + row, before.dtype), mag, before.dtype,
                   before.exact and representable(after.value, before.dtype))


def _sum(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    before = overflowed(before)
    mag = (before.mag + before.bound).sum(dim=-1)
    bound = before.bound.sum(dim=-1) + accumulation(mag, row_prefixes(before.value), before.dtype, KernelModel()) \
        + rounding(after.value, before.dtype)
    unit = grain(before.value)
    exact = before.exact and unit > 0 and within(mag, unit, 2.0**24)
    return partial_sums_overflow(Tracked(after.value, bound, mag, before.dtype,
                                          exact and representable(after.value, before.dtype)))


def _chain(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    """y @ y^T: operand errors propagate through |y|, plus a float32 accumulation over N terms."""
    before = overflowed(before)
    b, y = before.bound, before.value.abs() + before.bound
    bt, yt = b.transpose(-1, -2), y.transpose(-1, -2)
    mag = y @ yt
    product = prefixes(before.value, before.value.transpose(-1, -2))
    bound = b @ yt + y @ bt + accumulation(mag, product, before.dtype, ref.model) + rounding(after.value, before.dtype)
    unit = grain(before.value)
    exact = before.exact and unit > 0 and within(mag, unit * unit, 2.0**24)
    return partial_sums_overflow(Tracked(after.value, bound, mag, before.dtype,
                                          exact and representable(after.value, before.dtype)))


def _cat_mm(dim: int, left: str, right: str) -> Transfer:
    """cat([y, left @ right], dim): a second product of the inputs written beside the first."""
    def transfer(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
        second = ref.product(left, right, before.dtype)
        return Tracked(after.value, torch.cat([before.bound, second.bound], dim),
                       torch.cat([before.mag, second.mag], dim), before.dtype, before.exact and second.exact)
    return transfer


def _relu(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    """relu moves no error, and makes -inf an exact 0 (whose bound is then 0, not inf)."""
    clamped = torch.isneginf(before.value)
    zero = torch.zeros_like(before.bound)
    return Tracked(after.value, torch.where(clamped, zero, before.bound), torch.where(clamped, zero, before.mag),
                   before.dtype, before.exact)


def _softmax(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    """softmax over the last dim. An error of at most B in each input of a row moves its
    log-sum-exp by at most B, so each result s by at most s * (exp(2B) - 1). A correct kernel's own
    error, in float32: per element of the row its exp and, in an online softmax, the running sum's
    rescaling (another exp and a product) and the add; then the element's exp and the division; and
    y - max rounded moves s by at most 1.44u * s|y - max| <= 1.44u / e (GPU exp2 of y * log2(e)),
    a flushed subnormal by float32's smallest normal. The result is rounded once more."""
    before = overflowed(before)
    n, s = before.value.shape[-1], after.value
    worst = before.bound.amax(dim=-1, keepdim=True) if n else before.bound
    moved = torch.where(torch.isfinite(worst), s.abs() * torch.expm1(2 * worst), torch.inf)
    u32, f32 = unit_roundoff(torch.float32), torch.finfo(torch.float32)
    own = ((2 * LIBM_ROUNDINGS + 2) * n + LIBM_ROUNDINGS + 2) * rounding(s, torch.float32) + 2 * u32 \
        + f32.smallest_normal
    bound = moved + own + rounding(s, before.dtype)
    return Tracked(s, bound, s.abs() + bound, before.dtype, False)


SOFTMAX_MAGNITUDE = "y = (2 * y.logsumexp(dim=-1, keepdim=True) + y.shape[-1] + 2).expand_as(y)"
"""softmax's magnitude code (on |inputs|): the result is at most 1, and moves by about 2s times the
row's largest error, which the row's log-sum-exp of magnitudes (>= their max) bounds; the row's
length covers the kernel's own roundings."""


def _to_float32(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    return dataclasses.replace(before, dtype=torch.float32)


PROJECTION_WEIGHTS = (("x1.flip(-1)", "-x2"), ("x1.flip(-2)", "x2.flip(-1)"))
"""The (weight, bias) of the projections step's two more calls of the op (its scalars kept; mm has no
bias): the QKV shape, three projections of one input by weights and biases of one shape each, all
constants once frozen (freezing's concat-linear pattern fuses them: it did not with a rolled bias,
nor with two flips of it, which one node may serve). Flips and negation are exact."""
CAT_MM_ROWS = ("x0[..., : (x0.shape[-2] + 1) // 2, :]", "x1")
CAT_MM_COLS = ("x0", "x1[..., : (x1.shape[-1] + 1) // 2]")
CONSUMERS: dict[str, Consumer] = {
    "relu": Consumer("y = torch.relu(y)", _relu),
    "relu_": Consumer("y = y.relu_()", _relu),  # in-place mutation of the result
    "gelu": Consumer("y = torch.nn.functional.gelu(y)", _lipschitz(GELU_LIPSCHITZ, GELU_CANCELLATION),
                     magnitude=_scaled(GELU_LIPSCHITZ)),
    "silu": Consumer("y = torch.nn.functional.silu(y)", _lipschitz(SILU_LIPSCHITZ), magnitude=_scaled(SILU_LIPSCHITZ)),
    "sigmoid": Consumer("y = torch.sigmoid(y)", _lipschitz(0.25), magnitude="y = 0.25 * y + 1"),
    "tanh": Consumer("y = torch.tanh(y)", _lipschitz(1.0), magnitude="y = y + 1"),
    "softmax": Consumer("y = torch.softmax(y, dim=-1)", _softmax, magnitude=SOFTMAX_MAGNITUDE),
    "add_bias_row": Consumer(f"y = y + {BIAS_ROW}", _add_row),
    "add": Consumer("y = y + y"),  # doubling is exact
    "to_float32": Consumer("y = y.float()", _to_float32),
    "transpose_contiguous": Consumer("y = y.transpose(-1, -2).contiguous()"),
    "slice_step": Consumer("y = y[..., ::2, :]"),
    "narrow": Consumer("y = y[..., : (y.shape[-1] + 1) // 2]"),
    "cat_rows": Consumer("y = torch.cat([y, y], dim=-2)"),
    "cat_cols": Consumer("y = torch.cat([y, y], dim=-1)"),
    "cat_mm_rows": Consumer(f"y = torch.cat([y, {CAT_MM_ROWS[0]} @ {CAT_MM_ROWS[1]}], dim=-2)",
                            _cat_mm(-2, *CAT_MM_ROWS)),
    "cat_mm_cols": Consumer(f"y = torch.cat([y, {CAT_MM_COLS[0]} @ {CAT_MM_COLS[1]}], dim=-1)",
                            _cat_mm(-1, *CAT_MM_COLS)),
    "sum_rows": Consumer("y = y.sum(dim=-1)", _sum),
    "chain_mm": Consumer("y = y @ y.transpose(-1, -2)", _chain),
    "view_row": Consumer("y = y[..., 0, :]"),  # returns a view of the result
    "return_twice": Consumer("", output="y"),
    "mutate_input": Consumer("x0.mul_(2)", output="x0"),
    "projections": Consumer("", op_weights=PROJECTION_WEIGHTS),
}
"""Steps that add an output (return_twice, mutate_input) come last, and the steps that read the
op's inputs again (add_bias_row, projections, then the cat_mm steps) come first (the strategies keep
it so)."""
PROLOGUES = {
    "relu": "x0 = torch.relu(x0)",
    "neg": "x0 = -x0",
    "transposed_copy": "x0 = x0.transpose(-1, -2).contiguous().transpose(-1, -2)",  # a column-major copy
    **dict.fromkeys(UPCASTS, "x0 = x0.float()"),
}
"""Each prologue step's code: it rebinds x0 exactly (no rounding), so the float64 run applies it to
the values and the magnitude is |x0| after it; a plain repro's magnitude program leaves it out
(|x0| bounds each step's result), and the float64 programs leave out the upcasts (float64 already)."""
