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

from fuzz.run.gradients import gradient_bounds, train
from fuzz.run.steps import CONSUMERS, PROLOGUES
from fuzz.run.tracking import Reference, Tracked, overflowed, scalar_representable
from oracles.error_model import KernelModel, representable, rounding
from strategies.case import Case
from strategies.vocabulary import CAST_FROM, FUSED_THIRD, INPUT_COUNT, INT8_FORMS, RESULT_MUTATING_STEPS, UPCASTS

Tensor = torch.Tensor


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
SPELLED = {
    ("mm", "operator"): "{0} @ {1}",
    ("mm", "method"): "{0}.mm({1})",
    ("mm", "linear"): "torch.nn.functional.linear({0}, {1}.t())",  # a weight stored (N, K), as nn.Linear's
    ("mm", "einsum"): "torch.einsum('mk,kn->mn', {0}, {1})",
    ("addmm", "operator"): "{0} @ {1} + {2}",
    ("addmm", "linear"): "torch.nn.functional.linear({0}, {1}.t(), {2})",
    ("bmm", "operator"): "{0} @ {1}",
    ("bmm", "method"): "{0}.bmm({1})",
    ("bmm", "einsum"): "torch.einsum('bmk,bkn->bmn', {0}, {1})",
    ("baddbmm", "operator"): "{0} @ {1} + {2}",
    ("matmul", "operator"): "{0} @ {1}",
    ("matmul", "method"): "{0}.matmul({1})",
    ("mm", "out"): "torch.mm({0}, {1}, out={2})",
    ("addmm", "out"): "torch.addmm({2}, {0}, {1}, beta={beta}, alpha={alpha}, out={3})",
    ("bmm", "out"): "torch.bmm({0}, {1}, out={2})",
    ("baddbmm", "out"): "torch.baddbmm({2}, {0}, {1}, beta={beta}, alpha={alpha}, out={3})",
}
"""The op as users also write it (Case.spelling; "call" is OpSpec.code): the same float64
semantics, and for `a @ b + bias` the rounding of each term that _op_result already allows. An
out= buffer holds the op's result (the float64 programs assign it), and is the program's last output."""
WOQ = "({0} @ {1}.t().to({0}.dtype)) * {2}"
"""An int8 weight form's mm: {1} the int8 weight held (N, K), {2} its scale (inductor 2.13's woq
pattern 4; `F.linear(x, w.to(x.dtype)) * scale` matches only with 3-d activations)."""


def op_dtype(case: Case) -> str:
    """dtype of the op's result (before consumers)."""
    return OPS[case.op].out_dtype or case.inputs[0].dtype


def _params(case: Case) -> dict[str, float]:
    """alpha and beta as the call passes them: integers for an integer product (eager refuses floats)."""
    params = {"alpha": 1.0, "beta": 1.0, **case.params_dict}
    return {k: int(v) for k, v in params.items()} if case.integer_product() else params


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
        name, call = "program", SPELLED.get((case.op, case.spelling), op.code)
    if case.weight_form in INT8_FORMS:  # on float64 inputs held as the module holds them, its own reference
        names, call = [*names, f"x{len(names)}"], WOQ
    prologue = [] if magnitude else [f"    {PROLOGUES[p]}" for p in case.prologue  # |x0| bounds each step's result
                                     if not (reference and p in UPCASTS)]
    lines = [f"def {name}({', '.join(names)}):", *prologue, f"    y = {call.format(*names, **params)}"]
    if case.out_buffer is not None and (reference or magnitude):
        lines.append(f"    {names[case.out_buffer]} = y  # what out= holds")
    again_call = op.code if case.out_buffer is not None and not (reference or magnitude) else call
    outputs = ["y"]
    for step in (CONSUMERS[c] for c in case.consumers):
        if step.op_weights:  # the op again, with other weights
            exprs = [[f"({e}).abs()" if magnitude else e for e in pair] for pair in step.op_weights]
            again = (again_call.format(*(names[0], w, b)[:INPUT_COUNT[case.op]], **params) for w, b in exprs)
            lines.append(f"    y = torch.cat([y, {', '.join(again)}], dim=-1)")
        if code := (magnitude and step.magnitude) or step.code:
            lines.append(f"    {code}")
        if step.output:
            outputs.append(step.output)
    if case.out_buffer is not None:
        outputs.append(names[case.out_buffer])
    lines.append(f"    return ({', '.join(outputs)},)")
    return "\n".join(lines) + "\n"


def compile_source(code: str, name: str = "program") -> Callable[..., tuple[Tensor, ...]]:
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(code, "<mm-fuzz program>", "exec"), namespace)  # noqa: S102 - our own rendered source
    return namespace[name]


def call(case: Case, fn: Callable[..., tuple[Tensor, ...]], args: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """fn(*args), the program's outputs; a training case's training step: its outputs, then each
    input's gradient (fuzz.run.gradients)."""
    return train(fn, list(args), case.seed) if case.backward else fn(*args)


def output_labels(case: Case) -> list[str]:
    """Each output's name in a check's label: out0.. for the program's results (an out= buffer
    last), then a training case's gradients as x0.grad.."""
    results = 1 + sum(bool(CONSUMERS[c].output) for c in case.consumers) + (case.out_buffer is not None)
    grads = [f"x{i}.grad" for i in range(len(case.inputs))] if case.backward else []
    return [f"out{j}" for j in range(results)] + grads


def run(case: Case, tensors: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """The case's program, eagerly, on the arguments the module would pass it."""
    first, weights = split_inputs(case, tensors)
    return call(case, compile_source(source(case)),
                [*activations(case, first), *weight_args(case, held_weights(case, weights))])


class Program(torch.nn.Module):
    """The case's program as a module; with frozen weights, it holds inputs[1:] (held_weights) as
    parameters (an int8 weight and its scale as buffers, as quantized models keep them)."""

    def __init__(self, case: Case, weights: Sequence[Tensor] = ()) -> None:
        super().__init__()
        self.case = case
        self.program = compile_source(source(case))
        held = held_weights(case, weights)
        self.n_weights = len(held)
        for i, w in enumerate(held):  # plain attributes: torch 2.11's dynamo cannot unpack a ParameterList
            if case.weight_form in INT8_FORMS:
                self.register_buffer(f"w{i}", w)
            else:
                self.register_parameter(f"w{i}", torch.nn.Parameter(w, requires_grad=False))

    def forward(self, *inputs: Tensor) -> Any:
        weights = weight_args(self.case, [getattr(self, f"w{i}") for i in range(self.n_weights)])
        return self.program(*activations(self.case, inputs), *weights)


OTHER_WEIGHTS = " (FX graph cache, other weights)"
"""The label of the outputs of a frozen case's program loaded from the cache with other weights."""


def warm_cache_values(case: Case) -> Case:
    """The case whose program the warm-cache compile runs: with frozen weights, the same program
    on other values (the next seed): another model of the same architecture (a frozen parameter
    enters the FX graph cache's key by its metadata only); else the case itself (a user's second
    run: inputs are arguments, which the key never holds)."""
    return dataclasses.replace(case, seed=case.seed + 1) if case.frozen_weights else case


def split_inputs(case: Case, tensors: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(forward arguments, frozen weights) for `Program` (the cast form's activation in float32)."""
    if case.weight_form == "cast":
        return [tensors[0].to(getattr(torch, CAST_FROM))], list(tensors[1:])
    if case.frozen_weights:
        return list(tensors[:1]), list(tensors[1:])
    return list(tensors), []


def activations(case: Case, args: Sequence[Tensor]) -> list[Tensor]:
    """The program's activations from the module's forward arguments: the cast form casts its own."""
    if case.weight_form == "cast":
        return [args[0].to(getattr(torch, case.inputs[0].dtype))]
    return list(args)


def held_weights(case: Case, weights: Sequence[Tensor]) -> list[Tensor]:
    """What the module holds for the frozen weights (inputs[1:], then an int8 form's scale): the
    weights; a fused form: input 1 as its third of a fused weight (NaN in the other thirds, the
    dtype's largest value for an integer weight, so a kernel reading past its slice is seen); an
    int8 form: input 1 as (N, K), then the scale; the cast form: each in float32."""
    if case.weight_form == "cast":
        return [w.to(getattr(torch, CAST_FROM)) for w in weights]
    if case.weight_form in FUSED_THIRD:
        pad = torch.nan if weights[0].is_floating_point() else torch.iinfo(weights[0].dtype).max
        thirds = [torch.full_like(weights[0], pad)] * 3
        thirds[FUSED_THIRD[case.weight_form]] = weights[0]
        return [torch.cat(thirds, dim=-1), *weights[1:]]
    if case.weight_form in INT8_FORMS:
        return [weights[0].t(), *weights[1:]]
    return list(weights)


def weight_args(case: Case, held: Sequence[Tensor]) -> list[Tensor]:
    """The program's weight arguments from what the module holds: a fused weight's slice, as a
    model's forward takes its share of a fused qkv weight; the cast form's weights in the case's dtype."""
    if case.weight_form == "cast":
        return [w.to(getattr(torch, spec.dtype)) for w, spec in zip(held, case.inputs[1:], strict=True)]
    if case.weight_form in FUSED_THIRD:
        n, third = held[0].shape[-1] // 3, FUSED_THIRD[case.weight_form]
        return [held[0][..., third * n:(third + 1) * n], *held[1:]]
    return list(held)


@dataclasses.dataclass
class Expected:
    """float64 results of every program output, the error bound a correct kernel's output may
    carry, and for each output whether a correct kernel is bit-exact (every rounded quantity
    representable; never for a gradient)."""

    values: list[Tensor]
    bounds: list[Tensor]
    exact: list[bool]


def expected(case: Case, tensors: Sequence[Tensor], model: KernelModel) -> Expected:
    """Run the program in float64 on `tensors` (the dtype-rounded inputs, as float64), carrying
    the bound of a correct kernel under `model` through every step to every output."""
    names = [f"x{i}" for i in range(len(tensors))]
    ref = Reference({"torch": torch, **dict(zip(names, (t.clone() for t in tensors), strict=True))},
                    {"torch": torch, **dict(zip(names, (t.abs() for t in tensors), strict=True))}, _params(case), model)
    for pre in (p for p in case.prologue if p not in UPCASTS):  # exact: x0's values change, its magnitude is theirs
        exec(PROLOGUES[pre], ref.env)  # noqa: S102 - our own table
        ref.abs_env["x0"] = ref.env["x0"].abs()
    y = _op_result(case, ref)
    held = y  # an out= buffer: the op's result, and what a step updating the result in place makes of it
    outputs: list[Tracked] = []
    for name in case.consumers:
        step, before = CONSUMERS[name], y
        if step.op_weights:
            y = _projections(case, ref, y, step.op_weights)
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
        if name in RESULT_MUTATING_STEPS and before is held:
            held = y
    outputs.insert(0, y)
    if case.out_buffer is not None:
        outputs.append(held)
    exact = all(t.exact for t in outputs)
    result = Expected([t.value for t in outputs], [t.bound for t in outputs], [exact] * len(outputs))
    if case.backward:
        grads = train(compile_source(source(case, reference=True), "reference"), [t.clone() for t in tensors],
                      case.seed)[len(outputs):]
        magnitude = compile_source(source(case, magnitude=True), "magnitude")
        result.values += [g.detach() for g in grads]
        result.bounds += gradient_bounds(case, magnitude, tensors, grads, exact)
        result.exact += [False] * len(grads)
    return result


def _projections(case: Case, ref: Reference, y: Tracked, weights: tuple[tuple[str, str], ...]) -> Tracked:
    """cat([y, op(x0, w, b) for (w, b) in weights], -1): each call as the op's own result on them."""
    parts = [y]
    for w, b in weights:
        swap = dict(zip(("x1", "x2")[:INPUT_COUNT[case.op] - 1], (w, b), strict=False))  # mm: no bias
        parts.append(_op_result(case, dataclasses.replace(
            ref, env={**ref.env, **{k: eval(e, ref.env) for k, e in swap.items()}},  # noqa: S307 - our table
            abs_env={**ref.abs_env, **{k: eval(e, ref.env).abs() for k, e in swap.items()}})))  # noqa: S307 - ours
    return Tracked(torch.cat([p.value for p in parts], -1), torch.cat([p.bound for p in parts], -1),
                   torch.cat([p.mag for p in parts], -1), y.dtype, all(p.exact for p in parts))


def _op_result(case: Case, ref: Reference) -> Tracked:
    """The op's own result: its terms summed, each product accumulated and every quantity the
    kernel may materialize in the output dtype rounded once."""
    dtype = getattr(torch, op_dtype(case))
    if case.weight_form in INT8_FORMS:
        return _scaled_product(ref, dtype)
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


def _scaled_product(ref: Reference, dtype: torch.dtype) -> Tracked:
    """An int8 weight form's `(x0 @ x1) * x2` (x2 the scale): dequantizing the weight is exact (int8
    fits every float dtype), the product as a kernel forms it, rounded to `dtype` (eager) or not
    (a fused woq kernel: covered by the same bound), times the scale, rounded once more. Where the
    product may have overflowed the dtype, or the scale is zero under an unbounded product, anything."""
    product, scale = overflowed(ref.product("x0", "x1", dtype)), ref.env["x2"].abs()
    value = product.value * ref.env["x2"]
    bound = torch.where(product.bound.isinf(), torch.inf, product.bound * scale) + rounding(value, dtype)
    mag = torch.where(product.mag.isinf(), torch.inf, product.mag * scale)
    return Tracked(value, bound, mag, dtype, product.exact and representable(value, dtype))


def _total(tensors: Iterable[Tensor]) -> Tensor:
    """sum() of tensors (never none: every op has a term): a tensor, which sum()'s type does not say."""
    return cast(Tensor, sum(tensors))


def _exec_step(code: str, y: Tensor, env: dict[str, Any]) -> Tensor:
    local = {**env, "y": y.clone()}
    exec(code, local)  # noqa: S102 - our own table
    return local["y"]
