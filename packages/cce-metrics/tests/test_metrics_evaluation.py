"""`evaluate(qrels, run, metrics)` over plain dictionaries (docs/metrics.md#evaluate)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    Measure,
    anchor_gains,
    average_precision_at_k,
    evaluate,
    ndcg_at_k,
    parse_measure,
    rank_documents,
    score_query,
)


def test_small_example() -> None:
    qrels = {"q1": {"a": 1, "b": 2, "z": 0}, "q2": {"c": 1}}
    run = {"q1": {"a": 0.5, "b": 0.1, "x": 0.9}, "q2": {"c": 3.0, "a": 1.0}}
    result = evaluate(qrels, run, ["P@2", "recall@2", "mrr", "ndcg@2", "map", "hit@1", "rprec"])
    assert result.metrics == ("P@2", "recall@2", "mrr", "ndcg@2", "map", "hit@1", "rprec")
    # q1 ranking: x (0.9), a (0.5), b (0.1).
    q1 = result.per_query["q1"]
    assert q1["P@2"] == 0.5
    assert q1["recall@2"] == 0.5
    assert q1["mrr"] == 0.5
    assert q1["ndcg@2"] == (1.0 / math.log2(3)) / (2.0 + 1.0 / math.log2(3))
    assert q1["map"] == (1.0 / 2.0 + 2.0 / 3.0) / 2.0
    assert q1["hit@1"] == 0.0
    assert q1["rprec"] == 0.5
    assert result.per_query["q2"] == {
        "P@2": 0.5,
        "recall@2": 1.0,
        "mrr": 1.0,
        "ndcg@2": 1.0,
        "map": 1.0,
        "hit@1": 1.0,
        "rprec": 1.0,
    }
    assert result.aggregate["mrr"] == 0.75
    assert list(result.per_query) == ["q1", "q2"]


def test_query_missing_from_the_run_scores_zero_and_counts_in_the_mean() -> None:
    result = evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}}, ["mrr", "P@1"])
    assert result.per_query["q2"] == {"mrr": 0.0, "P@1": 0.0}
    assert result.aggregate == {"mrr": 0.5, "P@1": 0.5}


def test_run_queries_without_judgments_are_ignored() -> None:
    result = evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "extra": {"a": 1.0}}, ["mrr"])
    assert list(result.per_query) == ["q1"]
    assert result.aggregate == {"mrr": 1.0}


def test_no_queries_gives_zero_means() -> None:
    assert evaluate({}, {}, ["ndcg@10"]).aggregate == {"ndcg@10": 0.0}


def test_ties_are_broken_by_document_id_descending() -> None:
    assert rank_documents({"a": 0.5, "c": 0.5, "b": 0.5, "z": 0.1, "y": 0.9}) == [
        "y",
        "c",
        "b",
        "a",
        "z",
    ]
    # The relevant "a" is third among three equal scores.
    result = evaluate({"q": {"a": 1}}, {"q": {"a": 0.5, "b": 0.5, "c": 0.5}}, ["mrr"])
    assert result.per_query["q"]["mrr"] == 1.0 / 3.0


def test_negative_and_zero_judgments_are_not_relevant() -> None:
    result = evaluate(
        {"q": {"a": -1, "b": 0, "c": 1}}, {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, ["ndcg"]
    )
    assert result.per_query["q"]["ndcg"] == 0.5


def test_metric_names_keep_the_callers_spelling_and_drop_repeats() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["nDCG@10", "ndcg@10", "nDCG@10"])
    assert result.metrics == ("nDCG@10", "ndcg@10")
    assert result.aggregate == {"nDCG@10": 1.0, "ndcg@10": 1.0}


@pytest.mark.parametrize(
    ("text", "measure"),
    [
        ("P@5", Measure("precision", 5)),
        ("precision@5", Measure("precision", 5)),
        ("recall", Measure("recall", None)),
        ("R@100", Measure("recall", 100)),
        ("nDCG@10", Measure("ndcg", 10)),
        ("ndcg_cut@10", Measure("ndcg", 10)),
        ("MAP", Measure("map", None)),
        ("AP@10", Measure("map", 10)),
        ("RR@10", Measure("mrr", 10)),
        ("recip_rank", Measure("mrr", None)),
        ("success@1", Measure("hit", 1)),
        ("hit_rate@5", Measure("hit", 5)),
        ("Rprec", Measure("rprec", None)),
        ("r-precision", Measure("rprec", None)),
        ("f1@3", Measure("f1", 3)),
        (" mrr @ 3 ", Measure("mrr", 3)),
    ],
)
def test_metric_names(text: str, measure: Measure) -> None:
    assert parse_measure(text) == measure


def test_measure_prints_its_canonical_name() -> None:
    assert str(parse_measure("nDCG@10")) == "ndcg@10"
    assert str(parse_measure("RR")) == "mrr"


def test_hits_is_refused_because_ranx_counts_with_it() -> None:
    # ranx's hits@5 is the number of relevant documents in the top 5 (2.0 here), not
    # cce's hit@5 (1.0); accepting the spelling would hand back the wrong number.
    qrels, run = {"q": {"a": 1, "b": 1}}, {"q": {"a": 2.0, "b": 1.0}}
    assert evaluate(qrels, run, ["hit@5"]).aggregate["hit@5"] == 1.0
    with pytest.raises(ValueError, match=r"counts the relevant documents.*hit@k.*P@k"):
        evaluate(qrels, run, ["hits@5"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bpref", "unknown metric 'bpref'"),
        ("P", "needs a cut-off"),
        ("f1", "needs a cut-off"),
        ("ndcg@0", "positive integer"),
        ("ndcg@x", "unknown metric"),
        ("", "unknown metric"),
    ],
)
def test_bad_metric_names(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_measure(text)


def test_bad_scores_and_relevances_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        evaluate({"q": {"a": 1}}, {"q": {"a": math.nan}}, ["mrr"])
    with pytest.raises(ValueError, match="finite"):
        evaluate({"q": {"a": 1}}, {"q": {"a": math.inf}}, ["mrr"])
    with pytest.raises(ValueError, match="integer"):
        evaluate({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, ["mrr"])  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="integer"):
        evaluate({"q": {"a": True}}, {"q": {"a": 1.0}}, ["mrr"])


runs = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.integers(min_value=0, max_value=5)),
    max_size=8,
    unique_by=lambda item: item[0],
)
judged = st.dictionaries(st.sampled_from("abcdefgh"), st.integers(min_value=0, max_value=2))


@given(runs, judged, st.integers(min_value=1, max_value=10))
def test_documents_are_anchors(
    ranked_docs: list[tuple[str, int]], qrels: dict[str, int], k: int
) -> None:
    """With one anchor per relevant document, the anchor metrics and `evaluate` agree."""
    run = {doc: float(score) for doc, score in ranked_docs}
    ranking = rank_documents(run)
    relevant = sorted(doc for doc, rel in qrels.items() if rel >= 1)
    matches = [[doc == anchor for anchor in relevant] for doc in ranking]
    result = evaluate({"q": qrels}, {"q": run}, [f"P@{k}", f"recall@{k}", f"mrr@{k}", f"f1@{k}"])
    chunk = score_query(matches, len(relevant), k)
    scores = result.per_query["q"]
    assert scores[f"P@{k}"] == chunk.precision_at_k
    assert scores[f"recall@{k}"] == chunk.recall
    assert scores[f"mrr@{k}"] == chunk.mrr
    assert scores[f"f1@{k}"] == chunk.f1
    gains = [float(qrels[anchor]) for anchor in relevant]
    graded = evaluate({"q": qrels}, {"q": run}, [f"ndcg@{k}", f"map@{k}"]).per_query["q"]
    assert graded[f"ndcg@{k}"] == ndcg_at_k(matches, gains, k)
    assert graded[f"map@{k}"] == average_precision_at_k(matches, anchor_gains(len(relevant)), k)
