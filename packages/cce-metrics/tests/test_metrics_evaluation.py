"""`evaluate(qrels, run, metrics)` over plain dictionaries (docs/metrics.md#evaluate)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import numpy as np
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


def test_empty_qrels_is_an_error_not_a_mean_of_zero() -> None:
    with pytest.raises(ValueError, match="qrels holds no query"):
        evaluate({}, {"q": {"a": 1.0}}, ["ndcg@10"])
    # A judged query without judgments is still a query (scored 0.0).
    assert evaluate({"q": {}}, {}, ["ndcg@10"]).aggregate == {"ndcg@10": 0.0}


def test_numpy_scalars_are_read_as_the_numbers_they_hold() -> None:
    # pandas and numpy pipelines hand over numpy scalars; numpy itself (.item()) says
    # which Python numbers they are, and evaluate must score those.
    rng = np.random.default_rng(7)
    qrels_np = {
        f"q{q}": {f"d{d}": np.int64(rel) for d, rel in enumerate(rng.integers(-1, 4, 30))}
        for q in range(50)
    }
    run_np = {
        f"q{q}": {f"d{d}": np.float32(score) for d, score in enumerate(rng.random(40) * 1e3)}
        for q in range(50)
    }
    qrels = {q: {d: rel.item() for d, rel in docs.items()} for q, docs in qrels_np.items()}
    run = {q: {d: score.item() for d, score in docs.items()} for q, docs in run_np.items()}
    metrics = ["P@5", "recall@10", "ndcg@10", "map", "mrr", "rprec"]
    assert evaluate(qrels_np, run_np, metrics) == evaluate(qrels, run, metrics)
    assert evaluate(qrels_np, run_np, metrics).aggregate["ndcg@10"] > 0.0
    one = evaluate({"q": {"a": np.int32(2)}}, {"q": {"a": np.float64(0.5)}}, ["ndcg"])
    assert one.aggregate == {"ndcg": 1.0}


@pytest.mark.parametrize(
    ("qrels", "run", "metrics", "message"),
    [
        ({"q": {"a": 1, 2: 1}}, {"q": {"a": 1.0}}, ["mrr"], r"document id 2 is a int"),
        ({"q": {"a": 1}}, {"q": {"a": 1.0, 2: 0.5}}, ["mrr"], r"document id 2 is a int"),
        ({"q": {"a": 1}, 7: {"a": 1}}, {"q": {"a": 1.0}}, ["mrr"], r"query id 7 is a int"),
        ({"q": {"a": 1}}, {"q": ["a", "b"]}, ["mrr"], r"run\['q'\] is a list"),
        ({"q": [("a", 1)]}, {"q": {"a": 1.0}}, ["mrr"], r"qrels\['q'\] is a list"),
        ({"q": {"a": 1}}, {"q": {"a": [0.5]}}, ["mrr"], r"is a list: a score must be"),
        ({"q": {"a": 1}}, {"q": {"a": Decimal("0.5")}}, ["mrr"], r"is a Decimal"),
        ({"q": {"a": 1}}, {"q": {"a": "0.5"}}, ["mrr"], r"is a str: a score must be"),
        ({"q": {"a": 1.5}}, {"q": {"a": 1.0}}, ["mrr"], r"is a float: a relevance must"),
        ({"q": {"a": True}}, {"q": {"a": 1.0}}, ["mrr"], r"is a bool: a relevance must"),
        ({"q": {"a": 1}}, {"q": {"a": True}}, ["mrr"], r"is a bool: a score must"),
        ([("q", "a", 1)], {"q": {"a": 1.0}}, ["mrr"], r"qrels is a list"),
    ],
)
def test_wrong_shapes_are_type_errors_naming_the_shape(
    qrels: Any, run: Any, metrics: list[str], message: str
) -> None:
    with pytest.raises(TypeError, match=message) as raised:
        evaluate(qrels, run, metrics)
    assert "expected {query_id: {doc_id: " in str(raised.value)


def test_metrics_as_one_string_is_a_type_error() -> None:
    # A str is a sequence of names too: "P@5" would be read as "P", "@", "5".
    with pytest.raises(TypeError, match=r"single string 'P@5'.*\['P@5'\]"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "P@5")


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
    with pytest.raises(ValueError, match="finite"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 10**400}}, ["mrr"])
    with pytest.raises(ValueError, match="finite"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1e308, "b": 1e308, "c": -math.inf}}, ["mrr"])
    # Finite scores whose sum overflows are fine.
    assert evaluate({"q": {"a": 1}}, {"q": {"a": 1e308, "b": 1e308}}, ["mrr"]).aggregate == {
        "mrr": 0.5
    }


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


class CountingJudgments(Mapping[str, int]):
    """Judgments that count how often they are read (lookups and iterations)."""

    def __init__(self, judgments: dict[str, int]) -> None:
        self.judgments = judgments
        self.reads = 0

    def __getitem__(self, doc: str) -> int:
        self.reads += 1
        return self.judgments[doc]

    def __iter__(self) -> Iterator[str]:
        self.reads += 1
        return iter(self.judgments)

    def __len__(self) -> int:
        return len(self.judgments)


def test_a_query_is_reduced_once_for_all_its_metrics() -> None:
    # Every metric reads the same reduction of the query, so asking for eight metrics
    # reads the judgments no more often than asking for one.
    run = {"q": {f"d{index}": float(index % 7) for index in range(60)}}
    judgments = {f"d{index}": index % 4 for index in range(0, 90, 3)}
    one, eight = CountingJudgments(judgments), CountingJudgments(judgments)
    evaluate({"q": one}, run, ["mrr"])
    many = ["P@5", "recall", "ndcg@10", "map", "mrr", "hit@3", "rprec", "f1@5"]
    result = evaluate({"q": eight}, run, many)
    assert eight.reads == one.reads
    assert result == evaluate({"q": judgments}, run, many)


class LoggedScores(Mapping[str, float]):
    """One query's scores that log the query id on every read, to a shared list."""

    def __init__(self, query_id: str, scores: dict[str, float], log: list[str]) -> None:
        self.query_id = query_id
        self.scores = scores
        self.log = log

    def __getitem__(self, doc: str) -> float:
        self.log.append(self.query_id)
        return self.scores[doc]

    def __iter__(self) -> Iterator[str]:
        self.log.append(self.query_id)
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)


def test_each_query_is_checked_and_ranked_in_one_visit() -> None:
    # A query's scores are checked just before they are ranked, not in a separate sweep
    # over the whole run first: on large runs the second sweep is mostly cache misses.
    log: list[str] = []
    plain = {
        query_id: {f"d{index}": float((index * 7 + number) % 11) for index in range(30)}
        for number, query_id in enumerate(("q1", "q2", "q3"))
    }
    run = {query_id: LoggedScores(query_id, scores, log) for query_id, scores in plain.items()}
    qrels = {query_id: {f"d{index}": index % 3 for index in range(0, 40, 2)} for query_id in plain}
    result = evaluate(qrels, run, ["mrr", "ndcg@10", "P@5"])
    assert [query_id for query_id, _ in itertools.groupby(log)] == ["q1", "q2", "q3"]
    assert result == evaluate(qrels, plain, ["mrr", "ndcg@10", "P@5"])


def test_unjudged_run_queries_are_still_checked() -> None:
    with pytest.raises(TypeError, match=r"run\['other'\]\['a'\] = '1' is a str"):
        bad: Any = {"q": {"a": 1.0}, "other": {"a": "1"}}
        evaluate({"q": {"a": 1}}, bad, ["mrr"])
    with pytest.raises(ValueError, match="finite"):
        evaluate({"q": {"a": 1}}, {"other": {"a": math.nan}}, ["mrr"])


def test_a_tie_is_found_on_either_side_of_the_sorted_scores() -> None:
    # Equal scores (0.0 and -0.0 included) rank by document id descending wherever the
    # tie sits among the sorted scores: lowest, middle or highest.
    run = {"q": {"a": 0.0, "b": -0.0, "c": 0.5, "d": 0.5, "e": 0.9, "f": 0.9, "g": 0.2}}
    for doc in run["q"]:
        expected = rank_documents(run["q"]).index(doc) + 1
        got = evaluate({"q": {doc: 1}}, run, ["mrr"]).per_query["q"]["mrr"]
        assert got == 1.0 / expected, doc


TREC_EVAL_SPELLINGS = ("P_5", "recall_10", "ndcg_cut_10", "recip_rank", "map", "success_10")


def test_trec_eval_spellings_score_as_pytrec_eval_scores_them() -> None:
    """A trec_eval user's measure names (`P_5`, `ndcg_cut_10`, ...) mean what they mean
    there: the same numbers as pytrec_eval under the same names, per query."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import random

    rng = random.Random(29)
    qrels = {
        f"q{n}": {f"d{d}": rng.choice((0, 1, 2)) for d in rng.sample(range(30), 8)}
        for n in range(40)
    }
    run = {
        f"q{n}": {f"d{d}": round(rng.random(), 3) for d in rng.sample(range(30), 15)}
        for n in range(40)
    }
    ours = evaluate(qrels, run, list(TREC_EVAL_SPELLINGS), ties="trec_eval")
    measures = {"P", "recall", "ndcg_cut", "recip_rank", "map", "success"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    # pytrec_eval treats grade 1 and up as relevant for P, recall, RR, AP and success,
    # as cce does; nDCG uses the grades as gains in both.
    for query, values in theirs.items():
        for name in TREC_EVAL_SPELLINGS:
            assert ours.per_query[query][name] == pytest.approx(values[name], abs=1e-12), name
    assert parse_measure("ndcg_cut.10") == parse_measure("ndcg@10")
    with pytest.raises(ValueError, match="unknown metric 'P_x'"):
        parse_measure("P_x")


_NEAR_TIES = st.sampled_from(
    [
        0.0,
        -0.0,
        1.0,
        1.0 + 1e-9,
        1.0 + 2e-9,
        1e6,
        1e6 + 0.01,
        1e6 + 0.03,
        1e6 + 0.07,
        3.4e38,
        1e39,
        2e39,
        -1e39,
        -1.0,
        -1.0 - 1e-9,
    ]
)


@given(
    st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), _NEAR_TIES, max_size=12),
    st.dictionaries(st.sampled_from([f"d{i}" for i in range(14)]), st.integers(-1, 3), max_size=14),
)
def test_trec_eval_ties_rank_like_a_full_float32_ranking(
    scores: dict[str, float], judgments: dict[str, int]
) -> None:
    # The reduction ranks only the relevant documents, reading float32 scores off the
    # sorted doubles; the oracle ranks every document by its float32 score.
    from cce_metrics.evaluation import rank_documents, rank_relevant, reduce_ranking

    want = reduce_ranking(judgments, rank_documents(scores, "trec_eval"))
    got = rank_relevant(judgments, scores, float32=True)
    assert (got.ranks, got.gains, got.ideal, got.retrieved) == (
        want.ranks,
        want.gains,
        want.ideal,
        want.retrieved,
    )
