"""The order in which the tests are handed to pytest-xdist: the slowest kinds first, dealt out so
that no worker begins with several of them."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain


def first_chunk(tests: int, workers: int) -> int:
    """How many consecutive tests xdist's `load` scheduler sends each worker first (xdist 3: a
    quarter of a worker's share, at least 2); it hands the rest out one worker at a time as they finish."""
    return max(2, tests // workers // 4)


def xdist_order(ranks: Sequence[int], slow_ranks: int, workers: int) -> list[int]:
    """The tests' indices in run order: by rank (0 the slowest kind), and the tests of a rank below
    `slow_ranks` dealt one per worker's first chunk in turn. Sorted slowest-first alone, the first
    chunks gave two workers of 16 seven slow tests each: they ran 470 s while the others were idle
    after 125 s (H200)."""
    order = sorted(range(len(ranks)), key=lambda i: ranks[i])
    if workers <= 1 or len(order) < 2 * workers:  # one worker, or xdist deals them one at a time
        return order
    chunk = first_chunk(len(order), workers)
    slow = [i for i in order if ranks[i] < slow_ranks]
    rest = iter(i for i in order if ranks[i] >= slow_ranks)
    chunks: list[list[int]] = [[] for _ in range(workers)]
    for k, i in enumerate(slow[:workers * chunk]):
        chunks[k % workers].append(i)
    for tests in chunks:
        tests.extend(next(rest) for _ in range(chunk - len(tests)))
    return [*chain(*chunks), *slow[workers * chunk:], *rest]
