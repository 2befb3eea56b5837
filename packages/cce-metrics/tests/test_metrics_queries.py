"""Chunk-level per-query metrics from judgments (docs/metrics.md#chunk-level-metrics, anchors of
docs/metrics.md)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import QueryScore, TokenScore, score_query


def judge(result_files: list[str], anchor_files: list[str]) -> list[list[bool]]:
    """The simplest judgment rule: a result matches a path anchor with the same path."""
    return [[result == anchor for anchor in anchor_files] for result in result_files]


def score_paths(result_files: list[str], anchor_files: list[str], k: int) -> QueryScore:
    return score_query(judge(result_files, anchor_files), len(anchor_files), k)


def test_anchor_1_mixed_results() -> None:
    # The class-kind auth.py result still matches the kind-less anchor `auth.py`.
    results = ["other.py", "auth.py", "other.py", "auth.py", "payments.py"]
    score = score_paths(results, ["auth.py", "payments.py"], k=5)
    assert score.f1 == pytest.approx(0.75, abs=1e-12)
    assert score == QueryScore(
        precision_at_k=0.6,
        recall=1.0,
        mrr=0.5,
        # (2.0 * 0.6) * 1.0 / 1.6 in doubles, the reference's operation order.
        f1=0.7499999999999999,
        first_relevant_rank=2,
        relevant_retrieved=3,
        tokens=None,
        # The opt-in ranked metrics: anchors first found at ranks 2 and 5.
        extra={
            "ndcg_at_k": (1.0 / math.log2(3) + 1.0 / math.log2(6)) / (1.0 + 1.0 / math.log2(3)),
            "ap_at_k": 0.45,
            "hit_at_k": 1.0,
            "r_precision": 0.5,
        },
    )


def test_anchor_2_single_perfect_hit() -> None:
    score = score_paths(["auth.py"], ["auth.py"], k=1)
    assert (score.precision_at_k, score.recall, score.mrr, score.f1) == (1.0, 1.0, 1.0, 1.0)
    assert score.first_relevant_rank == 1


def test_anchor_3_no_relevant_result() -> None:
    score = score_paths(["other.py"], ["auth.py"], k=5)
    assert (score.precision_at_k, score.recall, score.mrr, score.f1) == (0.0, 0.0, 0.0, 0.0)
    assert score.first_relevant_rank is None
    assert score.relevant_retrieved == 0


def test_anchor_4_relevant_result_beyond_k() -> None:
    score = score_paths(["other.py", "other.py", "auth.py"], ["auth.py"], k=2)
    assert (score.precision_at_k, score.recall, score.mrr) == (0.0, 0.0, 0.0)
    assert score.first_relevant_rank is None


def test_anchor_5_precision_divides_by_k_not_by_results() -> None:
    score = score_paths(["auth.py", "other.py"], ["auth.py"], k=5)
    assert score.precision_at_k == 0.2
    assert score.recall == 1.0
    assert score.mrr == 1.0
    assert score.f1 == pytest.approx(1 / 3, abs=1e-12)
    assert score.f1 == 0.33333333333333337  # (2.0 * 0.2) * 1.0 / 1.2 in doubles


def test_anchor_6_every_hit_on_one_anchor_counts() -> None:
    score = score_paths(["auth.py"] * 3, ["auth.py"], k=3)
    assert (score.precision_at_k, score.recall) == (1.0, 1.0)
    assert score.relevant_retrieved == 3


def test_duplicate_anchors_count_separately_in_recall() -> None:
    assert score_paths(["auth.py"], ["auth.py", "auth.py"], k=5).recall == 1.0
    assert score_paths(["x.py"], ["auth.py", "auth.py"], k=5).recall == 0.0
    assert score_paths(["auth.py"], ["auth.py", "b.py", "c.py"], k=5).recall == 1 / 3


def test_no_anchors_gives_zero_recall() -> None:
    score = score_query([[], []], 0, 5)
    assert (score.precision_at_k, score.recall, score.f1) == (0.0, 0.0, 0.0)


def test_token_score_is_carried_through() -> None:
    tokens = TokenScore(0.5, 1.0, 0.5)
    assert score_query([[True]], 1, 5, tokens).tokens is tokens
    assert score_query([[True]], 1, 5).tokens is None


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        score_query([[True]], 1, 0)
    with pytest.raises(ValueError, match="must not be negative"):
        score_query([], -1, 3)
    with pytest.raises(ValueError, match="result 2 has 1 judgments, expected 2"):
        score_query([[True, False], [True]], 2, 3)


# --- properties -----------------------------------------------------------------------


@st.composite
def judgments(draw: st.DrawFn) -> tuple[list[list[bool]], int]:
    n_anchors = draw(st.integers(min_value=1, max_value=4))
    row = st.lists(st.booleans(), min_size=n_anchors, max_size=n_anchors)
    return draw(st.lists(row, max_size=10)), n_anchors


KS = st.integers(min_value=1, max_value=8)


@given(judgments(), KS)
def test_metrics_are_bounded_and_consistent(judged: tuple[list[list[bool]], int], k: int) -> None:
    matches, n_anchors = judged
    score = score_query(matches, n_anchors, k)
    for value in (score.precision_at_k, score.recall, score.mrr, score.f1):
        assert 0.0 <= value <= 1.0
    assert score.relevant_retrieved <= min(len(matches), k)
    assert score.precision_at_k == score.relevant_retrieved / k
    assert score.f1 <= max(score.precision_at_k, score.recall)
    if score.first_relevant_rank is None:
        assert score.mrr == 0.0
        assert score.relevant_retrieved == 0
    else:
        assert 1 <= score.first_relevant_rank <= min(len(matches), k)
        assert score.mrr == 1.0 / score.first_relevant_rank
        assert any(matches[score.first_relevant_rank - 1])


@given(judgments(), st.lists(st.booleans(), min_size=1), KS)
def test_results_beyond_k_never_change_the_score(
    judged: tuple[list[list[bool]], int], extra_flags: list[bool], k: int
) -> None:
    matches, n_anchors = judged
    top = (matches + [[False] * n_anchors] * k)[:k]
    extra = [[flag] * n_anchors for flag in extra_flags]
    assert score_query(top + extra, n_anchors, k) == score_query(top, n_anchors, k)


@given(st.integers(min_value=1, max_value=6))
def test_perfect_retrieval_scores_one(n_anchors: int) -> None:
    identity = [[row == column for column in range(n_anchors)] for row in range(n_anchors)]
    score = score_query(identity, n_anchors, n_anchors)
    assert (score.precision_at_k, score.recall, score.mrr, score.f1) == (1.0, 1.0, 1.0, 1.0)
    assert score.first_relevant_rank == 1
