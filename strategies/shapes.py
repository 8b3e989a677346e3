"""Matrix dimensions: edge-heavy (0, 1, 2, primes, 2^k +/- 1, multiples of 8/16/64/128) and
bounded in memory, with tall-K shapes that reach decompose-k on the GPU."""

from __future__ import annotations

from hypothesis import strategies as st

from strategies.choices import rarely

EDGE_DIMS = (1, 2, 3, 5, 7, 8, 13, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 255, 256, 257,
             511, 513, 1023, 1024, 1025, 2047, 2048, 4096, 8191, 8192)


def dims(max_dim: int, min_dim: int = 1) -> st.SearchStrategy[int]:
    """One dimension: mostly edge values (block-size boundaries, primes), sometimes any size."""
    edges = [d for d in EDGE_DIMS if min_dim <= d <= max_dim]
    return st.one_of(st.sampled_from(edges), st.integers(min_dim, max_dim))


@st.composite
def matmul_dims(draw: st.DrawFn, max_dim: int, max_elements: int, multiple_of: int = 1,
                min_m: int = 1, allow_zero: bool = True, m_multiple_of: int = 1) -> tuple[int, int, int]:
    """(M, N, K) whose three matrices hold at most `max_elements` elements: any sizes, tiny M
    with large N and K, or K much larger than M and N (decompose-k); sometimes a zero dim. N and
    K are multiples of `multiple_of`, M of `m_multiple_of` and at least `min_m`."""
    shape = draw(st.sampled_from(("any", "tiny_m", "tall_k")))
    m_max = 16 if shape == "tiny_m" else (64 if shape == "tall_k" else max_dim)
    m = draw(dims(max(m_max, min_m), min_m))
    n = draw(dims(64 if shape == "tall_k" else max_dim))
    k = draw(dims(4 * max_dim if shape == "tall_k" else max_dim))
    if multiple_of > 1:
        n, k = (max(multiple_of, v - v % multiple_of) for v in (n, k))
    if allow_zero and draw(rarely(20)):
        which = draw(st.sampled_from("mnk"))
        m, n, k = (0 if which == "m" else m), (0 if which == "n" else n), (0 if which == "k" else k)
    while m * k + k * n + m * n > max_elements:  # shrink the largest dim until it fits
        big = max(m, n, k)
        m, n, k = (v if v != big else max(v // 2, 1) for v in (m, n, k))
    n, k = (v if v == 0 else max(multiple_of, v - v % multiple_of) for v in (n, k))
    return (m if m == 0 else max(min_m, m - m % m_multiple_of)), n, k
