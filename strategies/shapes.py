"""Matrix dimensions: edge-heavy (1, primes, 2^k +/- 1, non-multiples of 16) and bounded in memory."""

from __future__ import annotations

from hypothesis import strategies as st

EDGE_DIMS = (1, 2, 3, 5, 7, 8, 13, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 257)


def dims(max_dim: int) -> st.SearchStrategy[int]:
    """One dimension: mostly edge values (block-size boundaries, primes), sometimes any size."""
    edges = [d for d in EDGE_DIMS if d <= max_dim]
    return st.one_of(st.sampled_from(edges), st.integers(1, max_dim))


def matmul_dims(max_dim: int, max_elements: int) -> st.SearchStrategy[tuple[int, int, int]]:
    """(M, N, K) whose three matrices hold at most `max_elements` elements in all."""
    return st.tuples(dims(max_dim), dims(max_dim), dims(max_dim)).filter(
        lambda mnk: mnk[0] * mnk[2] + mnk[2] * mnk[1] + mnk[0] * mnk[1] <= max_elements)
