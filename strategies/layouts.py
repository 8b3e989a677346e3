"""Strided operands: contiguous, transposed, padded leading dimension, storage offset."""

from __future__ import annotations

from hypothesis import strategies as st

from strategies.case import TensorSpec

STRIDE_KINDS = ("contiguous", "transposed", "padded", "offset")


@st.composite
def strided(draw: st.DrawFn, shape: tuple[int, ...], dtype: str) -> TensorSpec:
    """A view of `shape` (2-D, or 3-D with the batch outermost) in one of STRIDE_KINDS:
    'transposed' stores the matrix column-major, 'padded' widens the leading dimension,
    'offset' starts the view past the storage's first element."""
    kind = draw(st.sampled_from(STRIDE_KINDS))
    *batch, rows, cols = shape
    if kind == "transposed":
        inner, matrix = (1, max(rows, 1)), rows * cols
    else:
        lead = cols + (draw(st.integers(1, 9)) if kind == "padded" else 0)
        inner, matrix = (max(lead, 1), 1), rows * lead
    offset = draw(st.integers(1, 17)) if kind == "offset" else 0
    return TensorSpec(shape, ((max(matrix, 1),) if batch else ()) + inner, offset, dtype)
