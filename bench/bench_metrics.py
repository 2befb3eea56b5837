"""Wall time of `cce_metrics.evaluate` beside pytrec_eval and ranx on one large collection.

Why it exists: `evaluate` is meant to be a drop-in for the two libraries IR code already
uses, so its speed only means something next to theirs, on the same machine, in the
same process, on the same dictionaries. This script builds one seeded collection
(10,000 queries × 100 retrieved documents, graded judgments, by default) and times:

- cce: `evaluate(qrels, run, metrics)` from the plain dictionaries;
- pytrec_eval: `RelevanceEvaluator(qrels, measures).evaluate(run)`, also from the plain
  dictionaries (building the evaluator included, as a caller pays for it);
- ranx: `ranx.evaluate(Qrels, Run, metrics)` once its inputs are built (building
  `ranx.Qrels` / `ranx.Run` and numba's first compilation are excluded and printed
  apart).

The three take turns, `--repeat` times, and each one's best time is kept. Before the
turns, everything alive (the inputs, and the modules of numba, pandas and the rest) is
moved out of the garbage collector's sight (`gc.freeze`), so a collection that one
library's allocations trigger does not walk the objects of another's imports. It prints
the three timings and each library's time over cce's (above 1.0: cce is faster), and
checks that the three agree per query to 1e-9, so a speed-up that changed a number is
reported as a failure.

With `--tied` the scores come from 50 values per query, so most documents share their
score with others, and cce runs with `ties="trec_eval"` (trec_eval's tie rule, the one
pytrec_eval follows); ranx breaks ties its own way, so it is left out of that run.
Timings are printed, never asserted in tests. Usage:
`uv run --package cce-metrics python bench/bench_metrics.py [--queries N] [--docs D]
[--repeat R] [--tied]`.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytrec_eval
import ranx

from cce_metrics import evaluate

SEED = 20240611
"""The collection's seed: the same collection on every run and every machine."""

# cce name, pytrec_eval measure and output key, ranx name.
METRICS = (
    ("P@10", "P.10", "P_10", "precision@10"),
    ("recall@100", "recall.100", "recall_100", "recall@100"),
    ("ndcg@10", "ndcg_cut.10", "ndcg_cut_10", "ndcg@10"),
    ("map", "map", "map", "map"),
    ("mrr", "recip_rank", "recip_rank", "mrr"),
)
AGREEMENT = 1e-9

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]
T = TypeVar("T")


def collection(
    n_queries: int, n_docs: int, seed: int = SEED, tied: bool = False
) -> tuple[Qrels, Run]:
    """Per query: `n_docs` retrieved documents with distinct scores, and 20 judgments.

    The judgments are grades 0..3 of documents drawn from a pool twice the run's size, so
    some judged documents were retrieved and some were not, and some retrieved documents
    are unjudged. Scores are distinct so that all three libraries rank alike (ranx breaks
    ties in its own way). With `tied`, scores are instead multiples of 0.1 below 5.0:
    about two documents per score.
    """
    rng = random.Random(seed)
    qrels: Qrels = {}
    run: Run = {}
    for number in range(n_queries):
        query = f"q{number:05d}"
        pool = [f"doc{index}" for index in range(2 * n_docs)]
        retrieved = rng.sample(pool, n_docs)
        if tied:
            run[query] = {doc: rng.randrange(50) / 10 for doc in retrieved}
        else:
            scores = rng.sample(range(10**9), n_docs)
            run[query] = {doc: score / 1e6 for doc, score in zip(retrieved, scores, strict=True)}
        qrels[query] = {doc: rng.choice((0, 1, 1, 2, 3)) for doc in rng.sample(pool, 20)}
    return qrels, run


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """The wall time of `action()`, and its result."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tied", action="store_true", help="tied scores, ties='trec_eval'")
    args = parser.parse_args(argv)
    if args.tied:
        return main_tied(args.queries, args.docs, args.repeat)

    qrels, run = collection(args.queries, args.docs)
    names = [name for name, _, _, _ in METRICS]
    print(f"collection: {args.queries:,} queries × {args.docs} documents, seed {SEED}")
    print(f"metrics   : {', '.join(names)}; best of {args.repeat}")

    measures = {measure for _, measure, _, _ in METRICS}
    started = time.perf_counter()
    ranx_qrels = ranx.Qrels(qrels)
    ranx_run = ranx.Run(run)
    built_s = time.perf_counter() - started
    ranx_names = [text for _, _, _, text in METRICS]
    started = time.perf_counter()
    ranx.evaluate(ranx.Qrels({"q": {"d": 1}}), ranx.Run({"q": {"d": 1.0}}), ranx_names)
    warm_s = time.perf_counter() - started

    gc.collect()
    gc.freeze()
    # The three take turns, so a machine whose load changes during the run slows each
    # of them alike; the best of the turns is kept.
    cce_s = pytrec_s = ranx_s = float("inf")
    for _ in range(args.repeat):
        seconds, ours = timed(lambda: evaluate(qrels, run, names))
        cce_s = min(cce_s, seconds)
        seconds, pytrec = timed(
            lambda: pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        )
        pytrec_s = min(pytrec_s, seconds)
        seconds, ranx_scores = timed(
            lambda: ranx.evaluate(ranx_qrels, ranx_run, ranx_names, return_mean=False)
        )
        ranx_s = min(ranx_s, seconds)

    disagreements = check_agreement(ours.per_query, pytrec, ranx_scores, list(ranx_qrels.keys()))

    print()
    print(f"{'':<12}{'seconds':>9}{'its time / cce':>16}")
    for label, seconds in (("cce", cce_s), ("pytrec_eval", pytrec_s), ("ranx", ranx_s)):
        print(f"{label:<12}{seconds:>9.3f}{seconds / cce_s:>16.2f}")
    print(f"(ranx: building Qrels and Run took {built_s:.3f} s; first call {warm_s:.1f} s)")
    if disagreements:
        print(f"FAIL: {len(disagreements)} disagreements, e.g. {disagreements[:3]}")
        return 1
    print(f"per-query scores agree to {AGREEMENT:g} across the three")
    return 0


def main_tied(queries: int, docs: int, repeat: int) -> int:
    """cce with `ties="trec_eval"` beside pytrec_eval on a collection of tied scores."""
    qrels, run = collection(queries, docs, tied=True)
    names = [name for name, _, _, _ in METRICS]
    measures = {measure for _, measure, _, _ in METRICS}
    print(f"collection: {queries:,} queries × {docs} documents, tied scores, seed {SEED}")
    print(f"metrics   : {', '.join(names)}; ties='trec_eval'; best of {repeat}")
    gc.collect()
    gc.freeze()
    cce_s = pytrec_s = float("inf")
    for _ in range(repeat):
        seconds, ours = timed(lambda: evaluate(qrels, run, names, ties="trec_eval"))
        cce_s = min(cce_s, seconds)
        seconds, pytrec = timed(
            lambda: pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        )
        pytrec_s = min(pytrec_s, seconds)
    wrong = [
        (query, name)
        for name, _, key, _ in METRICS
        for query, scores in ours.per_query.items()
        if abs(scores[name] - pytrec[query][key]) > AGREEMENT
    ]
    print()
    print(f"{'':<12}{'seconds':>9}{'its time / cce':>16}")
    for label, seconds in (("cce", cce_s), ("pytrec_eval", pytrec_s)):
        print(f"{label:<12}{seconds:>9.3f}{seconds / cce_s:>16.2f}")
    if wrong:
        print(f"FAIL: {len(wrong)} disagreements with pytrec_eval, e.g. {wrong[:3]}")
        return 1
    print(f"per-query scores agree with pytrec_eval to {AGREEMENT:g}")
    return 0


def check_agreement(
    ours: dict[str, dict[str, float]],
    pytrec: dict[str, dict[str, float]],
    ranx_scores: dict[str, Any],
    ranx_queries: list[str],
) -> list[tuple[str, str, str]]:
    """(library, query, metric) of every per-query score that differs from cce's."""
    wrong: list[tuple[str, str, str]] = []
    for name, _, key, _ in METRICS:
        for query, scores in ours.items():
            if abs(scores[name] - pytrec[query][key]) > AGREEMENT:
                wrong.append(("pytrec_eval", query, name))
    # ranx leaves out queries without a relevant document; cce scores them 0.0.
    for name, _, _, text in METRICS:
        for query, value in zip(ranx_queries, ranx_scores[text], strict=True):
            if abs(ours[query][name] - float(value)) > AGREEMENT:
                wrong.append(("ranx", query, name))
    return wrong


if __name__ == "__main__":
    sys.exit(main())
