"""`evaluate` against pytrec_eval (trec_eval), ir_measures and ranx on random collections.

Where the definitions coincide (docs/metrics.md#evaluate) every per-query score must be
equal to 1e-12. The collections are seeded: graded judgments 0..3 (and a few negative
ones for trec_eval), unjudged documents in the runs, queries with no relevant document,
queries missing from the run, and scores rounded to two decimals so that ties are
frequent — trec_eval's tie-breaking (score descending, then document id descending) is
part of what is checked. ranx breaks ties its own way, so its collections have distinct
scores; ranx also compiles its metrics with numba on first use (tens of seconds), so its
check is marked slow, as is the larger sweep.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from typing import Any

import ir_measures
import pytest
import pytrec_eval

from cce_metrics import evaluate, format_qrels, format_run, parse_qrels, parse_run

TOLERANCE = 1e-12

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

# Our name -> pytrec_eval's output key.
PYTREC = {
    "P@1": "P_1",
    "P@5": "P_5",
    "P@10": "P_10",
    "recall@5": "recall_5",
    "recall@1000": "recall_1000",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "ndcg": "ndcg",
    "map@5": "map_cut_5",
    "map@10": "map_cut_10",
    "map": "map",
    "mrr": "recip_rank",
    "rprec": "Rprec",
    "hit@1": "success_1",
    "hit@5": "success_5",
    "hit@10": "success_10",
}
PYTREC_MEASURES = {
    "P.1,5,10",
    "recall.5,1000",
    "ndcg_cut.5,10",
    "ndcg",
    "map_cut.5,10",
    "map",
    "recip_rank",
    "Rprec",
    "success.1,5,10",
}

# Our name -> ir_measures' measure name (RR@k is computed by ir_measures itself).
IR_MEASURES = {
    "P@5": "P@5",
    "recall@10": "R@10",
    "ndcg@10": "nDCG@10",
    "ndcg": "nDCG",
    "map@10": "AP@10",
    "map": "AP",
    "mrr": "RR",
    "mrr@5": "RR@5",
    "rprec": "Rprec",
    "hit@5": "Success@5",
}

# Our name -> ranx's metric name.
RANX = {
    "P@5": "precision@5",
    "recall@10": "recall@10",
    "f1@5": "f1@5",
    "ndcg@10": "ndcg@10",
    "ndcg": "ndcg",
    "map@10": "map@10",
    "map": "map",
    "mrr": "mrr",
    "mrr@5": "mrr@5",
    "rprec": "r-precision",
    "hit@5": "hit_rate@5",
}


def collection(
    seed: int,
    n_queries: int,
    *,
    ties: bool,
    negatives: bool,
    complete: bool,
    binary: bool = False,
) -> tuple[Qrels, Run]:
    """A random collection; `complete` keeps every query in the run with a relevant document."""
    rng = random.Random(seed)
    qrels: Qrels = {}
    run: Run = {}
    grades = [0, 1] if binary else [0, 0, 1, 1, 1, 2, 3]
    grades += [-1] if negatives else []
    for number in range(n_queries):
        query = f"q{number:04d}"
        docs = [f"d{index}" for index in range(rng.randint(1, 40))]
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        qrels[query] = {doc: rng.choice(grades) for doc in judged}
        if complete:
            qrels[query][judged[0]] = rng.randint(1, 3)
        elif rng.random() < 0.05:
            continue  # judged but missing from the run
        retrieved = rng.sample(docs, rng.randint(1 if complete else 0, len(docs)))
        if ties:
            run[query] = {doc: round(rng.random(), 2) for doc in retrieved}
        else:
            distinct = rng.sample(range(10**9), len(retrieved))
            run[query] = {doc: value / 1e6 for doc, value in zip(retrieved, distinct, strict=True)}
    return qrels, run


def check_against_pytrec_eval(qrels: Qrels, run: Run) -> int:
    ours = evaluate(qrels, run, list(PYTREC))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    # trec_eval scores only the judged queries that the run has; cce scores the others as
    # an empty ranking (all 0.0), and its means count them (trec_eval -c).
    assert set(theirs) == set(qrels) & set(run)
    compared = 0
    for query, scores in ours.per_query.items():
        for name, key in PYTREC.items():
            expected = theirs[query][key] if query in theirs else 0.0
            assert abs(scores[name] - expected) <= TOLERANCE, (query, name, scores[name], expected)
            compared += 1
    for name, key in PYTREC.items():
        mean = math.fsum(theirs[q][key] for q in theirs) / len(qrels)
        assert abs(ours.aggregate[name] - mean) <= TOLERANCE, name
    return compared


@pytest.mark.parametrize("binary", [False, True], ids=["graded", "binary"])
def test_pytrec_eval_2000_queries_with_ties(binary: bool) -> None:
    qrels, run = collection(11, 2000, ties=True, negatives=True, complete=False, binary=binary)
    assert len(qrels) - len(run) > 40  # some judged queries really are missing from the run
    assert sum(1 for docs in run.values() if not docs) > 20  # some runs are empty
    assert check_against_pytrec_eval(qrels, run) == 2000 * len(PYTREC)


def float32_tie_collection(seed: int, n_queries: int) -> tuple[Qrels, Run]:
    """Scores near 10**6 in steps of 0.01: float32 (spacing 0.0625 there) ties many of them."""
    rng = random.Random(seed)
    qrels: Qrels = {}
    run: Run = {}
    for number in range(n_queries):
        query = f"q{number:04d}"
        docs = [f"d{index}" for index in range(rng.randint(1, 30))]
        qrels[query] = {doc: rng.choice([0, 1, 1, 2]) for doc in rng.sample(docs, len(docs) // 2)}
        run[query] = {doc: 1e6 + rng.randint(0, 40) / 100 for doc in docs}
    return qrels, run


def test_trec_eval_tie_rule_reproduces_pytrec_eval_where_float32_ties() -> None:
    # The documented example: 1e6 + 0.03 and 1e6 are one float32.
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1e6 + 0.03, "b": 1e6}}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert theirs["q"]["recip_rank"] == 0.5
    assert evaluate(qrels, run, ["mrr"]).aggregate["mrr"] == 1.0
    assert evaluate(qrels, run, ["mrr"], ties="trec_eval").aggregate["mrr"] == 0.5

    qrels, run = float32_tie_collection(15, 2000)
    ours = evaluate(qrels, run, list(PYTREC), ties="trec_eval")
    exact = evaluate(qrels, run, list(PYTREC))
    theirs = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    differs = 0
    for query, scores in ours.per_query.items():
        for name, key in PYTREC.items():
            expected = theirs[query][key] if query in theirs else 0.0
            assert abs(scores[name] - expected) <= TOLERANCE, (query, name)
            differs += abs(exact.per_query[query][name] - expected) > TOLERANCE
    assert differs > 1000  # the default rule really does rank these runs differently


def test_trec_files_read_like_pytrec_eval_and_ir_measures_read_them() -> None:
    qrels, run = collection(14, 300, ties=True, negatives=True, complete=False)
    run_text, qrels_text = format_run(run, tag="x"), format_qrels(qrels)
    # A query that retrieved nothing has no line in a run file.
    run = {query: docs for query, docs in run.items() if docs}
    assert dict(pytrec_eval.parse_run(run_text.splitlines())) == run == parse_run(run_text)
    assert dict(pytrec_eval.parse_qrel(qrels_text.splitlines())) == qrels == parse_qrels(qrels_text)
    read_trec_run: Callable[[str], Iterable[Any]] = ir_measures.read_trec_run
    scored = {(d.query_id, d.doc_id): d.score for d in read_trec_run(run_text)}
    assert scored == {(q, doc): score for q, docs in run.items() for doc, score in docs.items()}
    # trec_eval scores what cce writes exactly as cce scores what it holds.
    assert check_against_pytrec_eval(parse_qrels(qrels_text), parse_run(run_text)) > 0


def test_ir_measures_2000_queries() -> None:
    # Distinct scores: ir_measures computes RR@k with its MS MARCO provider, which breaks
    # ties by document id ascending (see the test below).
    qrels, run = collection(12, 2000, ties=False, negatives=False, complete=True)
    ours = evaluate(qrels, run, list(IR_MEASURES))
    measures = {ir_measures.parse_measure(text): name for name, text in IR_MEASURES.items()}
    compared = 0
    for metric in ir_measures.iter_calc(list(measures), qrels, run):
        name = measures[metric.measure]
        value = ours.per_query[metric.query_id][name]
        assert abs(value - metric.value) <= TOLERANCE, (metric, value)
        compared += 1
    assert compared == 2000 * len(IR_MEASURES)


def test_ir_measures_rr_at_k_breaks_ties_the_other_way() -> None:
    measure = ir_measures.parse_measure("RR@5")
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    (theirs,) = ir_measures.iter_calc([measure], {"q": {"a": 1}}, run)
    assert theirs.value == 1.0  # "a" first: ascending ids
    # cce, like trec_eval, ranks "c", "b", "a".
    assert evaluate({"q": {"a": 1}}, run, ["mrr@5"]).aggregate["mrr@5"] == 1.0 / 3.0


@pytest.mark.slow
def test_ranx_ties_follow_its_sort_not_the_document_ids() -> None:
    ranx = pytest.importorskip("ranx")
    # a and b tie; cce (like trec_eval) puts the greater id, b, first.
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 0.5, "b": 0.5}}
    assert evaluate(qrels, run, ["mrr"]).aggregate["mrr"] == 0.5
    # ranx.Run keeps the insertion order of tied documents: a, then b.
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "mrr") == 1.0
    assert ranx.evaluate(ranx.Qrels(qrels), ranx.Run({"q": {"b": 0.5, "a": 0.5}}), "mrr") == 0.5
    # Plain dictionaries take another path in ranx, which reverses that order.
    assert ranx.evaluate(qrels, run, "mrr") == 0.5
    # ranx's sort is not stable: among 100 tied documents, the first inserted is not first
    # (nor last), so no id or insertion rule reproduces its order.
    tied = {f"d{index:03d}": 0.5 for index in range(100)}
    first = ranx.evaluate(ranx.Qrels({"q": {"d000": 1}}), ranx.Run({"q": tied}), "mrr")
    assert first not in (1.0, 1.0 / 100)
    assert evaluate({"q": {"d099": 1}}, {"q": tied}, ["mrr"]).aggregate["mrr"] == 1.0
    # ranx's hits@k is a count (2 relevant in the top 5), which is why cce refuses "hits".
    two = {"q": {"a": 1, "b": 1}}
    assert ranx.evaluate(ranx.Qrels(two), ranx.Run(run), "hits@5") == 2.0
    assert evaluate(two, run, ["hit@5"]).aggregate["hit@5"] == 1.0


@pytest.mark.slow
def test_ranx_2000_queries() -> None:
    ranx = pytest.importorskip("ranx")
    qrels, run = collection(13, 2000, ties=False, negatives=False, complete=True)
    ours = evaluate(qrels, run, list(RANX))
    ranx_qrels = ranx.Qrels(
        {q: {d: r for d, r in docs.items() if r >= 1} for q, docs in qrels.items()}
    )
    ranx_run = ranx.Run(run)
    theirs = ranx.evaluate(ranx_qrels, ranx_run, list(RANX.values()), return_mean=False)
    query_ids = list(ranx_qrels.keys())
    assert sorted(query_ids) == sorted(qrels)
    for name, text in RANX.items():
        for query, value in zip(query_ids, theirs[text], strict=True):
            assert abs(ours.per_query[query][name] - float(value)) <= TOLERANCE, (query, name)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20, 30))
def test_pytrec_eval_sweep(seed: int) -> None:
    qrels, run = collection(seed, 5000, ties=seed % 2 == 0, negatives=True, complete=False)
    check_against_pytrec_eval(qrels, run)
