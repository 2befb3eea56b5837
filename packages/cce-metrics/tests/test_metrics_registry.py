"""The metric registry: declarations, lookup, judgments with secondary anchors, extension."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    CHUNK,
    METRICS,
    TOKEN,
    TOKEN_METRICS,
    Judgment,
    MacroAverages,
    Metric,
    MetricRegistry,
    QueryScore,
    TokenScore,
    evaluate,
    judgment,
    macro_average,
    metric,
    parse_measure,
    score_query,
    token_average,
)


def test_reference_metrics_in_report_order() -> None:
    reference = METRICS.defaults()
    assert tuple(item.name for item in reference) == ("precision", "recall", "mrr", "f1")
    assert tuple(item.key for item in reference) == ("precision_at_k", "recall", "mrr", "f1")
    assert [item.label for item in reference] == ["P@k", "recall", "MRR", "F1"]
    assert METRICS.names()[:4] == ("precision", "recall", "mrr", "f1")
    assert all(item.higher_is_better for item in METRICS)
    assert [item.label for item in TOKEN_METRICS] == ["tok-P", "tok-recall", "tok-IoU"]
    assert [item.report_key for item in TOKEN_METRICS] == ["precision", "recall", "iou"]


def test_lookup_by_name_or_key() -> None:
    assert METRICS.get("precision") is METRICS.get("precision_at_k")
    assert metric("token_iou").label == "tok-IoU"
    assert metric("mrr").key == "mrr"
    assert "precision_at_k" in METRICS and "ndcg-ish" not in METRICS


def test_unknown_metric_lists_every_name() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'bpref'.*precision, recall, mrr, f1"):
        metric("bpref")
    with pytest.raises(ValueError, match="token-iou"):
        metric("nope")


def test_duplicate_name_or_key_is_rejected() -> None:
    clash = Metric("mrr", "mean_rr", "MRR2", lambda j: 0.0)
    with pytest.raises(ValueError, match="already registered"):
        METRICS.register(clash)
    with pytest.raises(ValueError, match="belongs to group"):
        METRICS.register(Metric("x", "x", "x", lambda j: 0.0, group=TOKEN))
    fresh = MetricRegistry(CHUNK, [Metric("x", "x_key", "X", lambda j: 1.0)])
    with pytest.raises(ValueError, match="already registered"):
        fresh.register(Metric("y", "x_key", "Y", lambda j: 1.0))


def test_secondary_anchors_do_not_move_the_reference_four() -> None:
    # Columns: two expected anchors, then one secondary anchor with gain 0.5.
    rows = [[False, False, True], [True, False, False], [False, False, True]]
    judged = judgment(rows, 2, 3, secondary=1, gains=[1.0, 1.0, 0.5])
    assert judged.n_anchors == 3 and judged.gains == (1.0, 1.0, 0.5)
    assert judged.relevant == (False, True, False)
    with_secondary = QueryScore.from_judgment(judged)
    expected_only = score_query([row[:2] for row in rows], 2, 3)
    for item in METRICS.defaults():
        assert with_secondary.values[item.key] == expected_only.values[item.key]
    assert with_secondary.first_relevant_rank == expected_only.first_relevant_rank
    assert with_secondary.relevant_retrieved == expected_only.relevant_retrieved
    assert with_secondary.first_relevant_rank == 2
    reference = {item.key: with_secondary.values[item.key] for item in METRICS.defaults()}
    assert reference == {"precision_at_k": 1 / 3, "recall": 0.5, "mrr": 0.5, "f1": 0.4}


def test_judgment_validation() -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        judgment([], 1, 0)
    with pytest.raises(ValueError, match="result 1 has 1 judgments, expected 2"):
        judgment([[True]], 1, 5, secondary=1)
    with pytest.raises(ValueError, match="1 gains given for 2 anchors"):
        judgment([[True, False]], 1, 5, secondary=1, gains=[1.0])
    # Rows beyond k are neither kept nor checked.
    assert judgment([[True], [True, True]], 1, 1).matches == ((True,),)


def test_token_metrics_read_the_token_score_and_skip_unranged_queries() -> None:
    ranged = score_query([[True]], 1, 1, TokenScore(0.25, 0.5, 0.125))
    unranged = score_query([[True]], 1, 1)
    assert ranged.value("token_precision") == 0.25
    assert ranged.value("token_iou") == 0.125
    assert unranged.value("token_recall") is None
    recall = TOKEN_METRICS.get("token-recall")
    assert recall.average([unranged.value(recall.key), ranged.value(recall.key)]) == 0.5
    assert recall.average([None]) is None
    assert METRICS.get("mrr").average([]) == 0.0
    averages = token_average([unranged, ranged])
    assert averages is not None and averages.value("token_iou") == 0.125
    with pytest.raises(KeyError):
        ranged.value("nope")


def test_a_registered_metric_is_scored_and_averaged(monkeypatch: pytest.MonkeyPatch) -> None:
    hits = Metric(
        "hits",
        "hits_at_k",
        "hits",
        lambda j: float(j.relevant_retrieved),
        aggregate=lambda values: max(values, default=0.0),
        default=False,
    )
    registry = MetricRegistry(CHUNK, METRICS)
    registry.register(hits)
    monkeypatch.setattr("cce_metrics.queries.METRICS", registry)
    monkeypatch.setattr("cce_metrics.averages.METRICS", registry)
    scores = [score_query([[True], [True]], 1, 2), score_query([[False], [True]], 1, 2)]
    assert [score.values["hits_at_k"] for score in scores] == [2.0, 1.0]
    averages = macro_average(scores)
    assert averages.value("hits_at_k") == 2.0
    assert averages.mrr == 0.75
    # Hand-built scores without the new key still average the keys they share.
    assert macro_average([QueryScore(1.0, 1.0, 1.0, 1.0, 1, 1)]) == MacroAverages(1, 1, 1, 1)


def test_scores_are_immutable_and_compare_by_value() -> None:
    score = score_query([[True]], 1, 1)
    with pytest.raises(AttributeError):
        score.tokens = None
    ranked = {item.key: 1.0 for item in METRICS if not item.default}
    assert score == QueryScore(1.0, 1.0, 1.0, 1.0, 1, 1, extra=ranked)
    assert hash(score) == hash(QueryScore(1.0, 1.0, 1.0, 1.0, 1, 1, extra=ranked))
    assert "precision_at_k=1.0" in repr(score)
    assert isinstance(judgment([[True]], 1, 1), Judgment)


@given(
    st.lists(st.lists(st.booleans(), min_size=3, max_size=3), max_size=8),
    st.integers(min_value=1, max_value=10),
)
def test_registry_scores_equal_the_closed_form(rows: list[list[bool]], k: int) -> None:
    score = score_query(rows, 3, k)
    counted = rows[:k]
    relevant = [any(row) for row in counted]
    precision = relevant.count(True) / k
    recall = sum(any(row[j] for row in counted) for j in range(3)) / 3
    first = relevant.index(True) + 1 if any(relevant) else None
    assert score.precision_at_k == precision
    assert score.recall == recall
    assert score.mrr == (0.0 if first is None else 1.0 / first)
    assert score.first_relevant_rank == first


def test_evaluate_names_are_the_registry_names_and_aliases() -> None:
    offered = [item for item in METRICS if item.ranking_score is not None]
    assert [item.name for item in offered] == list(METRICS.names())
    for item in offered:
        for spelling in (
            item.name,
            item.name.upper(),
            *item.aliases,
            *map(str.swapcase, item.aliases),
        ):
            cutoff = "@3" if item.needs_cutoff else ""
            assert parse_measure(spelling + cutoff).name == item.name, spelling
        if item.needs_cutoff:
            with pytest.raises(ValueError, match="needs a cut-off"):
                parse_measure(item.name)
    for item in TOKEN_METRICS:
        with pytest.raises(ValueError, match="unknown metric"):
            parse_measure(item.name)


def test_a_registered_metric_is_offered_by_evaluate(monkeypatch: pytest.MonkeyPatch) -> None:
    found = Metric(
        "found",
        "found_at_k",
        "found",
        lambda j: float(j.relevant_retrieved),
        default=False,
        ranking_score=lambda ranking, k: float(
            len([r for r in ranking.ranks if k is None or r <= k])
        ),
        aliases=("num_rel_ret",),
    )
    registry = MetricRegistry(CHUNK, METRICS)
    registry.register(found)
    monkeypatch.setattr("cce_metrics.evaluation.METRICS", registry)
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    result = evaluate({"q": {"a": 1, "c": 2}}, run, ["found@2", "NUM_REL_RET", "mrr"])
    assert result.aggregate == {"found@2": 1.0, "NUM_REL_RET": 2.0, "mrr": 1.0}


def test_a_spelling_names_one_metric_only() -> None:
    registry = MetricRegistry(CHUNK, METRICS)
    score = lambda ranking, k: 0.0  # noqa: E731
    with pytest.raises(ValueError, match="spelling 'rr' already names 'mrr'"):
        registry.register(
            Metric("rank", "rank", "rank", lambda j: 0.0, ranking_score=score, aliases=("rr",))
        )
