"""Deterministic input values for a Case: the same Case always yields bit-identical tensors."""

from __future__ import annotations

import math

import torch

from strategies.case import Case, TensorSpec

EXACT_BITS = {"float32": 24, "float16": 11, "bfloat16": 8}
"""Significand bits: integers up to 2**bits are exact in the dtype."""

EXACT_SCALARS = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)
"""alpha/beta values that keep integer arithmetic exact (powers of two and zero)."""


def exact_int_range(case: Case) -> int:
    """Largest r such that integer inputs in [-r, r] keep K * r**2 well inside exact integers."""
    k = max(reduction_size(case), 1)
    bits = min(EXACT_BITS[t.dtype] for t in case.inputs)
    return max(1, min(4, math.isqrt((2 ** (bits - 2)) // k)))


def reduction_size(case: Case) -> int:
    """K: the contracted dimension (last dim of the first operand)."""
    return case.inputs[0].shape[-1]


def materialize(case: Case) -> list[torch.Tensor]:
    """Each input as `as_strided` over a fresh storage on the case's device, filled from the seed."""
    return [_materialize_one(spec, case, i) for i, spec in enumerate(case.inputs)]


def _materialize_one(spec: TensorSpec, case: Case, index: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(case.seed * 1009 + index)
    n = spec.storage_size()
    if case.value_mode == "exact_int":
        r = exact_int_range(case)
        base = torch.randint(-r, r + 1, (n,), generator=gen, dtype=torch.float64)
    else:
        base = torch.randn(n, generator=gen, dtype=torch.float64)
    dtype = getattr(torch, spec.dtype)
    storage = base.to(dtype).to(case.device)
    return torch.as_strided(storage, spec.shape, spec.stride, spec.offset)
