"""Pairwise coverage: the pairs one case forms, and the share of pairs a campaign drew."""

from __future__ import annotations

from fuzz.tools.pairs import pair_features, pairwise_coverage


def test_a_case_pairs_its_main_features_across_dimensions_only() -> None:
    features = {"op:mm", "dtype:float16", "value:tiny", "consumer:relu", "spelling:mm:einsum"}
    assert sorted(pair_features(features)) == sorted([
        "pair:dtype:float16|op:mm", "pair:dtype:float16|spelling:mm:einsum", "pair:dtype:float16|value:tiny",
        "pair:op:mm|spelling:mm:einsum", "pair:op:mm|value:tiny", "pair:spelling:mm:einsum|value:tiny"])
    assert pair_features({"dtype:float16", "dtype:float32", "consumer:relu"}) == []  # one dimension: no pair


def test_coverage_counts_drawn_pairs_against_the_values_drawn() -> None:
    drawn: dict[str, int] = {}
    for case in ({"op:mm", "value:tiny"}, {"op:bmm", "value:normal"}):
        for f in (*case, *pair_features(case)):
            drawn[f] = drawn.get(f, 0) + 1
    assert pairwise_coverage(drawn) == (2, 4)  # (mm, tiny) and (bmm, normal) of 2 ops x 2 value modes
    assert pairwise_coverage({}) == (0, 0)
