"""Programs a Case describes, rendered as Python source: one mm-family op followed by consumer
steps. The same source runs eagerly, compiled, in float64 (the reference) and in standalone
repro scripts, so there is one definition of what a case computes.

Besides values, the float64 run carries an error *bound* and a *magnitude* (float64 tensors)
through every step: the bound says how far a correct kernel's result may be from the float64 one
(oracles/error_model.py has the terms), the magnitude is sum |terms| of each element (what
accumulation errors scale with). Each rounding to a low-precision dtype is counted once, where it
happens; the run also says whether every rounded quantity is exactly representable (then a
correct kernel is bit-exact)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import torch

from oracles.error_model import (
    KernelModel,
    accumulation,
    prefixes,
    representable,
    rounding,
    row_prefixes,
    unit_roundoff,
)
from strategies.case import Case

Tensor = torch.Tensor
GELU_LIPSCHITZ = 1.13  # max |d gelu / dx|
FLOAT32_MAX = torch.finfo(torch.float32).max  # a correct kernel's accumulators are float32


@dataclasses.dataclass(frozen=True)
class Term:
    """One addend of an op's result: `scalar * (left @ right)`, or `scalar * left` when `right` is
    None. A zero scalar drops the term (BLAS semantics: torch ignores `input` when beta == 0)."""

    left: str
    right: str | None = None
    scalar: str | None = None


@dataclasses.dataclass(frozen=True)
class OpSpec:
    code: str  # the call; {0}.. are inputs, {alpha}/{beta} params
    terms: tuple[Term, ...]  # float64 semantics: the result is the sum of these
    out_dtype: str | None = None  # None: the first input's dtype


PRODUCT = (Term("{0}", "{1}"),)
OPS: dict[str, OpSpec] = {
    "mm": OpSpec("torch.mm({0}, {1})", PRODUCT),
    "addmm": OpSpec("torch.addmm({2}, {0}, {1}, beta={beta}, alpha={alpha})",
                    (Term("{2}", scalar="beta"), Term("{0}", "{1}", "alpha"))),
    "bmm": OpSpec("torch.bmm({0}, {1})", PRODUCT),
    "baddbmm": OpSpec("torch.baddbmm({2}, {0}, {1}, beta={beta}, alpha={alpha})",
                      (Term("{2}", scalar="beta"), Term("{0}", "{1}", "alpha"))),
    "matmul": OpSpec("torch.matmul({0}, {1})", PRODUCT),
    "mm_out_dtype": OpSpec("torch.mm({0}, {1}, out_dtype=torch.float32)", PRODUCT, "float32"),
    "int_mm": OpSpec("torch._int_mm({0}, {1})", PRODUCT, "int32"),
    "scaled_mm": OpSpec("torch._scaled_mm({0}, {1}, scale_a={2}, scale_b={3}, out_dtype=torch.bfloat16)",
                        (Term("({0} * {2})", "({1} * {3})"),), "bfloat16"),
    "mm_plus_mm": OpSpec("torch.mm({0}, {1}) + torch.mm({2}, {3})", (Term("{0}", "{1}"), Term("{2}", "{3}"))),
}


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
        exact = _exact_sum(a, b, mag, dtype, self.model) and representable(value, dtype)
        return _partial_sums_overflow(Tracked(value, bound, mag, dtype, exact))


def _unbounded(t: Tracked, past: Tensor) -> Tracked:
    """`t` with an infinite bound (any value, NaN included, is allowed) where `past` holds."""
    return dataclasses.replace(t, bound=torch.where(past, torch.inf, t.bound), exact=False) if past.any() else t


def _partial_sums_overflow(t: Tracked) -> Tracked:
    """Unbounded where a float32 partial sum of the step may pass float32's range (its magnitude
    does), though the result itself would fit."""
    return _unbounded(t, torch.isfinite(t.value) & (t.mag > FLOAT32_MAX))


def _overflowed(t: Tracked) -> Tracked:
    """`t` as a step that mixes its elements reads it: where a correct kernel's value may have
    overflowed to an infinity, what that step makes of it (inf - inf is NaN, -inf * 0 too) is
    anything. (Left alone, such an element is judged as an overflow to the reference's own infinity.)"""
    if not t.dtype.is_floating_point:
        return t
    return _unbounded(t, torch.isfinite(t.value) & (t.value.abs() + t.bound > torch.finfo(t.dtype).max))


Transfer = Callable[[Tracked, Tracked, Reference], Tracked]  # (before the step, after it in float64, ...) -> after


@dataclasses.dataclass(frozen=True)
class Consumer:
    """One step after the op. `code` rebinds `y` (it may read the inputs x0..); `transfer` gives
    the step's result with its bound and magnitude; None means the step only moves data, so its
    code applied to bound and magnitude is exact."""

    code: str
    transfer: Transfer | None = None
    output: str = ""  # an extra program output ("y" again, or a mutated input "x0")


def _gelu(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    before = _overflowed(before)
    return Tracked(after.value, GELU_LIPSCHITZ * before.bound + rounding(after.value, before.dtype),
                   GELU_LIPSCHITZ * before.mag, before.dtype, False)


def _sum(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    before = _overflowed(before)
    mag = (before.mag + before.bound).sum(dim=-1)
    bound = before.bound.sum(dim=-1) + accumulation(mag, row_prefixes(before.value), before.dtype, KernelModel()) \
        + rounding(after.value, before.dtype)
    grain = _grain(before.value)
    exact = before.exact and grain > 0 and _within(mag, grain, 2.0**24)
    return _partial_sums_overflow(Tracked(after.value, bound, mag, before.dtype,
                                          exact and representable(after.value, before.dtype)))


def _chain(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    """y @ y^T: operand errors propagate through |y|, plus a float32 accumulation over N terms."""
    before = _overflowed(before)
    b, y = before.bound, before.value.abs() + before.bound
    bt, yt = b.transpose(-1, -2), y.transpose(-1, -2)
    mag = y @ yt
    product = prefixes(before.value, before.value.transpose(-1, -2))
    bound = b @ yt + y @ bt + accumulation(mag, product, before.dtype, ref.model) + rounding(after.value, before.dtype)
    grain = _grain(before.value)
    exact = before.exact and grain > 0 and _within(mag, grain * grain, 2.0**24)
    return _partial_sums_overflow(Tracked(after.value, bound, mag, before.dtype,
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


def _to_float32(before: Tracked, after: Tracked, ref: Reference) -> Tracked:
    return dataclasses.replace(before, dtype=torch.float32)


CAT_MM_ROWS = ("x0[..., : (x0.shape[-2] + 1) // 2, :]", "x1")
CAT_MM_COLS = ("x0", "x1[..., : (x1.shape[-1] + 1) // 2]")
CONSUMERS: dict[str, Consumer] = {
    "relu": Consumer("y = torch.relu(y)", _relu),
    "relu_": Consumer("y = y.relu_()", _relu),  # in-place mutation of the result
    "gelu": Consumer("y = torch.nn.functional.gelu(y)", _gelu),
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
}
"""Steps that add an output (return_twice, mutate_input) come last, and the cat_mm steps (which
read the op's inputs again) come first (the strategies keep it so)."""


def op_dtype(case: Case) -> str:
    """dtype of the op's result (before consumers)."""
    return OPS[case.op].out_dtype or case.inputs[0].dtype


def _params(case: Case) -> dict[str, float]:
    return {"alpha": 1.0, "beta": 1.0, **case.params_dict}


def reference_code(op: OpSpec) -> str:
    """The op's float64 semantics as one expression (the sum of its terms; {alpha}/{beta} params)."""
    parts = []
    for term in op.terms:
        value = f"{term.left} @ {term.right}" if term.right else term.left
        parts.append(f"{{{term.scalar}}} * ({value})" if term.scalar else value)
    return " + ".join(parts)


def source(case: Case, reference: bool = False, magnitude: bool = False) -> str:
    """`def program(x0, x1, ...)` computing the case; returns a tuple of tensors. With `reference`:
    `def reference(...)`, the same steps with the op's float64 semantics (for float64 inputs); with
    `magnitude`: `def magnitude(...)`, those with |alpha| and |beta| (on |inputs|: sum |terms|)."""
    op = OPS[case.op]
    names = [f"x{i}" for i in range(len(case.inputs))]
    params = _params(case)
    if magnitude:
        name, call, params = "magnitude", reference_code(op), {k: abs(v) for k, v in params.items()}
    elif reference:
        name, call = "reference", reference_code(op)
    else:
        name, call = "program", op.code
    lines = [f"def {name}({', '.join(names)}):", f"    y = {call.format(*names, **params)}"]
    outputs = ["y"]
    for step in (CONSUMERS[c] for c in case.consumers):
        if step.code:
            lines.append(f"    {step.code}")
        if step.output:
            outputs.append(step.output)
    lines.append(f"    return ({', '.join(outputs)},)")
    return "\n".join(lines) + "\n"


def compile_source(code: str) -> Callable[..., tuple[Tensor, ...]]:
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(code, "<mm-fuzz program>", "exec"), namespace)  # noqa: S102 - our own rendered source
    return namespace["program"]


def run(case: Case, tensors: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """The case's program, eagerly."""
    return compile_source(source(case))(*tensors)


class Program(torch.nn.Module):
    """The case's program as a module; with frozen weights, inputs[1:] are its parameters."""

    def __init__(self, case: Case, weights: Sequence[Tensor] = ()) -> None:
        super().__init__()
        self.program = compile_source(source(case))
        self.n_weights = len(weights)
        for i, w in enumerate(weights):  # plain attributes: torch 2.11's dynamo cannot unpack a ParameterList
            self.register_parameter(f"w{i}", torch.nn.Parameter(w, requires_grad=False))

    def forward(self, *inputs: Tensor) -> Any:
        return self.program(*inputs, *[getattr(self, f"w{i}") for i in range(self.n_weights)])


def split_inputs(case: Case, tensors: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(forward arguments, frozen weights) for `Program`."""
    if case.frozen_weights:
        return list(tensors[:1]), list(tensors[1:])
    return list(tensors), []


@dataclasses.dataclass
class Expected:
    """float64 results of every program output, the error bound a correct kernel's output may
    carry, and whether a correct kernel is bit-exact (every rounded quantity representable)."""

    values: list[Tensor]
    bounds: list[Tensor]
    exact: bool


def expected(case: Case, tensors: Sequence[Tensor], model: KernelModel) -> Expected:
    """Run the program in float64 on `tensors` (the dtype-rounded inputs, as float64), carrying
    the bound of a correct kernel under `model` through every step to every output."""
    names = [f"x{i}" for i in range(len(tensors))]
    ref = Reference({"torch": torch, **dict(zip(names, (t.clone() for t in tensors), strict=True))},
                    {"torch": torch, **dict(zip(names, (t.abs() for t in tensors), strict=True))}, _params(case), model)
    y = _op_result(case, ref)
    outputs: list[Tracked] = []
    for step in (CONSUMERS[c] for c in case.consumers):
        if step.output == "x0":
            exec(step.code, ref.env)  # noqa: S102 - our own table
            x0 = ref.env["x0"]
            outputs.append(Tracked(x0, torch.zeros_like(x0), x0.abs(), y.dtype, True))
            continue
        if step.code:
            after = _exec_step(step.code, y.value, ref.env)
            y = step.transfer(y, Tracked(after, after, after, y.dtype, y.exact), ref) if step.transfer else \
                Tracked(after, _exec_step(step.code, y.bound, ref.env), _exec_step(step.code, y.mag, ref.env),
                        y.dtype, y.exact)
        if step.output == "y":
            outputs.append(y)
    outputs.insert(0, y)
    return Expected([t.value for t in outputs], [t.bound for t in outputs], all(t.exact for t in outputs))


def _op_result(case: Case, ref: Reference) -> Tracked:
    """The op's own result: its terms summed, each product accumulated and every quantity the
    kernel may materialize in the output dtype rounded once."""
    dtype = getattr(torch, op_dtype(case))
    parts = []
    for term in OPS[case.op].terms:
        scale = ref.params[term.scalar] if term.scalar else 1.0
        left = term.left.format(*(f"x{i}" for i in range(len(case.inputs))))
        if term.right is None:
            value = eval(left, ref.env)  # noqa: S307 - our own table
            part = Tracked(value, torch.zeros_like(value), value.abs(), dtype, True)
        else:
            part = ref.product(left, term.right.format(*(f"x{i}" for i in range(len(case.inputs)))), dtype)
            part.bound = part.bound - rounding(part.value, dtype)  # rounded below, with the sum
        if scale == 0:
            part = Tracked(torch.zeros_like(part.value), torch.zeros_like(part.value), torch.zeros_like(part.value),
                           dtype, True)
        scaled = Tracked(scale * part.value, abs(scale) * part.bound, abs(scale) * part.mag, dtype, part.exact)
        if not scalar_representable(scale, dtype):  # a kernel may round the scalar to the dtype first
            scaled = Tracked(scaled.value, scaled.bound + rounding(scaled.value, dtype), scaled.mag, dtype, False)
        parts.append(scaled)
    value = _total(p.value for p in parts)
    bound = _total(p.bound for p in parts) + rounding(value, dtype)
    exact = all(p.exact for p in parts) and representable(value, dtype)
    if len(parts) > 1:  # a kernel may round each term (e.g. alpha * (a @ b)) before adding them
        bound = bound + _total(rounding(p.value, dtype) for p in parts)
        exact = exact and all(representable(p.value, dtype) for p in parts)
    return Tracked(value, bound, _total(p.mag for p in parts), dtype, exact)


def _total(tensors: Iterable[Tensor]) -> Tensor:
    """sum() of tensors (never none: every op has a term): a tensor, which sum()'s type does not say."""
    return cast(Tensor, sum(tensors))


def scalar_representable(scale: float, dtype: torch.dtype) -> bool:
    """The scalar survives rounding to `dtype` (any scalar is, for integer results: no rounding)."""
    return not dtype.is_floating_point or representable(torch.tensor([scale], dtype=torch.float64), dtype)


def _exact_sum(a: Tensor, b: Tensor, mag: Tensor, dtype: torch.dtype, model: KernelModel) -> bool:
    """Whether a correct kernel forms `a @ b` without any rounding: every product and partial sum
    is a multiple of the operands' grains and stays within the accumulator's exact range (and
    within the output dtype's when partial sums may be rounded to it)."""
    if not torch.isfinite(mag).all():
        return False
    grain_a, grain_b = _grain(a), _grain(b)
    if grain_a * grain_b == 0.0:
        return False
    if not dtype.is_floating_point:
        return _within(mag, grain_a * grain_b, 2.0**31)
    limit = 2.0**24
    if model.half_partials and dtype in (torch.float16, torch.bfloat16):
        limit = 1.0 / unit_roundoff(dtype)
    tf32_exact = not model.tf32 or (_within(a.abs(), grain_a, 2.0**11) and _within(b.abs(), grain_b, 2.0**11))
    return tf32_exact and _within(mag, grain_a * grain_b, limit)


def _within(mag: Tensor, grain: float, limit: float) -> bool:
    """Every element of `mag`, counted in units of `grain`, is at most `limit`."""
    return not mag.numel() or float(mag.max()) / grain <= limit


def _grain(t: Tensor) -> float:
    """The largest power of two (at most 1) every element is a multiple of; 0 when there is none
    down to 2^-30 (e.g. normal random values)."""
    finite = t[torch.isfinite(t)]
    if not bool(torch.all(torch.remainder(finite * 2.0**30, 1.0) == 0)):
        return 0.0
    return next(2.0**-e for e in range(31) if bool(torch.all(torch.remainder(finite * 2.0**e, 1.0) == 0)))


def _exec_step(code: str, y: Tensor, env: dict[str, Any]) -> Tensor:
    local = {**env, "y": y.clone()}
    exec(code, local)  # noqa: S102 - our own table
    return local["y"]
