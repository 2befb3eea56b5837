"""What a retrieved context costs to read: recall within a token budget, tokens to the first hit.

Why it exists: quality metrics say whether the right code was found, not what a reader
(a coding agent filling its context) pays to get there. A retriever that finds the
right file at rank 8 after 30,000 tokens of other code is worse than one that finds it
at rank 3 after 900. This module owns the two cost metrics, scored from a `Reading`
(`cce_metrics.reading`) in rank order, and registers them in
`cce_metrics.registry.COST_METRICS` (docs/metrics.md#cost-metrics):

- `recall@NNNNt`: the share of the query's targets covered by the results read, in rank
  order, before the running token total would pass NNNN. Reading stops at the first
  result that would cross the budget: a smaller result ranked after it does not count
  (a reader reads in order; the public semble token-efficiency benchmark's rule). A
  result that lands exactly on the budget counts.
- `first-hit-tokens`: the running token total up to and including the first result that
  covers any target; a query whose read results cover none costs the cap (32,000 unless
  set: `first-hit-tokens:cap=N`). A hit found after more than the cap is reported at its
  real cost, as semble does, so the mean can pass the cap. Lower is better.

Both read at most `COST_DEPTH` (50) results, whatever the case's k, and are undefined
(None) for a query with no target or no reading, which the averages skip.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from cce_metrics.evaluation import (
    Evaluation,
    Qrels,
    Run,
    TieRule,
    checked_qrels,
    checked_scores,
    rank_documents,
)
from cce_metrics.reading import Reading, reading_of_ranking
from cce_metrics.registry import COST, COST_METRICS, UNIT_INTERVAL, Judgment, Metric, judgment
from cce_metrics.summation import seq_sum

__all__ = [
    "COST_DEPTH",
    "DEFAULT_BUDGETS",
    "FIRST_HIT_CAP",
    "FIRST_HIT_TOKENS",
    "budget_recall",
    "evaluate_cost",
    "first_hit_tokens",
    "first_hit_tokens_metric",
    "recall_curve",
    "recall_within_budget",
    "score_reading",
    "tokens_to_first_hit",
]

COST_DEPTH: Final = 50
"""How many ranked results the cost metrics read by default (semble's top 50)."""

FIRST_HIT_CAP: Final = 32_000
"""What a query with no hit costs under `first-hit-tokens` (semble's cap)."""

DEFAULT_BUDGETS: Final = (500, 1000, 2000, 4000, 8000, 16000, 32000)
"""The budgets registered up front (semble's); any other is made on first lookup."""

_BUDGET_NAME: Final = re.compile(r"recall@([1-9][0-9]*)t")
_BUDGET_KEY: Final = re.compile(r"recall_at_([1-9][0-9]*)t")
_CAP_NAME: Final = re.compile(r"first-hit-tokens:cap=([1-9][0-9]*)")
_CAP_KEY: Final = re.compile(r"first_hit_tokens_cap_([1-9][0-9]*)")


def recall_within_budget(reading: Reading, budget: int) -> float | None:
    """Targets covered by the results read before the running total passes `budget`,
    over all targets; None when the query has no target.

    Results are read in rank order; the first one that would take the total above
    `budget` stops the reading (it and everything after it are not counted).
    """
    if budget < 0:
        raise ValueError(f"a token budget must not be negative, got {budget}")
    if reading.n_targets == 0:
        return None
    spent = 0
    covered: set[int] = set()
    for count, targets in zip(reading.tokens, reading.covers, strict=True):
        spent += count
        if spent > budget:
            break
        covered |= targets
    return len(covered) / reading.n_targets


def tokens_to_first_hit(reading: Reading) -> int | None:
    """The running token total up to and including the first result covering a target,
    or None when no result covers one."""
    spent = 0
    for count, targets in zip(reading.tokens, reading.covers, strict=True):
        spent += count
        if targets:
            return spent
    return None


def first_hit_tokens(reading: Reading, cap: int = FIRST_HIT_CAP) -> float | None:
    """`tokens_to_first_hit`, or `cap` when no result hits; None when the query has no target."""
    if cap < 0:
        raise ValueError(f"the first-hit cap must not be negative, got {cap}")
    if reading.n_targets == 0:
        return None
    spent = tokens_to_first_hit(reading)
    return float(cap if spent is None else spent)


def _reading_score(
    score_read: Callable[[Reading], float | None],
) -> Callable[[Judgment], float | None]:
    """A cost metric's score: `score_read` on the judgment's reading cut at `COST_DEPTH`,
    None for a judgment without a reading."""

    def score(judged: Judgment) -> float | None:
        read = judged.reading
        return None if read is None else score_read(read.head(COST_DEPTH))

    return score


def _budget_metric(budget: int) -> Metric:
    return Metric(
        f"recall@{budget}t",
        f"recall_at_{budget}t",
        f"R@{budget}t",
        _reading_score(lambda read: recall_within_budget(read, budget)),
        higher_is_better=True,
        default=False,
        group=COST,
        description=f"share of targets found, reading in rank order, within {budget} tokens",
        bounds=UNIT_INTERVAL,
        depth=COST_DEPTH,
    )


def first_hit_tokens_metric(cap: int = FIRST_HIT_CAP) -> Metric:
    """The `first-hit-tokens` metric with another cap, registered on first call.

    The default cap is registered as `first-hit-tokens`; any other is
    `first-hit-tokens:cap=N` (key `first_hit_tokens_cap_N`).
    """
    if cap < 1:
        raise ValueError(f"the first-hit cap must be a positive integer, got {cap}")
    name = "first-hit-tokens" if cap == FIRST_HIT_CAP else f"first-hit-tokens:cap={cap}"
    return COST_METRICS.get(name)


def _first_hit_metric(cap: int) -> Metric:
    default_cap = cap == FIRST_HIT_CAP
    return Metric(
        "first-hit-tokens" if default_cap else f"first-hit-tokens:cap={cap}",
        "first_hit_tokens" if default_cap else f"first_hit_tokens_cap_{cap}",
        "1st-hit tok" if default_cap else f"1st-hit tok (cap {cap})",
        _reading_score(lambda read: first_hit_tokens(read, cap)),
        higher_is_better=False,
        default=False,
        group=COST,
        description=f"tokens read in rank order to the first hit ({cap} when none)",
        bounds=None,
        depth=COST_DEPTH,
        unit="tokens",
    )


def budget_recall(budget: int) -> Metric:
    """The `recall@{budget}t` metric, registered on first call."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"a token budget must be a positive integer, got {budget!r}")
    return COST_METRICS.get(f"recall@{budget}t")


def _family(name: str) -> Metric | None:
    budget = _BUDGET_NAME.fullmatch(name) or _BUDGET_KEY.fullmatch(name)
    if budget is not None:
        return _budget_metric(int(budget.group(1)))
    cap = _CAP_NAME.fullmatch(name) or _CAP_KEY.fullmatch(name)
    if cap is not None:
        return _first_hit_metric(int(cap.group(1)))
    return None


def score_reading(reading: Reading, metric: Metric) -> float | None:
    """One cost metric's value on a reading alone (no judgment matrix needed)."""
    if metric.group != COST:
        raise ValueError(f"metric {metric.name!r} is not a cost metric")
    return metric.score(judgment((), 0, 1, reading=reading))


def recall_curve(
    readings: Iterable[Reading], budgets: Sequence[int] = DEFAULT_BUDGETS, depth: int = COST_DEPTH
) -> tuple[float, ...]:
    """Mean `recall_within_budget` at each budget over the readings that have a target
    (the recall-versus-tokens curve of one backend); 0.0 at every budget when none has.

    Each reading is cut at `depth` first, like the registered metrics; the means add in
    the readings' order, left to right.
    """
    counted = [read.head(depth) for read in readings if read.n_targets > 0]
    curve: list[float] = []
    for budget in budgets:
        values = [recall_within_budget(read, budget) or 0.0 for read in counted]
        curve.append(seq_sum(values) / len(values) if values else 0.0)
    return tuple(curve)


def evaluate_cost(
    qrels: Qrels,
    run: Run,
    tokens: Mapping[str, int],
    metrics: Sequence[str],
    *,
    ties: TieRule = "exact",
) -> Evaluation:
    """Cost metrics (`["first-hit-tokens", "recall@1000t"]`) over TREC-style judgments.

    `qrels` and `run` are `evaluate`'s (docs/metrics.md#evaluate) and are ranked the same
    way (`rank_documents`, `ties`); `tokens` gives each ranked document's token count
    (one text per document, whatever the query). A query's targets are its documents
    judged relevant (relevance >= 1); a judged query missing from the run reads nothing.
    Queries without a relevant document have no cost value: they are left out of
    `per_query` and of the means. Raises ValueError for a name that is not a cost metric,
    a ranked document (within the metric's depth) without a token count, or qrels
    without any relevant document.
    """
    if isinstance(metrics, str | bytes):
        raise TypeError(f"metrics is the single string {metrics!r}; pass a list of names")
    chosen = [(name, COST_METRICS.get(name)) for name in dict.fromkeys(metrics)]
    depth = max((item.depth or COST_DEPTH for _, item in chosen), default=COST_DEPTH)
    judged = checked_qrels(qrels)
    per_query: dict[str, dict[str, float]] = {}
    for query_id in sorted(judged):
        relevant = {doc for doc, rel in judged[query_id].items() if rel >= 1}
        if not relevant:
            continue
        found = run.get(query_id)
        scores = {} if found is None else checked_scores(query_id, found)
        ranking = rank_documents(scores, ties)[:depth]
        read = reading_of_ranking(ranking, relevant, tokens)
        values: dict[str, float] = {}
        for name, item in chosen:
            value = score_reading(read, item)
            if value is not None:
                values[name] = value
        per_query[query_id] = values
    if not per_query:
        raise ValueError("no judged query has a relevant document: there is nothing to cost")
    aggregate: dict[str, float] = {}
    for name, item in chosen:
        mean = item.average([values.get(name) for values in per_query.values()])
        if mean is not None:
            aggregate[name] = mean
    return Evaluation(
        metrics=tuple(name for name, _ in chosen), per_query=per_query, aggregate=aggregate
    )


FIRST_HIT_TOKENS: Final = COST_METRICS.register(_first_hit_metric(FIRST_HIT_CAP))
for _budget in DEFAULT_BUDGETS:
    COST_METRICS.register(_budget_metric(_budget))
COST_METRICS.add_family(_family)
