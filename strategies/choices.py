"""Branch draws that shrink to the plain form: a shrunk case ends in the common form (no
consumer, contiguous, default config), never in the rare branch."""

from __future__ import annotations

from hypothesis import strategies as st


def rarely(n: int) -> st.SearchStrategy[bool]:
    """True one time in `n`; shrinks to False (`integers(0, n - 1) == 0` shrinks to True)."""
    return st.sampled_from((False,) * (n - 1) + (True,))
