"""The mm-family programs a Case names, as plain torch functions and as a module to compile."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from strategies.case import Case

Tensor = torch.Tensor


def _mm(a: Tensor, b: Tensor) -> Tensor:
    return torch.mm(a, b)


def _addmm(a: Tensor, b: Tensor, bias: Tensor, alpha: float = 1.0, beta: float = 1.0) -> Tensor:
    return torch.addmm(bias, a, b, beta=beta, alpha=alpha)


def _bmm(a: Tensor, b: Tensor) -> Tensor:
    return torch.bmm(a, b)


OP_FUNCTIONS: dict[str, Callable[..., Tensor]] = {"mm": _mm, "addmm": _addmm, "bmm": _bmm}
"""op -> function(*inputs, **params); inputs in Case order (the activation first)."""

ATEN_OPS = {"mm": "aten.mm", "addmm": "aten.addmm", "bmm": "aten.bmm"}


def apply(case: Case, tensors: Sequence[Tensor], params: dict[str, float] | None = None) -> Tensor:
    """Run the case's op eagerly on `tensors` (params default to the case's)."""
    return OP_FUNCTIONS[case.op](*tensors, **(case.params_dict if params is None else params))


class Program(torch.nn.Module):
    """The case's op as a module; with frozen weights, inputs[1:] are its parameters."""

    def __init__(self, case: Case, weights: Sequence[Tensor] = ()) -> None:
        super().__init__()
        self.fn = OP_FUNCTIONS[case.op]
        self.params_kw = case.params_dict
        self.n_weights = len(weights)
        for i, w in enumerate(weights):  # plain attributes: torch 2.11's dynamo cannot unpack a ParameterList
            self.register_parameter(f"w{i}", torch.nn.Parameter(w, requires_grad=False))

    def forward(self, *inputs: Tensor) -> Any:
        return self.fn(*inputs, *[getattr(self, f"w{i}") for i in range(self.n_weights)], **self.params_kw)


def split_inputs(case: Case, tensors: Sequence[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(forward arguments, frozen weights) for `Program`."""
    if case.frozen_weights:
        return list(tensors[:1]), list(tensors[1:])
    return list(tensors), []
