"""Deterministic input values for a Case: the same Case always yields bit-identical tensors."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from fuzz.programs import op_dtype
from strategies.case import Case, TensorSpec

EXACT_BITS = {"float32": 24, "float16": 11, "bfloat16": 8, "int32": 31, "int8": 7,
              "float8_e4m3fn": 4, "float8_e5m2": 3}
"""Significand bits: integers up to 2**bits are exact in the dtype."""
EXACT_SCALARS = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)
"""alpha/beta values that keep integer arithmetic exact (powers of two and zero)."""


def reduction_size(case: Case) -> int:
    """K: the contracted dimension (last dim of the first operand)."""
    return case.inputs[0].shape[-1]


def exact_int_range(case: Case) -> int:
    """Largest r (at most 4) such that integer inputs in [-r, r] keep K * r**2 inside the
    exact integers of the op's result dtype, with a bit to spare."""
    k = max(reduction_size(case), 1)
    return max(1, min(4, math.isqrt((2 ** (EXACT_BITS[op_dtype(case)] - 2)) // k)))


def materialize(case: Case, specs: Sequence[TensorSpec] | None = None) -> list[torch.Tensor]:
    """Each input (of the first call, or `specs`) as `as_strided` over a fresh storage on the
    case's device, filled from the seed; the inputs in `case.shared_storage` are views of one
    storage (the first one's, grown to fit them all). Fresh tensors every call: programs may
    mutate inputs."""
    specs = list(specs or case.inputs)
    shared = list(case.shared_storage) if len(case.shared_storage) > 1 else []
    storages = {i: _storage(case, specs[i], i, specs[i].storage_size()) for i in range(len(specs)) if i not in shared}
    if shared:
        common = _storage(case, specs[shared[0]], shared[0], max(specs[i].storage_size() for i in shared))
        storages.update(dict.fromkeys(shared, common))
    return [torch.as_strided(storages[i], spec.shape, spec.stride, spec.offset) for i, spec in enumerate(specs)]


def _values(case: Case, spec: TensorSpec, index: int, n: int, gen: torch.Generator) -> torch.Tensor:
    if case.op == "scaled_mm" and index >= 2:  # scales: positive powers of two keep products exact
        return 2.0 ** torch.randint(-2, 3, (n,), generator=gen, dtype=torch.float64)
    if case.value_mode == "exact_int" or spec.dtype == "int8":
        r = exact_int_range(case) if case.value_mode == "exact_int" else 8
        return torch.randint(-r, r + 1, (n,), generator=gen, dtype=torch.float64)
    values = torch.randn(n, generator=gen, dtype=torch.float64)
    if case.value_mode == "sparse":
        return values * (torch.rand(n, generator=gen, dtype=torch.float64) < 0.1)
    if case.value_mode == "large":
        return values * large_scale(case)
    return values


def large_scale(case: Case) -> float:
    """Factor of the "large" value mode: results near the top of the dtype's range, not past it."""
    k = max(reduction_size(case), 1)
    limit = torch.finfo(getattr(torch, op_dtype(case))).max
    return 2.0 ** math.floor(math.log2(math.sqrt(limit / (16 * k))))


def storage_seed(case: Case, index: int) -> int:
    """Seed of the generator that fills input `index`'s storage."""
    return case.seed * 1009 + index


def _storage(case: Case, spec: TensorSpec, index: int, size: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(storage_seed(case, index))
    return _values(case, spec, index, size, gen).to(getattr(torch, spec.dtype)).to(case.device)
