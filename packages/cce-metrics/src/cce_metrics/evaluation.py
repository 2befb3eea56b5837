"""`evaluate(qrels, run, metrics)`: cce's metrics over plain relevance judgments and runs.

Why it exists: other eval tools hold their judgments as TREC-style dictionaries
(`{query_id: {doc_id: relevance}}`) and their rankings as scores
(`{query_id: {doc_id: score}}`), the shape pytrec_eval, ir_measures and ranx accept. This
module owns that entry point: it parses metric names with cut-offs (`"P@5"`,
`"ndcg@10"`, `"mrr"`; the names and aliases are declared with each metric in
`cce_metrics.registry.METRICS`), turns every query's scores into a ranking with trec_eval's
tie-breaking, reduces it once to its relevant ranks, and scores that with the formulas of
`cce_metrics.relevant_ranks`, so a document ranking and an anchor ranking are measured by
the same code. The contract, including how
queries missing from the run count, is in docs/metrics.md#evaluate.
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, SupportsFloat, SupportsIndex, cast

import attrs

# Importing ranked registers the opt-in metrics (nDCG, AP, hit, R-precision) in METRICS.
from cce_metrics import ranked as _ranked  # noqa: F401
from cce_metrics.registry import METRICS, Metric
from cce_metrics.relevant_ranks import RelevantRanks
from cce_metrics.summation import seq_sum

Qrels = Mapping[str, Mapping[str, SupportsIndex]]
"""Relevance judgments: query id -> document id -> relevance (an integer, numpy's included;
>= 1 is relevant)."""

Run = Mapping[str, Mapping[str, SupportsFloat]]
"""A run: query id -> document id -> retrieval score (a real number, numpy's included;
higher ranks first)."""


@attrs.frozen(slots=True)
class Measure:
    """One parsed metric name: the metric's registry name (`Metric.name`) and its rank cut-off."""

    name: str
    cutoff: int | None

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"


_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*(?:@\s*([0-9]+)\s*)?$")
_TREC_CUTOFF = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_\-]*?)[_.]([0-9]+)\s*$")

# Spellings other tools use for a measure that cce does not offer under that meaning; a
# caller who brings one learns what to ask for instead.
_OTHER_MEANINGS: dict[str, str] = {
    "hits": "ranx's hits@k counts the relevant documents in the top k; cce offers hit@k "
    "(success: 1 when any of the top k is relevant) and P@k (that count divided by k)",
}


def measure_metrics() -> dict[str, Metric]:
    """Every spelling `evaluate` accepts (lower-cased) -> its metric, from `METRICS`."""
    return {spelling: item for item in METRICS for spelling in item.spellings()}


def parse_measure(text: str) -> Measure:
    """Parse `name` or `name@k` (k a positive integer), or trec_eval's `name_k` and
    `name.k`; raises ValueError naming valid names.

    The names are those of the metrics in `METRICS` that `evaluate` offers, and their
    aliases (`Metric.spellings`), matched case-insensitively.
    """
    match = _NAME.match(text)
    spellings = measure_metrics()
    item = None if match is None else spellings.get(match.group(1).lower())
    cutoff_text = None if match is None else match.group(2)
    trec = _TREC_CUTOFF.match(text) if item is None else None
    if trec is not None and trec.group(1).lower() in spellings:
        # trec_eval's spelling of a cut-off: `P_5`, `ndcg_cut_10`, `ndcg_cut.10`.
        item, cutoff_text = spellings[trec.group(1).lower()], trec.group(2)
    if item is None:
        other = None if match is None else _OTHER_MEANINGS.get(match.group(1).lower())
        if other is not None:
            raise ValueError(f"unknown metric {text!r}: {other}")
        valid = ", ".join(dict.fromkeys(metric.name for metric in spellings.values()))
        raise ValueError(
            f"unknown metric {text!r}: expected one of {valid} (aliases: "
            f"{', '.join(sorted(spellings))}), optionally with a cut-off such as @10"
        )
    cutoff = None if cutoff_text is None else int(cutoff_text)
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"metric {text!r}: the cut-off must be a positive integer")
    if cutoff is None and item.needs_cutoff:
        raise ValueError(f"metric {text!r} needs a cut-off, e.g. {item.name}@10")
    return Measure(name=item.name, cutoff=cutoff)


@attrs.frozen(slots=True)
class Evaluation:
    """Scores of one run: per query (in sorted query-id order) and their means.

    Both are keyed by the metric names exactly as they were passed to `evaluate`.
    `per_query[query_id][metric]` is one query's score; `aggregate[metric]` is the mean
    over every judged query (every query id of the qrels).
    """

    metrics: tuple[str, ...]
    per_query: dict[str, dict[str, float]]
    aggregate: dict[str, float]


TieRule = Literal["exact", "trec_eval"]
"""How scores are compared when ranking (docs/metrics.md#ranking-and-ties).

- `"exact"` (the default): scores compare as the doubles they are;
- `"trec_eval"`: scores are first rounded to 32-bit floats, as trec_eval stores them,
  so scores that differ only beyond float32's precision tie, exactly as in trec_eval,
  pytrec_eval and ir_measures.

Either way, equal scores are ordered by document id, the greater first.
"""


def float32_scores(scores: Mapping[str, float]) -> dict[str, float]:
    """Each score rounded to the nearest 32-bit float, as C's `(float)` cast does.

    `array("f")` performs that cast; a finite double beyond float32's range becomes an
    infinity, as in trec_eval.
    """
    return dict(zip(scores, array("f", scores.values()).tolist(), strict=True))


def rank_documents(scores: Mapping[str, float], ties: TieRule = "exact") -> list[str]:
    """Document ids by score descending, equal scores by document id descending.

    This is trec_eval's order (and so pytrec_eval's and ir_measures'): the rank column of
    a run file is ignored, and ties are broken by comparing document ids, the greater
    first. Python compares str by code point, which for UTF-8 ids is trec_eval's byte
    order. With `ties="trec_eval"` the scores are compared as 32-bit floats
    (`TieRule`).
    """
    compared = float32_scores(scores) if ties == "trec_eval" else scores
    return [
        doc
        for doc, _ in sorted(compared.items(), key=lambda item: (item[1], item[0]), reverse=True)
    ]


def reduce_ranking(judgments: Mapping[str, int], ranking: Sequence[str]) -> RelevantRanks:
    """A document ranking reduced to what every metric reads: each document is an anchor.

    A document's gain is its relevance when that is at least 1 (unjudged and
    non-relevant documents, and negative judgments, gain nothing); the ideal gains are
    every relevant judgment's, retrieved or not. Ranked ids are expected to be unique
    (`rank_documents` guarantees it).
    """
    ranks: list[int] = []
    gains: list[float] = []
    for rank, doc in enumerate(ranking, start=1):
        relevance = judgments.get(doc, 0)
        if relevance >= 1:
            ranks.append(rank)
            gains.append(float(relevance))
    ideal = sorted((float(rel) for rel in judgments.values() if rel >= 1), reverse=True)
    return RelevantRanks(ranks, gains, ideal, len(ranking))


def rank_relevant(
    judgments: Mapping[str, int], scores: Mapping[str, float], *, float32: bool = False
) -> RelevantRanks:
    """`reduce_ranking(judgments, rank_documents(scores))`, without ranking every document;
    with `float32` the scores are compared as 32-bit floats (`rank_documents`' `trec_eval`
    ties).

    Only the relevant documents' ranks matter, and a document's rank in
    `rank_documents`' order is 1 + the documents with a greater score + the documents
    with an equal score and a greater id. The scores are sorted once (floats, in C);
    each relevant retrieved document then finds its rank by bisection. Only a tie (an
    equal neighbour in the sorted scores) needs ids: then the ids are sorted by score
    once, also in C, so the ids sharing a score are one slice, found by the same
    bisection. A run with many ties thus costs one more sort per query, not a pass over
    the query's documents for each tied relevant document.

    Rounding to float32 is monotonic, so the sorted scores rounded one by one are the
    sorted rounded scores: a relevant document's rounded score is read from the
    rounded list at the position its own score takes in the sorted list, and no score
    is rounded twice (nor a rounded copy of the mapping built). For the same reason the
    ids sorted by their exact scores are also sorted by their rounded ones, and the ids
    sharing a rounded score are one slice of them.
    """
    ideal: list[float] = []
    found: list[tuple[int, float]] = []
    ascending: list[float] | None = None
    compared: list[float] = []
    by_score: list[str] | None = None
    size = len(scores)
    score_of = scores.get
    for doc, rel in judgments.items():
        if rel < 1:
            continue
        gain = float(rel)
        ideal.append(gain)
        score = score_of(doc)
        if score is None:
            continue
        if ascending is None:
            ascending = sorted(scores.values())
            compared = array("f", ascending).tolist() if float32 else ascending
        if float32:
            score = compared[bisect_right(ascending, score) - 1]
        not_above = bisect_right(compared, score)
        rank = size - not_above + 1
        # compared[not_above - 1] is this score; an equal one just below it is a tie.
        if not_above > 1 and compared[not_above - 2] == score:
            if by_score is None:
                # A stable sort in C: the ids in the order of `ascending`.
                by_score = sorted(scores, key=scores.__getitem__)
            # The ids with this score are the slice of `compared`'s run of equal values.
            first = bisect_left(compared, score, 0, not_above)
            rank += sum(1 for other in by_score[first:not_above] if other > doc)
        found.append((rank, gain))
    ideal.sort(reverse=True)
    if len(found) > 1:
        found.sort()
    ranks = [rank for rank, _ in found]
    return RelevantRanks(ranks, [gain for _, gain in found], ideal, size)


def evaluate(
    qrels: Qrels, run: Run, metrics: Sequence[str], *, ties: TieRule = "exact"
) -> Evaluation:
    """Score `run` against `qrels` with each metric in `metrics` (e.g. `["P@5", "ndcg@10"]`).

    - Queries are the query ids of `qrels`; a run's queries without judgments are
      ignored; a judged query missing from the run is scored as an empty ranking (0.0 for
      every metric), so the means divide by the number of judged queries (trec_eval's
      `-c` behaviour, not its default).
    - Rankings come from the scores (`rank_documents`); a cut-off keeps the first k.
      `ties="trec_eval"` compares the scores as 32-bit floats, as trec_eval does, so
      that scores closer than float32 can tell apart tie as they do there (`TieRule`);
      the default compares them exactly.
    - A relevance of at least 1 is relevant; for nDCG it is also the gain.
    - Means add per-query scores in sorted query-id order, strictly left to right.

    Inputs of the wrong shape are a TypeError that names the expected one: ids that are
    not str, judgments or scores that are not mappings, a relevance that is not an
    integer or a score that is not a real number (numpy's integer and floating scalars
    are integers and real numbers), and `metrics` given as one string rather than a list
    of names. A ValueError is raised for an unknown metric name, a score that is not
    finite, and a `qrels` without any query (its means would be 0 / 0).
    """
    if isinstance(metrics, str | bytes):
        raise TypeError(
            f"metrics is the single string {metrics!r}; pass a list of names such as [{metrics!r}]"
        )
    measures = [(name, parse_measure(name)) for name in dict.fromkeys(metrics)]
    scorers = [(name, _ranking_score(measure), measure.cutoff) for name, measure in measures]
    if ties not in ("exact", "trec_eval"):
        raise ValueError(f"ties={ties!r}: expected 'exact' or 'trec_eval'")
    judged = checked_qrels(qrels)
    _check_run_shape(run)
    # The run's queries without judgments are checked here; the judged ones are checked
    # in the loop below, just before they are ranked, so that each query's scores are
    # read from memory once for the check and the sort rather than in two sweeps over
    # the whole run (on 10,000 queries that second sweep is mostly cache misses).
    for query_id, scores in run.items():
        if query_id not in judged:
            checked_scores(query_id, scores)
    if not judged:
        raise ValueError("qrels holds no query: there is nothing to evaluate")
    per_query: dict[str, dict[str, float]] = {}
    no_scores: dict[str, float] = {}
    trec_eval_ties = ties == "trec_eval"
    for query_id in sorted(judged):
        found = run.get(query_id)
        scores = no_scores if found is None else checked_scores(query_id, found)
        # One reduction per query, shared by every metric. With trec_eval's ties the
        # scores are compared as float32 (`float32_scores`' rounding).
        ranking = rank_relevant(judged[query_id], scores, float32=trec_eval_ties)
        per_query[query_id] = {name: score(ranking, cutoff) for name, score, cutoff in scorers}
    divisor = len(per_query)
    aggregate = {
        name: seq_sum(scores[name] for scores in per_query.values()) / divisor
        for name, _ in measures
    }
    return Evaluation(
        metrics=tuple(name for name, _ in measures), per_query=per_query, aggregate=aggregate
    )


def _ranking_score(measure: Measure) -> Callable[[RelevantRanks, int | None], float]:
    score = METRICS.get(measure.name).ranking_score
    assert score is not None  # parse_measure only names metrics that have one
    return score


QRELS_SHAPE = "{query_id: {doc_id: relevance}} with str ids and integer relevances"
RUN_SHAPE = "{query_id: {doc_id: score}} with str ids and real-number scores"


def checked_qrels(qrels: Qrels) -> dict[str, Mapping[str, int]]:
    """`qrels` with every relevance a plain int; TypeError naming the shape when it is not one.

    Integers of any kind are accepted (numpy's `int64` included, through
    `numbers.Integral`); bools, floats and anything else are refused. A query whose
    judgments are already plain is passed through without a copy.
    """
    if not isinstance(qrels, Mapping):
        raise TypeError(f"qrels is a {type(qrels).__name__}; expected {QRELS_SHAPE}")
    checked: dict[str, Mapping[str, int]] = {}
    _check_ids(qrels, "qrels", "query id", QRELS_SHAPE)
    for query_id, judgments in qrels.items():
        if type(judgments) is not dict and not isinstance(judgments, Mapping):
            raise TypeError(
                f"qrels[{query_id!r}] is a {type(judgments).__name__}; expected {QRELS_SHAPE}"
            )
        # The common case, checked at C speed: str ids and int relevances throughout.
        if _all_str(judgments) and {*map(type, judgments.values())} <= {int}:
            checked[query_id] = cast("Mapping[str, int]", judgments)
            continue
        plain: dict[str, int] = {}
        for doc, rel in judgments.items():
            _check_id(doc, f"qrels[{query_id!r}]", "document id", QRELS_SHAPE)
            if isinstance(rel, bool) or not isinstance(rel, numbers.Integral):
                raise TypeError(
                    f"qrels[{query_id!r}][{doc!r}] = {rel!r} is a {type(rel).__name__}: "
                    f"a relevance must be an integer; expected {QRELS_SHAPE}"
                )
            plain[doc] = operator.index(rel)
        checked[query_id] = plain
    return checked


def checked_run(run: Run) -> dict[str, Mapping[str, float]]:
    """`run` with every score a finite float; TypeError naming the shape when it is not one.

    Real numbers of any kind are accepted (numpy's `float32` included, through
    `numbers.Real`) and converted to float exactly; bools, `Decimal` and anything else
    are refused. A score that is not finite (NaN, an infinity, an int too large for a
    float) is a ValueError. A query whose scores are already finite floats is passed
    through without a copy.
    """
    _check_run_shape(run)
    return {query_id: checked_scores(query_id, scores) for query_id, scores in run.items()}


def _check_run_shape(run: Run) -> None:
    """TypeError unless `run` is a mapping keyed by str query ids."""
    if not isinstance(run, Mapping):
        raise TypeError(f"run is a {type(run).__name__}; expected {RUN_SHAPE}")
    _check_ids(run, "run", "query id", RUN_SHAPE)


def checked_scores(query_id: str, scores: Mapping[str, SupportsFloat]) -> Mapping[str, float]:
    """One query's scores as finite floats (`checked_run`'s rules, for `run[query_id]`)."""
    if type(scores) is not dict and not isinstance(scores, Mapping):
        raise TypeError(f"run[{query_id!r}] is a {type(scores).__name__}; expected {RUN_SHAPE}")
    values = scores.values()
    # The common case, checked at C speed: str ids and float scores whose sum is
    # finite (a NaN or an infinity makes the sum NaN or infinite; a sum that
    # overflows only sends the query through the item-by-item check below).
    if (
        _all_str(scores)
        and {*map(type, values)} <= {float}
        and math.isfinite(sum(cast("Iterable[float]", values)))
    ):
        return cast("Mapping[str, float]", scores)
    plain: dict[str, float] = {}
    for doc, score in scores.items():
        _check_id(doc, f"run[{query_id!r}]", "document id", RUN_SHAPE)
        plain[doc] = _finite_score(score, f"run[{query_id!r}][{doc!r}]")
    return plain


def _finite_score(score: object, where: str) -> float:
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise TypeError(
            f"{where} = {score!r} is a {type(score).__name__}: a score must be a real "
            f"number; expected {RUN_SHAPE}"
        )
    try:
        value = float(score)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{where} = {score!r}: a score must be a finite number")
    return value


def _all_str(ids: Iterable[object]) -> bool:
    """Whether every id is a str; joining them is the quickest check Python offers."""
    try:
        "".join(cast("Iterable[str]", ids))
    except TypeError:
        return False
    return True


def _check_ids(mapping: Mapping[Any, object], where: str, what: str, shape: str) -> None:
    if not _all_str(mapping):
        for value in mapping:
            _check_id(value, where, what, shape)


def _check_id(value: object, where: str, what: str, shape: str) -> None:
    if not isinstance(value, str):
        raise TypeError(
            f"{where}: {what} {value!r} is a {type(value).__name__}, not a str; expected {shape}"
        )
