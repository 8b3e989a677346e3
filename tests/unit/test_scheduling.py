"""The run order deals the slow tests out one per xdist worker and keeps every test."""

from __future__ import annotations

from tests.scheduling import first_chunk, xdist_order


def test_each_workers_first_chunk_gets_its_share_of_the_slow_tests() -> None:
    ranks = [2] * 400 + [1] * 20 + [0] * 12  # the 32 slow ones collected last
    order = xdist_order(ranks, slow_ranks=2, workers=16)
    assert sorted(order) == list(range(len(ranks)))
    chunk = first_chunk(len(ranks), 16)
    firsts = [order[w * chunk:(w + 1) * chunk] for w in range(16)]
    assert [sum(ranks[i] < 2 for i in tests) for tests in firsts] == [2] * 16
    assert [ranks[tests[0]] for tests in firsts] == [0] * 12 + [1] * 4  # the slowest kind first


def test_slow_tests_beyond_the_first_chunks_come_next() -> None:
    ranks = [1] * 6 + [0] * 10  # 2 workers, chunks of 2: 4 slow tests dealt, 6 left
    order = xdist_order(ranks, slow_ranks=1, workers=2)
    assert [ranks[i] for i in order] == [0, 0, 0, 0] + [0] * 6 + [1] * 6


def test_one_worker_runs_the_slowest_kind_first() -> None:
    assert xdist_order([2, 0, 1, 0], slow_ranks=2, workers=1) == [1, 3, 2, 0]
