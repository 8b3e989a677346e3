"""Size families (M, N, K, the batch) and the dynamic-shape draws: which dim of each input carries
which family, `dynamic=True`, `mark_dynamic` on every dim of one family, and a second call with that
family resized."""

from __future__ import annotations

from hypothesis import strategies as st

from strategies.case import TensorSpec, contiguous_strides
from strategies.layouts import OUT_KINDS, strided
from strategies.shapes import dims
from strategies.vocabulary import INPUT_COUNT

__all__ = ["SIZE_FAMILIES", "dim_roles", "dynamic_shapes", "weightless_families"]

SIZE_FAMILIES = ("M", "N", "K", "B")
"""Sizes a dynamic case varies: rows and columns of the result, the contracted dim, the batch."""


def dim_roles(op: str, index: int, rank: int) -> tuple[str | None, ...]:
    """The size family (SIZE_FAMILIES) each dim of input `index` of `op` carries; None: a fixed
    size (mm_plus_mm's second K, matmul's extra broadcast dim, a size-1 dim of a row-wise scale)."""
    if index == INPUT_COUNT[op]:  # the out= buffer: the result's ([B,] M, N)
        return ("B", "M", "N")[3 - rank:]
    if op in ("addmm", "baddbmm") and index == 2:  # the bias, right-aligned to ([B,] M, N)
        full: tuple[str | None, ...] = ("B", "M", "N") if op == "baddbmm" else ("M", "N")
        return full[len(full) - rank:]
    if op == "scaled_mm" and index >= 2:  # scales: () tensor-wise, (M, 1) and (1, N) row-wise
        return () if rank == 0 else (("M", None) if index == 2 else (None, "N"))
    pair = index % 2 if op == "mm_plus_mm" else index
    rows: str | None
    cols: str | None
    rows, cols = (("M", "K"), ("K", "N"))[pair]
    if op == "mm_plus_mm" and index >= 2:
        rows, cols = (rows, None) if pair == 0 else (None, cols)
    return ((None,) * (rank - 3) + ("B",) if rank >= 3 else ()) + (rows, cols)


def _family_dims(op: str, inputs: list[TensorSpec], family: str, size: int) -> list[tuple[int, int]]:
    """(input, dim) pairs of `family` holding `size` (a broadcast size-1 dim of another size is not one)."""
    return [(i, d) for i, t in enumerate(inputs) for d, role in enumerate(dim_roles(op, i, len(t.shape)))
            if role == family and t.shape[d] == size]


@st.composite
def _resized(draw: st.DrawFn, op: str, inputs: list[TensorSpec], family: str, size: int, new: int,
             kinds: tuple[str, ...], frozen: bool) -> tuple[TensorSpec, ...]:
    """The inputs with every dim of `family` changed from `size` to `new` (fresh strides of the
    same kinds; scaled_mm keeps its required layouts; a rank-1 bias keeps its stride, 0 or 1,
    which suits any size; frozen weights stay as they are: the compiled module holds them)."""
    hit = _family_dims(op, inputs, family, size)
    out = []
    for i, t in enumerate(inputs):
        shape = tuple(new if (i, d) in hit else n for d, n in enumerate(t.shape))
        if frozen and i > 0:
            out.append(t)
        elif op == "scaled_mm" and i >= 1:  # B column-major, scales contiguous
            out.append(TensorSpec(shape, (1, shape[0]) if i == 1 else contiguous_strides(shape), 0, t.dtype))
        elif len(t.shape) >= 2:
            out.append(draw(strided(shape, t.dtype, OUT_KINDS if i == INPUT_COUNT[op] else kinds)))
        else:
            out.append(TensorSpec(shape, t.stride, t.offset, t.dtype))
    return tuple(out)


@st.composite
def dynamic_shapes(draw: st.DrawFn, op: str, inputs: list[TensorSpec], sizes: dict[str, int], max_dim: int,
             kinds: tuple[str, ...], frozen: bool, multiple: int,
             min_m: int) -> tuple[bool, tuple[tuple[int, int], ...], tuple[TensorSpec, ...]]:
    """(dynamic=True, mark_dynamic pairs, second-call inputs): static, `dynamic=True`, or one size
    family marked dynamic (every dim carrying it, so no other dim pins it to a constant; with
    frozen weights only a family the weights do not carry); each but static may call the compiled
    function again with that family resized (at most `max_dim` // 2; N and K to a multiple of
    `multiple`, M to at least `min_m`)."""
    mode = draw(st.sampled_from(("static", "static", "dynamic", "mark", "second_call")))
    carried = {role for i, t in enumerate(inputs) for role in dim_roles(op, i, len(t.shape))}
    choices = [f for f in (weightless_families(op, inputs) if frozen else SIZE_FAMILIES) if f in carried]
    if mode == "static" or not choices:
        return False, (), ()
    family = draw(st.sampled_from(choices))
    marks = tuple(_family_dims(op, inputs, family, sizes[family])) if mode == "mark" and sizes[family] > 1 else ()
    second: tuple[TensorSpec, ...] = ()
    if mode == "second_call" or draw(st.booleans()):
        new = draw(dims(max_dim // 2 if family != "B" else 9, min_m if family == "M" else 1))
        if family in ("N", "K") or (family == "M" and min_m > 1):  # min_m > 1: CUDA int_mm, M a multiple too
            new = max(multiple, new - new % multiple)
        if new != sizes[family]:
            second = draw(_resized(op, inputs, family, sizes[family], new, kinds, frozen))
    return mode == "dynamic", marks, second


def weightless_families(op: str, inputs: list[TensorSpec]) -> tuple[str, ...]:
    """Size families only the first input carries: with frozen weights only these can change."""
    weights = {role for i, t in enumerate(inputs) if i > 0 for role in dim_roles(op, i, len(t.shape))}
    return tuple(f for f in dim_roles(op, 0, len(inputs[0].shape)) if f is not None and f not in weights)
