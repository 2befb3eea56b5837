"""Ranked metrics over anchors (docs/metrics.md#ranked-metrics).

The nDCG oracle is written from the formula of the semble code-search benchmark's
`ndcg_at_k(relevant_ranks, n_relevant, k)`: a binary relevance list of length k with a 1
at every 1-based rank in `relevant_ranks` that lies in 1..k, DCG = sum of rel / log2(i + 2)
over 0-based positions i, divided by the DCG of min(k, n_relevant) ones (0.0 when
n_relevant is 0). With unit gains, cce's nDCG@k over anchors must equal it when
`relevant_ranks` are the anchors' first-match ranks.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    METRICS,
    GainProfile,
    QueryScore,
    anchor_gains,
    anchor_profile,
    average_precision_at_k,
    hit_at_k,
    judgment,
    macro_average,
    ndcg_at_k,
    r_precision_at_k,
    score_query,
)

LOG2_3 = math.log2(3)


def semble_ndcg(relevant_ranks: list[int], n_relevant: int, k: int) -> float:
    """Independent transcription of the benchmark's documented formula."""
    if n_relevant == 0:
        return 0.0
    relevances = [0.0] * k
    for rank in relevant_ranks:
        if 1 <= rank <= k:
            relevances[rank - 1] = 1.0
    dcg = 0.0
    for i, rel in enumerate(relevances):
        dcg += rel / math.log2(i + 2)
    ideal = 0.0
    for i in range(min(k, n_relevant)):
        ideal += 1.0 / math.log2(i + 2)
    return dcg / ideal if ideal > 0 else 0.0


def first_match_ranks(matches: list[list[bool]], n_anchors: int) -> list[int]:
    """Rank (1-based, over the whole list) of the first result matching each matched anchor."""
    ranks = []
    for anchor in range(n_anchors):
        for rank, row in enumerate(matches, start=1):
            if row[anchor]:
                ranks.append(rank)
                break
    return ranks


def test_one_anchor_at_rank_two() -> None:
    matches = [[False], [True], [True]]
    assert ndcg_at_k(matches, [1.0], 3) == 1.0 / LOG2_3
    assert average_precision_at_k(matches, [1.0], 3) == 0.5
    assert hit_at_k(matches, [1.0], 3) == 1.0
    assert r_precision_at_k(matches, [1.0], 3) == 0.0
    # The later result matching the same anchor earns nothing: the anchor counts once.
    assert anchor_profile(matches, [1.0], 3).rank_gains == (0.0, 1.0, 0.0)


def test_one_chunk_satisfying_two_anchors_earns_one_rank_gain() -> None:
    # Result 1 matches both anchors; the ideal ranking still wants them at ranks 1 and 2.
    matches = [[True, True], [False, False]]
    profile = anchor_profile(matches, [1.0, 1.0], 2)
    assert profile.rank_gains == (1.0, 0.0)
    assert profile.ideal_gains == (1.0, 1.0)
    assert ndcg_at_k(matches, [1.0, 1.0], 2) == 1.0 / (1.0 + 1.0 / LOG2_3)
    assert average_precision_at_k(matches, [1.0, 1.0], 2) == 0.5
    assert r_precision_at_k(matches, [1.0, 1.0], 2) == 0.5


def test_rank_gain_is_the_largest_gain_first_matched_there() -> None:
    # Anchor 0 (gain 2) and anchor 1 (gain 1) are both first matched at rank 2.
    matches = [[False, False, False], [True, True, False], [False, True, True]]
    profile = anchor_profile(matches, [2.0, 1.0, 1.0], 3)
    assert profile.rank_gains == (0.0, 2.0, 1.0)
    assert profile.ideal_gains == (2.0, 1.0, 1.0)
    dcg = 2.0 / LOG2_3 + 1.0 / 2.0
    ideal = 2.0 + 1.0 / LOG2_3 + 1.0 / 2.0
    assert ndcg_at_k(matches, [2.0, 1.0, 1.0], 3) == dcg / ideal


def test_ideal_is_cut_at_k() -> None:
    # Three anchors, k = 2: the ideal places two of them, so two hits at ranks 1-2 are perfect.
    matches = [[True, False, False], [False, True, False]]
    assert ndcg_at_k(matches, [1.0, 1.0, 1.0], 2) == 1.0
    # AP divides by every relevant anchor, so the same ranking scores 2/3.
    assert average_precision_at_k(matches, [1.0, 1.0, 1.0], 2) == 2.0 / 3.0
    # R = 3 > k = 2: R-precision counts the hits within k over R.
    assert r_precision_at_k(matches, [1.0, 1.0, 1.0], 2) == 2.0 / 3.0


def test_results_past_k_are_not_considered() -> None:
    matches = [[False], [False], [True]]
    for metric in (ndcg_at_k, average_precision_at_k, hit_at_k, r_precision_at_k):
        assert metric(matches, [1.0], 2) == 0.0


def test_zero_gain_anchor_is_left_out() -> None:
    matches = [[True, False]]
    profile = anchor_profile(matches, [0.0, 1.0], 1)
    assert profile.rank_gains == (0.0,)
    assert profile.relevant == 1


def test_no_anchor_no_result() -> None:
    assert ndcg_at_k([], [], 5) == 0.0
    assert average_precision_at_k([], [1.0], 5) == 0.0
    assert hit_at_k([], [1.0], 5) == 0.0
    assert r_precision_at_k([[]], [], 5) == 0.0


def test_anchor_gains_graded_and_secondary() -> None:
    assert anchor_gains(2) == [1.0, 1.0]
    assert anchor_gains(2, 1) == [1.0, 1.0, 1.0]
    assert anchor_gains(2, 1, graded=True) == [2.0, 2.0, 1.0]
    with pytest.raises(ValueError):
        anchor_gains(-1)


def test_graded_secondary_example() -> None:
    # Expected anchor (gain 2) found at rank 2; secondary anchor (gain 1) at rank 1.
    matches = [[False, True], [True, False]]
    gains = anchor_gains(1, 1, graded=True)
    assert ndcg_at_k(matches, gains, 2) == (1.0 + 2.0 / LOG2_3) / (2.0 + 1.0 / LOG2_3)
    # AP uses gains for relevance only: both ranks are relevant.
    assert average_precision_at_k(matches, gains, 2) == 1.0


@pytest.mark.parametrize(
    ("matches", "gains", "k", "message"),
    [
        ([[True]], [1.0], 0, "k must be"),
        ([[True, False]], [1.0], 1, "judgments"),
        ([[True]], [-1.0], 1, "gains"),
        ([[True]], [math.nan], 1, "gains"),
    ],
)
def test_bad_input_is_refused(
    matches: list[list[bool]], gains: list[float], k: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        anchor_profile(matches, gains, k)


def test_profile_checks_its_invariants() -> None:
    with pytest.raises(ValueError, match="descending"):
        GainProfile(rank_gains=(), ideal_gains=(1.0, 2.0), k=1)
    with pytest.raises(ValueError, match="relevant items only"):
        GainProfile(rank_gains=(), ideal_gains=(0.0,), k=1)
    with pytest.raises(ValueError, match="cover"):
        GainProfile(rank_gains=(0.0, 0.0), ideal_gains=(), k=1)


matrices = st.integers(min_value=0, max_value=6).flatmap(
    lambda n_anchors: st.tuples(
        st.just(n_anchors),
        st.lists(
            st.lists(st.booleans(), min_size=n_anchors, max_size=n_anchors),
            min_size=0,
            max_size=15,
        ),
        st.integers(min_value=1, max_value=12),
    )
)


@given(matrices)
def test_unit_gain_ndcg_equals_the_code_search_benchmark(
    case: tuple[int, list[list[bool]], int],
) -> None:
    n_anchors, matches, k = case
    considered = matches[:k]
    expected = semble_ndcg(first_match_ranks(considered, n_anchors), n_anchors, k)
    assert math.isclose(ndcg_at_k(matches, [1.0] * n_anchors, k), expected, abs_tol=1e-12)


@given(matrices)
def test_metrics_stay_in_the_unit_interval(case: tuple[int, list[list[bool]], int]) -> None:
    n_anchors, matches, k = case
    gains = [float(1 + (j % 2)) for j in range(n_anchors)]
    for metric in (ndcg_at_k, average_precision_at_k, hit_at_k, r_precision_at_k):
        value = metric(matches, gains, k)
        assert 0.0 <= value <= 1.0 + 1e-15


@given(matrices)
def test_hit_agrees_with_the_first_relevant_rank(case: tuple[int, list[list[bool]], int]) -> None:
    n_anchors, matches, k = case
    expected = 1.0 if any(any(row) for row in matches[:k]) else 0.0
    assert hit_at_k(matches, [1.0] * n_anchors, k) == expected


def test_registered_as_opt_in_chunk_metrics() -> None:
    assert METRICS.names() == ("precision", "recall", "mrr", "f1", "ndcg", "map", "hit", "rprec")
    ranked = [item for item in METRICS if not item.default]
    assert [(item.name, item.key, item.label) for item in ranked] == [
        ("ndcg", "ndcg_at_k", "nDCG@k"),
        ("map", "ap_at_k", "AP@k"),
        ("hit", "hit_at_k", "hit@k"),
        ("rprec", "r_precision", "R-prec"),
    ]
    assert all(item.higher_is_better for item in ranked)


def test_registry_scores_secondary_anchors_with_their_gains() -> None:
    # Rank 1 finds the secondary anchor (gain 0.5), rank 2 the first expected anchor,
    # rank 3 the secondary anchor again (nothing new); the second expected anchor is missed.
    rows = [[False, False, True], [True, False, False], [False, False, True]]
    score = QueryScore.from_judgment(judgment(rows, 2, 3, secondary=1, gains=[1.0, 1.0, 0.5]))
    assert score.values["ndcg_at_k"] == (0.5 + 1.0 / LOG2_3) / (1.0 + 1.0 / LOG2_3 + 0.5 / 2.0)
    assert score.values["ap_at_k"] == (1.0 + 1.0) / 3.0
    assert score.values["hit_at_k"] == 1.0
    assert score.values["r_precision"] == 2.0 / 3.0
    # The reference four see the expected columns only.
    assert score.values["mrr"] == 0.5


def test_registry_averages_the_ranked_metrics_in_case_order() -> None:
    scores = [score_query([[True]], 1, 1), score_query([[False], [True]], 1, 2)]
    averages = macro_average(scores)
    assert averages.value("ndcg_at_k") == (1.0 + 1.0 / LOG2_3) / 2.0
    assert averages.value("hit_at_k") == 1.0
    assert averages.value("ap_at_k") == 0.75
    assert averages.value("r_precision") == 0.5


def test_a_secondary_match_alone_is_a_hit_but_not_a_reciprocal_rank() -> None:
    # docs/metrics.md#graded-relevance: one expected anchor (missed), one secondary (found).
    score = QueryScore.from_judgment(judgment([[False, True]], 1, 3, secondary=1))
    assert score.values["hit_at_k"] == 1.0
    assert score.values["mrr"] == 0.0
    assert score.values["recall"] == 0.0
    assert score.values["r_precision"] == 0.5
