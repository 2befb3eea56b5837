"""Macro and token averages over queries (docs/metrics.md#macro-averages, golden aggregates of
docs/metrics.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    METRICS,
    MacroAverages,
    QueryScore,
    TokenAverages,
    TokenScore,
    macro_average,
    score_query,
    token_average,
)


def scored(precision_hits: int, first_rank: int, k: int = 5) -> QueryScore:
    """A one-anchor query with `precision_hits` relevant results, the first at `first_rank`."""
    flags = [False] * (first_rank - 1) + [True] * precision_hits
    flags += [False] * (k - len(flags))
    return score_query([[flag] for flag in flags], 1, k)


def test_empty_input_averages_to_zero() -> None:
    assert macro_average([]) == MacroAverages.from_values({item.key: 0.0 for item in METRICS})
    assert token_average([]) is None


def test_golden_bm25_aggregates() -> None:
    # (relevant hits, first rank) of the seven code.jsonl cases under bm25 (docs/metrics.md);
    # the golden prints six decimals, so each value must lie within half a unit of them.
    cases = [(2, 3), (1, 1), (3, 1), (5, 1), (3, 1), (1, 1), (1, 1)]
    averages = macro_average([scored(hits, rank) for hits, rank in cases])
    assert averages.precision_at_k == pytest.approx(0.457143, abs=5e-7)
    assert averages.recall == pytest.approx(1.000000, abs=5e-7)
    assert averages.mrr == pytest.approx(0.904762, abs=5e-7)
    assert averages.f1 == pytest.approx(0.581633, abs=5e-7)


def test_golden_vector_aggregates() -> None:
    cases = [(2, 1), (1, 1), (4, 1), (5, 1), (3, 1), (1, 1), (1, 1)]
    averages = macro_average([scored(hits, rank) for hits, rank in cases])
    assert averages.precision_at_k == pytest.approx(0.485714, abs=5e-7)
    assert averages.mrr == pytest.approx(1.000000, abs=5e-7)
    assert averages.f1 == pytest.approx(0.601474, abs=5e-7)


def test_macro_average_sums_left_to_right() -> None:
    precisions = [0.1] * 10
    scores = [QueryScore(p, 0.0, 0.0, 0.0, None, 0, None) for p in precisions]
    # Left-to-right doubles give 0.9999999999999999; a compensated sum would give 1.0.
    assert macro_average(scores).precision_at_k == 0.9999999999999999 / 10


def test_token_average_only_over_ranged_queries() -> None:
    ranged = QueryScore(0.2, 1.0, 1.0, 1 / 3, 1, 1, TokenScore(0.5, 1.0, 0.5))
    unranged = QueryScore(1.0, 1.0, 1.0, 1.0, 1, 5, None)
    assert token_average([unranged, ranged, unranged]) == TokenAverages(
        queries=1, precision=0.5, recall=1.0, iou=0.5
    )
    assert token_average([unranged]) is None
    two = token_average([ranged, QueryScore(0, 0, 0, 0, None, 0, TokenScore(0.25, 0.5, 0.0))])
    assert two == TokenAverages(queries=2, precision=0.375, recall=0.75, iou=0.25)


UNIT = st.floats(min_value=0.0, max_value=1.0)
SCORES = st.builds(
    QueryScore,
    UNIT,
    UNIT,
    UNIT,
    UNIT,
    st.none(),
    st.just(0),
    st.one_of(st.none(), st.builds(TokenScore, UNIT, UNIT, UNIT)),
)


@given(st.lists(SCORES, max_size=12))
def test_averages_stay_within_the_per_query_range(scores: list[QueryScore]) -> None:
    averages = macro_average(scores)
    for name in ("precision_at_k", "recall", "mrr", "f1"):
        values = [getattr(score, name) for score in scores] or [0.0]
        # Rounding may step at most one ulp-scale past the extremes.
        assert min(values) - 1e-12 <= getattr(averages, name) <= max(values) + 1e-12
    tokens = token_average(scores)
    ranged = [score.tokens for score in scores if score.tokens is not None]
    if tokens is None:
        assert ranged == []
    else:
        assert tokens.queries == len(ranged)
        assert 0.0 <= tokens.iou <= 1.0 + 1e-12
