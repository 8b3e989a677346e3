"""Training cases (`Case.backward`): the program's outputs differentiated with fixed upstream
gradients, each input's `.grad` an output too, and the float64 reference and error bound of
those gradients.

`train` (fuzz.run.train_step) is the training step; `TRAIN` its source, which plain repro scripts print.
The bound: a training case's steps are multilinear (strategies.case.BACKWARD_STEPS), so each
gradient element is a signed sum of products of inputs, upstream gradients and scalars, and the
gradient of the magnitude program (|inputs|, |scalars|) with |upstream| is the sum of |terms| of
each element. A correct forward and backward pass rounds at most `roundings(case)` = R times per
term path (each product's float32 accumulation over at most L terms, L the largest tensor's size;
each rounding to the dtype), so its error is at most ((1 + 2 L u32)(1 + u))^R - 1 times that
magnitude (2 u32 per addition: a truncating tensor-core accumulator too), plus underflow."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from fuzz.run.train_step import train
from strategies.case import Case

__all__ = ["MASKING_STEPS", "TRAIN", "gradient_bounds", "roundings", "train"]

MASKING_STEPS = ("relu", "relu_")
"""Steps whose gradient masks by the sign of their input: right only where that input is exact."""

TRAIN = inspect.getsource(train)
"""The training step's source, as a plain repro script prints it."""


def roundings(case: Case) -> int:
    """Roundings along any term's path through the forward and backward pass: the op's product, its
    terms' sum and their rounding, two per step each way, the gradient accumulated into `.grad`."""
    return 6 + 4 * len(case.consumers)


class _Largest(TorchDispatchMode):
    """The largest |value| any op computes (forward and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0.0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel():
                self.largest = max(self.largest, float(t.detach().abs().max()))
        return out


def gradient_bounds(case: Case, magnitude: Callable[..., Any], wide: Sequence[torch.Tensor],
                    references: Sequence[torch.Tensor], forward_exact: bool) -> list[torch.Tensor]:
    """The bound of each gradient (`references`: the float64 gradients): the magnitude program's
    gradients on |inputs| with |upstream| times the relative error of `roundings` roundings, plus
    underflow; infinite everywhere where any quantity of that computation may overflow the dtype,
    or where a relu masks by the sign of an inexact value (a rounded zero may flip it)."""
    finfo = torch.finfo(getattr(torch, case.inputs[0].dtype))
    watch = _Largest()
    with watch:
        out = train(magnitude, [t.abs().clone() for t in wide], case.seed, magnitude=True)
    mags = out[len(out) - len(wide):]
    longest = max([t.numel() for t in (*wide, *out)] + [1])
    n = roundings(case)
    relative = ((1 + 2 * longest * 2.0**-24) * (1 + finfo.eps / 2)) ** n - 1
    unknown = watch.largest > finfo.max / 2 or (not forward_exact and bool(set(case.consumers) & set(MASKING_STEPS)))
    return [torch.full_like(r, torch.inf) if unknown else relative * m.detach() + n * finfo.tiny * finfo.eps
            for m, r in zip(mags, references, strict=True)]
