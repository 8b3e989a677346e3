"""The time-to-find table: a row per planted bug, a miss shown as `>CAP` and counted as the cap,
the median and the worst per side (`>` where they rest on a miss), and the last line's ratio."""

from __future__ import annotations

from fuzz.tools.time_to_find import Spread, Timing, ratio, table


def test_the_table_counts_a_miss_as_the_cap_and_marks_it() -> None:
    timings = [Timing("a", 10.0, 5, 2.0), Timing("b", None, 90, 20.4), Timing("c", 30.0, 12, None)]
    lines = table(timings, 60.0).splitlines()
    assert lines[2:5] == ["| a | 10s (5 cases) | 2s | 5.0x |", "| b | >60s (90 cases) | 20s | >2.9x |",
                          "| c | 30s (12 cases) | >60s | ? |"]
    assert lines[-3:] == ["median: naive 30s, suite 20s", "worst: naive >60s, suite >60s",
                          "time to find: suite median 20s (worst >60s), naive median 30s (worst >60s): 1.5x"]


def test_a_median_resting_on_a_miss_is_a_lower_bound() -> None:
    assert Spread.of([10.0, None, None], 60.0) == Spread(60.0, True, None)
    assert Spread.of([10.0, None], 60.0) == Spread(35.0, True, None)  # the upper middle is a miss
    assert Spread.of([10.0, 20.0, None], 60.0) == Spread(20.0, False, None)
    assert Spread.of([4.0, 2.0], 60.0).text(60.0) == ("3s", "4s")
    assert Spread.of([None], 60.0).text(60.0) == (">60s", ">60s")


def test_the_ratio_says_when_it_is_a_bound_or_unknown() -> None:
    assert ratio(90.0, 9.0, False, False) == "10.0x"
    assert ratio(60.0, 9.0, True, False) == ">6.7x"
    assert ratio(30.0, 60.0, False, True) == "?"
