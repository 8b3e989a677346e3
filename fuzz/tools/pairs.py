"""Pairwise combinations of a campaign's main dimensions (issue 28, principle 8): a bug often needs
two ordinary choices at once, so a report says how many of their pairs the campaign drew."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

__all__ = ["DIMENSIONS", "pair_features", "pairwise_coverage"]

DIMENSIONS = ("op", "dtype", "value", "backends", "spelling")
"""Prefixes of the case features (strategies.cases.case_features) paired with each other."""
PAIR = "pair:"


def _dimension(feature: str) -> str:
    return feature.split(":", 1)[0]


def pair_features(features: Iterable[str]) -> list[str]:
    """`pair:A|B` for every two features of one case from different main dimensions (sorted)."""
    main = sorted({f for f in features if _dimension(f) in DIMENSIONS})
    return [f"{PAIR}{a}|{b}" for a, b in itertools.combinations(main, 2) if _dimension(a) != _dimension(b)]


def pairwise_coverage(drawn: Mapping[str, int]) -> tuple[int, int]:
    """(pairs drawn, pairs of the values drawn): each dimension's values are those the campaign drew,
    so the second number also counts pairs no case can form (int8 with an op other than int_mm)."""
    values: dict[str, int] = {}
    for feature in drawn:
        if _dimension(feature) in DIMENSIONS:
            values[_dimension(feature)] = values.get(_dimension(feature), 0) + 1
    possible = sum(values[a] * values[b] for a, b in itertools.combinations(sorted(values), 2))
    return sum(1 for f in drawn if f.startswith(PAIR)), possible
