"""`evaluate(qrels, run, metrics)`: cce's metrics over plain relevance judgments and runs.

Why it exists: other eval tools hold their judgments as TREC-style dictionaries
(`{query_id: {doc_id: relevance}}`) and their rankings as scores
(`{query_id: {doc_id: score}}`), the shape pytrec_eval, ir_measures and ranx accept. This
module owns that entry point: it parses metric names with cut-offs (`"P@5"`,
`"ndcg@10"`, `"mrr"`), turns every query's scores into a ranking with trec_eval's
tie-breaking, and scores it with the definitions of `cce_metrics.ranked`, so a document
ranking and an anchor ranking are measured by the same code. The contract, including how
queries missing from the run count, is in docs/metrics.md#evaluate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import attrs

from cce_metrics import ranked
from cce_metrics.ranked import GainProfile
from cce_metrics.summation import seq_sum

Qrels = Mapping[str, Mapping[str, int]]
"""Relevance judgments: query id -> document id -> relevance (an integer; >= 1 is relevant)."""

Run = Mapping[str, Mapping[str, float]]
"""A run: query id -> document id -> retrieval score (higher ranks first)."""


@attrs.frozen(slots=True)
class Measure:
    """One parsed metric name: the measure's canonical name and its rank cut-off."""

    name: str
    cutoff: int | None

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"


@attrs.frozen(slots=True)
class _MeasureKind:
    compute: Callable[[GainProfile], float]
    needs_cutoff: bool


_KINDS: dict[str, _MeasureKind] = {
    "P": _MeasureKind(ranked.precision, needs_cutoff=True),
    "recall": _MeasureKind(ranked.recall, needs_cutoff=False),
    "f1": _MeasureKind(ranked.f1, needs_cutoff=True),
    "mrr": _MeasureKind(ranked.reciprocal_rank, needs_cutoff=False),
    "ndcg": _MeasureKind(ranked.ndcg, needs_cutoff=False),
    "map": _MeasureKind(ranked.average_precision, needs_cutoff=False),
    "hit": _MeasureKind(ranked.hit, needs_cutoff=False),
    "rprec": _MeasureKind(ranked.r_precision, needs_cutoff=False),
}

# Spellings users bring from trec_eval, ir_measures and ranx (matched case-insensitively).
_ALIASES: dict[str, str] = {
    "p": "P",
    "precision": "P",
    "r": "recall",
    "recall": "recall",
    "f1": "f1",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "map": "map",
    "ap": "map",
    "map_cut": "map",
    "hit": "hit",
    "hits": "hit",
    "hit_rate": "hit",
    "success": "hit",
    "rprec": "rprec",
    "r-precision": "rprec",
    "r_precision": "rprec",
}

_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_\-]*)\s*(?:@\s*([0-9]+)\s*)?$")


def parse_measure(text: str) -> Measure:
    """Parse `name` or `name@k` (k a positive integer); raises ValueError naming valid names."""
    match = _NAME.match(text)
    name = None if match is None else _ALIASES.get(match.group(1).lower())
    if match is None or name is None:
        valid = ", ".join(sorted(_KINDS))
        raise ValueError(
            f"unknown metric {text!r}: expected one of {valid} (aliases: "
            f"{', '.join(sorted(_ALIASES))}), optionally with a cut-off such as @10"
        )
    cutoff_text = match.group(2)
    cutoff = None if cutoff_text is None else int(cutoff_text)
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"metric {text!r}: the cut-off must be a positive integer")
    if cutoff is None and _KINDS[name].needs_cutoff:
        raise ValueError(f"metric {text!r} needs a cut-off, e.g. {name}@10")
    return Measure(name=name, cutoff=cutoff)


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


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Document ids by score descending, equal scores by document id descending.

    This is trec_eval's order (and so pytrec_eval's and ir_measures'): the rank column of
    a run file is ignored, and ties are broken by comparing document ids, the greater
    first. Python compares str by code point, which for UTF-8 ids is trec_eval's byte
    order.
    """
    return [
        doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
    ]


def document_profile(
    judgments: Mapping[str, int], ranking: Sequence[str], cutoff: int | None
) -> GainProfile:
    """The gain profile of a document ranking: each document is its own anchor.

    A document's gain is its relevance when that is at least 1, else 0.0 (unjudged and
    non-relevant documents, and negative judgments); ranked ids are expected to be
    unique (`rank_documents` guarantees it).
    """
    considered = ranking if cutoff is None else ranking[:cutoff]
    rank_gains = tuple(_gain(judgments.get(doc, 0)) for doc in considered)
    ideal = tuple(sorted((float(rel) for rel in judgments.values() if rel >= 1), reverse=True))
    return GainProfile(rank_gains=rank_gains, ideal_gains=ideal, k=cutoff)


def _gain(relevance: int) -> float:
    return float(relevance) if relevance >= 1 else 0.0


def evaluate(qrels: Qrels, run: Run, metrics: Sequence[str]) -> Evaluation:
    """Score `run` against `qrels` with each metric in `metrics` (e.g. `["P@5", "ndcg@10"]`).

    - Queries are the query ids of `qrels`; a run's queries without judgments are
      ignored; a judged query missing from the run is scored as an empty ranking (0.0 for
      every metric), so the means divide by the number of judged queries (trec_eval's
      `-c` behaviour, not its default).
    - Rankings come from the scores (`rank_documents`); a cut-off keeps the first k.
    - A relevance of at least 1 is relevant; for nDCG it is also the gain.
    - Means add per-query scores in sorted query-id order, strictly left to right.

    Raises ValueError for an unknown metric name, a score that is not a finite number, or
    a relevance that is not an integer.
    """
    measures = [(name, parse_measure(name)) for name in dict.fromkeys(metrics)]
    _check_inputs(qrels, run)
    per_query: dict[str, dict[str, float]] = {}
    for query_id in sorted(qrels):
        judgments = qrels[query_id]
        ranking = rank_documents(run.get(query_id, {}))
        per_query[query_id] = {
            name: _KINDS[measure.name].compute(document_profile(judgments, ranking, measure.cutoff))
            for name, measure in measures
        }
    divisor = max(len(per_query), 1)
    aggregate = {
        name: seq_sum(scores[name] for scores in per_query.values()) / divisor
        for name, _ in measures
    }
    return Evaluation(
        metrics=tuple(name for name, _ in measures), per_query=per_query, aggregate=aggregate
    )


def _check_inputs(qrels: Qrels, run: Run) -> None:
    for query_id, judgments in qrels.items():
        for doc, rel in judgments.items():
            if isinstance(rel, bool) or not isinstance(rel, int):
                raise ValueError(
                    f"qrels[{query_id!r}][{doc!r}] = {rel!r}: a relevance must be an integer"
                )
    for query_id, scores in run.items():
        for doc, score in scores.items():
            if (
                isinstance(score, bool)
                or not isinstance(score, int | float)
                or not math.isfinite(score)
            ):
                raise ValueError(
                    f"run[{query_id!r}][{doc!r}] = {score!r}: a score must be a finite number"
                )
