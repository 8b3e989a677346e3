"""Programs a Case describes, rendered as Python source: one mm-family op followed by consumer
steps. The same source runs eagerly, compiled, in float64 (the reference) and in standalone
repro scripts, so there is one definition of what a case computes.

Besides values, each step transfers an error *bound* and a *magnitude* (float64 tensors): the
bound says how far a correct low-precision result may be from the float64 one (see
oracles/numerics.py for the per-dtype terms), the magnitude is sum |terms| of each element."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch

from oracles.numerics import ACCUMULATE_U
from strategies.case import Case

Tensor = torch.Tensor
GELU_LIPSCHITZ = 1.13  # max |d gelu / dx|


@dataclasses.dataclass(frozen=True)
class OpSpec:
    code: str  # the call; {0}.. are inputs, {alpha}/{beta} params
    reference: str  # float64 semantics of the same call (inputs already float64)
    out_dtype: str | None = None  # None: the first input's dtype


OPS: dict[str, OpSpec] = {
    "mm": OpSpec("torch.mm({0}, {1})", "{0} @ {1}"),
    "addmm": OpSpec("torch.addmm({2}, {0}, {1}, beta={beta}, alpha={alpha})",
                    "{beta} * {2} + {alpha} * ({0} @ {1})"),
    "bmm": OpSpec("torch.bmm({0}, {1})", "{0} @ {1}"),
    "baddbmm": OpSpec("torch.baddbmm({2}, {0}, {1}, beta={beta}, alpha={alpha})",
                      "{beta} * {2} + {alpha} * ({0} @ {1})"),
    "matmul": OpSpec("torch.matmul({0}, {1})", "{0} @ {1}"),
    "mm_out_dtype": OpSpec("torch.mm({0}, {1}, out_dtype=torch.float32)", "{0} @ {1}", "float32"),
    "int_mm": OpSpec("torch._int_mm({0}, {1})", "{0} @ {1}", "int32"),
    "scaled_mm": OpSpec("torch._scaled_mm({0}, {1}, scale_a={2}, scale_b={3}, out_dtype=torch.bfloat16)",
                        "({0} * {2}) @ ({1} * {3})", "bfloat16"),
    "mm_plus_mm": OpSpec("torch.mm({0}, {1}) + torch.mm({2}, {3})", "{0} @ {1} + {2} @ {3}"),
}

BoundFn = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]  # (bound, magnitude) -> (bound, magnitude)


@dataclasses.dataclass(frozen=True)
class Consumer:
    """One step after the op. `code` rebinds `y`; `transfer` maps (bound, magnitude); `None` means
    the step is a pure data movement or monotone sum, so applying `code` itself to both is exact."""

    code: str
    transfer: BoundFn | None = None
    exact: bool = True  # keeps exact-integer results exact
    output: str = ""  # an extra program output ("y" again, or a mutated input "x0")


def _chain(b: Tensor, m: Tensor) -> tuple[Tensor, Tensor]:
    """y @ y^T: operand errors propagate through |y|, plus float32 accumulation over K terms."""
    mt, bt = m.transpose(-1, -2), b.transpose(-1, -2)
    mag = m @ mt
    return b @ mt + m @ bt + b @ bt + (m.shape[-1] + 2) * ACCUMULATE_U * mag, mag


def _sum(b: Tensor, m: Tensor) -> tuple[Tensor, Tensor]:
    mag = m.sum(dim=-1)
    return b.sum(dim=-1) + (m.shape[-1] + 2) * ACCUMULATE_U * mag, mag


CONSUMERS: dict[str, Consumer] = {
    "relu": Consumer("y = torch.relu(y)"),
    "relu_": Consumer("y = y.relu_()"),  # in-place mutation of the result
    "gelu": Consumer("y = torch.nn.functional.gelu(y)", lambda b, m: (GELU_LIPSCHITZ * b, GELU_LIPSCHITZ * m), exact=False),
    "add": Consumer("y = y + y"),
    "to_float32": Consumer("y = y.float()"),
    "transpose_contiguous": Consumer("y = y.transpose(-1, -2).contiguous()"),
    "slice_step": Consumer("y = y[..., ::2, :]"),
    "narrow": Consumer("y = y[..., : (y.shape[-1] + 1) // 2]"),
    "cat_rows": Consumer("y = torch.cat([y, y], dim=-2)"),
    "cat_cols": Consumer("y = torch.cat([y, y], dim=-1)"),
    "sum_rows": Consumer("y = y.sum(dim=-1)", _sum),
    "chain_mm": Consumer("y = y @ y.transpose(-1, -2)", _chain),
    "view_row": Consumer("y = y[..., 0, :]"),  # returns a view of the result
    "return_twice": Consumer("", output="y"),
    "mutate_input": Consumer("x0.mul_(2)", output="x0"),
}
"""Steps that add an output (return_twice, mutate_input) come last (the strategies keep it so)."""


def op_dtype(case: Case) -> str:
    """dtype of the op's result (before consumers)."""
    return OPS[case.op].out_dtype or case.inputs[0].dtype


def source(case: Case, reference: bool = False, magnitude: bool = False) -> str:
    """`def program(x0, x1, ...)` computing the case; returns a tuple of tensors. With `reference`:
    `def reference(...)`, the same steps with the op's float64 semantics (for float64 inputs); with
    `magnitude`: `def magnitude(...)`, those with |alpha| and |beta| (on |inputs|: sum |terms|)."""
    op = OPS[case.op]
    names = [f"x{i}" for i in range(len(case.inputs))]
    params = {"alpha": 1.0, "beta": 1.0, **case.params_dict}
    if magnitude:
        name, call, params = "magnitude", op.reference, {k: abs(v) for k, v in params.items()}
    elif reference:
        name, call = "reference", op.reference
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
    """float64 results of every program output, the error bound each may carry, and the largest
    sum|terms| met along the way (decides whether exact-integer arithmetic stayed exact)."""

    values: list[Tensor]
    bounds: list[Tensor]
    peak_magnitude: float


def expected(case: Case, tensors: Sequence[Tensor], op_bound: Callable[[Tensor, Tensor], Tensor]) -> Expected:
    """Run the program in float64 on `tensors` (float64 inputs), transferring `op_bound(value,
    magnitude)` (the op's own rounding bound) and each step's through to every output."""
    names = [f"x{i}" for i in range(len(tensors))]
    params = {"alpha": 1.0, "beta": 1.0, **case.params_dict}
    env: dict[str, Any] = {"torch": torch, **dict(zip(names, (t.clone() for t in tensors)))}
    abs_env = {"torch": torch, **dict(zip(names, (t.abs() for t in tensors)))}
    y = eval(OPS[case.op].reference.format(*names, **params), env)  # noqa: S307 - our own table
    m = eval(OPS[case.op].reference.format(*names, **{k: abs(v) for k, v in params.items()}), abs_env)  # noqa: S307
    b, peak = op_bound(y, m), _peak(m)
    extra: list[tuple[Tensor, Tensor]] = []
    for step in (CONSUMERS[c] for c in case.consumers):
        if step.output == "x0":
            exec(step.code, env)  # noqa: S102 - our own table
            extra.append((env["x0"], torch.zeros_like(env["x0"])))
            continue
        if step.code:
            y = _exec_step(step.code, y, env)
            b, m = (_exec_step(step.code, b, env), _exec_step(step.code, m, env)) if step.transfer is None \
                else step.transfer(b, m)
            peak = max(peak, _peak(m))
        if step.output == "y":
            extra.append((y, b))
    return Expected([y] + [v for v, _ in extra], [b] + [e for _, e in extra], peak)


def _peak(m: Tensor) -> float:
    return float(m.max()) if m.numel() else 0.0


def _exec_step(code: str, y: Tensor, env: dict[str, Any]) -> Tensor:
    local = {**env, "y": y.clone()}
    exec(code, local)  # noqa: S102 - our own table
    return local["y"]
