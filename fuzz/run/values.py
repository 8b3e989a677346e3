"""Deterministic input values for a Case: the same Case always yields bit-identical tensors.

Storage elements outside every view of a storage (padding, stride gaps, an offset's prefix) hold
NaN in floating-point storages: a kernel that reads them (an unmasked load) leaks NaN into its
result. The `nonfinite` value mode also puts NaN and infinities inside the views, where their
effect is defined (an addmm/baddbmm bias with beta == 0 must be ignored)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from fuzz.run.programs import op_dtype
from strategies.case import Case, TensorSpec
from strategies.vocabulary import INT8_FORMS, INTEGER_BITS, INTEGER_DTYPES, INTEGER_HEADROOM_BITS

EXACT_BITS = {"float32": 24, "float16": 11, "bfloat16": 8, "int32": 31, "int8": 7,
              "float8_e4m3fn": 4, "float8_e5m2": 3}
"""Significand bits: integers up to 2**bits are exact in the dtype."""
NONFINITE = (float("nan"), float("inf"), float("-inf"))


def reduction_size(case: Case) -> int:
    """K: the contracted dimension (last dim of the first operand)."""
    return case.inputs[0].shape[-1]


def exact_int_range(case: Case) -> tuple[int, float]:
    """(r, density): integer inputs in [-r, r] (r at most 4), each nonzero with probability
    `density`, so that sums over K products stay far inside the exact integers of the result's
    dtype (six standard deviations below 2**(bits - 1)): K * r**2 for small K, sparse for large."""
    k, bits = max(reduction_size(case), 1), EXACT_BITS[op_dtype(case)]
    r = max(1, min(4, math.isqrt((2 ** (bits - 2)) // k)))
    spread = r * (r + 1) / 3  # E[x**2] of a uniform integer in [-r, r]
    return r, min(1.0, 2.0 ** (bits - 1) / (6 * math.sqrt(k) * spread))


def integer_range(case: Case) -> tuple[int, int]:
    """randint's bounds for an integer product's inputs: [-r, r] ([0, r] for uint8) with K * r**2 at
    most 2**(bits - INTEGER_HEADROOM_BITS), so that no result or step overflows, whatever the values;
    r at most 4 in the exact_int mode, the largest such r in the large one."""
    dtype, k = op_dtype(case), max(reduction_size(case), 1)
    r = max(1, math.isqrt(2 ** (INTEGER_BITS[dtype] - INTEGER_HEADROOM_BITS) // k))
    r = min(r, 4) if case.value_mode == "exact_int" else r
    return (0 if dtype == "uint8" else -r), r + 1


def materialize(case: Case, specs: Sequence[TensorSpec] | None = None) -> list[torch.Tensor]:
    """Each input (of the first call, or `specs`) as `as_strided` over a fresh storage on the
    case's device, filled from the seed; the inputs in `case.shared_storage` are views of one
    storage (the first one's, grown to fit them all); x0 as held before an upcast (`Case.held`).
    Fresh tensors every call: programs may mutate inputs. An int8 weight form's scale (weight_scale)
    comes last, in the op's dtype."""
    specs = list(case.held(tuple(specs or case.inputs)))
    storages: dict[int, torch.Tensor] = {}
    for group in storage_groups(case, len(specs)):
        storage = storage_values(case, specs, group)
        storages.update(dict.fromkeys(group, storage.to(getattr(torch, specs[group[0]].dtype)).to(case.device)))
    views = [torch.as_strided(storages[i], spec.shape, spec.stride, spec.offset) for i, spec in enumerate(specs)]
    if case.weight_form in INT8_FORMS:
        views.append(weight_scale(case).to(getattr(torch, case.inputs[0].dtype)).to(case.device))
    return views


SCALE_SHAPES = {"int8": "N", "int8_tensor": "", "int8_single": "1"}
"""An int8 weight form's scale: per output channel (N,), 0-d, or (1,)."""


def scale_shape(case: Case) -> tuple[int, ...]:
    """The shape of an int8 weight form's scale."""
    return tuple(case.inputs[1].shape[-1] if c == "N" else 1 for c in SCALE_SHAPES[case.weight_form])


def weight_scale(case: Case) -> torch.Tensor:
    """An int8 weight form's scale, float64: multiples of 1/8 in [-2, 2] (exact in every float dtype;
    a product of exact integers times it is often exact too, so such cases are judged bit for bit)."""
    gen = torch.Generator().manual_seed(storage_seed(case, len(case.inputs)))
    return torch.randint(-2 * SCALE_EIGHTHS, 2 * SCALE_EIGHTHS + 1, scale_shape(case), generator=gen,
                         dtype=torch.float64) / SCALE_EIGHTHS


SCALE_EIGHTHS = 8
"""An int8 weight form's scale is a multiple of 1 / SCALE_EIGHTHS."""


def storage_groups(case: Case, n: int) -> list[list[int]]:
    """The inputs (of `n`) that view one storage: each input alone, and those in `case.shared_storage`
    together (in its order: the first one's seed fills it)."""
    shared = list(case.shared_storage) if len(case.shared_storage) > 1 else []
    return [[i] for i in range(n) if i not in shared] + ([shared] if shared else [])


def storage_values(case: Case, specs: Sequence[TensorSpec], group: list[int]) -> torch.Tensor:
    """float64 contents of the storage the inputs `group` view: seeded values, NaN outside the views
    (floating dtypes), the `nonfinite` mode's NaN/inf at a few positions inside them."""
    first = group[0]
    size = max(specs[i].storage_size() for i in group)
    gen = torch.Generator().manual_seed(storage_seed(case, first))
    values = _values(case, specs[first], first, size, gen)
    views = {i: torch.as_strided(torch.arange(size), specs[i].shape, specs[i].stride, specs[i].offset).flatten()
             for i in group}
    covered, shielded = torch.zeros(size, dtype=torch.bool), torch.zeros(size, dtype=torch.bool)
    for i in group:
        covered[views[i]] = True
        if not _may_be_nonfinite(case, i):
            shielded[views[i]] = True  # also where an aliasing input that may hold NaN/inf reads it
    for i in group:
        if case.value_mode == "nonfinite" and _may_be_nonfinite(case, i):
            inside = views[i].unique()
            inside = inside[~shielded[inside]]
            if inside.numel():
                picks = inside[torch.randperm(inside.numel(), generator=gen)[: max(1, inside.numel() // 64)]]
                values[picks] = torch.tensor(NONFINITE, dtype=torch.float64)[torch.arange(picks.numel()) % 3]
    if specs[first].dtype not in INTEGER_DTYPES:
        values[~covered] = float("nan")
    return values


def _may_be_nonfinite(case: Case, index: int) -> bool:
    """Where NaN/inf have defined effects: not in an operand multiplied by alpha == 0 (BLAS does
    not read it, a fused kernel may: undefined), nor in scaled_mm's scales or an int8 weight."""
    if case.inputs[index].dtype in INTEGER_DTYPES:
        return False
    if case.op in ("addmm", "baddbmm") and index < 2:
        return case.params_dict.get("alpha", 1.0) != 0.0
    return not (case.op == "scaled_mm" and index >= 2)


def _values(case: Case, spec: TensorSpec, index: int, n: int, gen: torch.Generator) -> torch.Tensor:
    if case.op == "scaled_mm" and index >= 2:  # scales: positive powers of two keep products exact
        return 2.0 ** torch.randint(-2, 3, (n,), generator=gen, dtype=torch.float64)
    if case.integer_product():
        return torch.randint(*integer_range(case), (n,), generator=gen, dtype=torch.float64)
    if case.value_mode == "exact_int":
        r, density = exact_int_range(case)
        values = torch.randint(-r, r + 1, (n,), generator=gen, dtype=torch.float64)
        return values * (torch.rand(n, generator=gen, dtype=torch.float64) < density)
    if spec.dtype == "int8":
        return torch.randint(*int8_range(case), (n,), generator=gen, dtype=torch.float64)
    values = torch.randn(n, generator=gen, dtype=torch.float64)
    if case.value_mode == "sparse":
        return values * (torch.rand(n, generator=gen, dtype=torch.float64) < 0.1)
    if case.value_mode == "large":
        return values * large_scale(case)
    if case.value_mode == "tiny":
        return values * tiny_scale(case)
    if case.value_mode == "mixed":
        return values * 2.0 ** torch.randint(*mixed_exponents(case), (n,), generator=gen, dtype=torch.float64)
    return values


def int8_range(case: Case) -> tuple[int, int]:
    """randint's bounds for int8 inputs: "large" draws int8's whole range (K * 128**2 stays far
    inside int32's exact range), the other modes small integers."""
    return (-128, 128) if case.value_mode == "large" else (-8, 9)


def mixed_exponents(case: Case) -> tuple[int, int]:
    """randint's bounds for the "mixed" mode's power of two per element: tiny_scale to large_scale."""
    return int(math.log2(tiny_scale(case))), int(math.log2(large_scale(case))) + 1


def large_scale(case: Case) -> float:
    """Factor of the "large" value mode: results near the top of the dtype's range, not past it, and
    inputs 2**3 below the top of theirs (fp16 operands of a float32 result: mm_out_dtype, an upcast)
    ("mixed" draws each element's power of two between tiny_scale and this)."""
    k = max(reduction_size(case), 1)
    limit = torch.finfo(getattr(torch, op_dtype(case))).max
    held = min(torch.finfo(getattr(torch, case.held(case.inputs)[0].dtype)).max, limit)
    return 2.0 ** min(math.floor(math.log2(math.sqrt(limit / (16 * k)))), math.floor(math.log2(held)) - 3)


def tiny_scale(case: Case) -> float:
    """Factor of the "tiny" value mode: products near the smallest normal number of the inputs' and
    the result's dtypes (fp16 results at their subnormal end), but 2**24 above float32's: a correct
    kernel's float32 accumulator may flush subnormals to zero (FTZ, as oneDNN's does), and a flushed
    partial sum is then within the accumulation bound."""
    dtypes = (case.held(case.inputs)[0].dtype, op_dtype(case), "float32")
    smallest = max(torch.finfo(getattr(torch, d)).smallest_normal * (2.0**24 if d == "float32" else 1) for d in dtypes)
    return 2.0 ** math.floor(math.log2(math.sqrt(smallest)))


def storage_seed(case: Case, index: int) -> int:
    """Seed of the generator that fills the storage of input `index` (the first of a shared group)."""
    return case.seed * 1009 + index
