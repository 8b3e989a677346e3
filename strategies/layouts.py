"""Strided operands: contiguous, transposed, padded leading dimension, storage offset, stride-0
expanded rows, non-dense steps, permuted batch dims, arbitrary strides on size-1 dims."""

from __future__ import annotations

from hypothesis import strategies as st

from strategies.case import TensorSpec

STRIDE_KINDS = ("contiguous", "transposed", "padded", "offset", "expanded", "nondense", "batch_inner")


OUT_KINDS = ("contiguous", "offset")
"""The layouts of an out= buffer dynamo compiles: it runs an out= call into any other layout, or
into a buffer the op must resize, eagerly (a graph break: inductor never sees it)."""


@st.composite
def strided(draw: st.DrawFn, shape: tuple[int, ...], dtype: str,
            kinds: tuple[str, ...] = STRIDE_KINDS) -> TensorSpec:
    """A view of `shape` (the last two dims a matrix, any dims before a batch) in one of `kinds`:
    'transposed' stores the matrix column-major, 'padded' widens the leading dimension, 'offset'
    starts past the storage's first element, 'expanded' repeats one row (stride 0), 'nondense'
    steps by 2 in both matrix dims, 'batch_inner' stores the batch between the rows (a permuted
    3-D tensor). Size-1 dims get an arbitrary stride: it must never matter."""
    kind = draw(st.sampled_from([k for k in kinds if k != "batch_inner" or len(shape) == 3]))
    *batch, rows, cols = shape
    nb = 1
    for b in batch:
        nb *= max(b, 1)
    if kind == "transposed":
        inner, matrix = (1, max(rows, 1)), rows * cols
    elif kind == "expanded":
        inner, matrix = (0, 1), cols
    elif kind == "nondense":
        inner, matrix = (2 * max(2 * cols, 1), 2), 4 * rows * cols
    else:
        lead = cols + (draw(st.integers(1, 9)) if kind == "padded" else 0)
        inner, matrix = (max(lead, 1), 1), rows * lead
    if kind == "batch_inner":  # (rows, batch, cols) in memory, viewed as (batch, rows, cols)
        strides: tuple[int, ...] = (max(cols, 1), nb * max(cols, 1), 1)
    else:
        outer: list[int] = []
        acc = max(matrix, 1)
        for b in reversed(batch):
            outer.insert(0, acc)
            acc *= max(b, 1)
        strides = (*outer, *inner)
    strides = tuple(draw(st.integers(0, 7)) if d == 1 and draw(st.booleans()) else s
                    for d, s in zip(shape, strides, strict=True))
    offset = draw(st.integers(1, 17)) if kind == "offset" else 0
    return TensorSpec(shape, strides, offset, dtype)
