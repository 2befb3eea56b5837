"""What reading a run costs, case by case and per backend: the values the cost metrics give.

Why it exists: the cost metrics (`recall@NNNNt`, `first-hit-tokens`; cce_metrics.cost,
docs/metrics.md#cost-metrics) read a ranking deeper than the case's k and are undefined
for a query without a target, so they do not fit the chunk scores every query has.
These plain values carry them beside the chunk scores, from the harness that fills them
(`cce_cli.evaluation.harness`) to the JSON report, the results file, the comparisons and
the renderers. They exist only on a run that asked for a cost metric, so a default run's
reports stay exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from cce_metrics import COST_DEPTH, FIRST_HIT_CAP, Metric, Reading
from cce_retrieval import SearchResult

__all__ = [
    "CaseCost",
    "CostSummary",
    "cost_depth",
    "first_hit_cap",
    "summarise_cost",
]

_CAP_NAME: Final = re.compile(r"first-hit-tokens:cap=([1-9][0-9]*)")


def cost_depth(metrics: Sequence[Metric]) -> int:
    """How many results the chosen cost metrics read (the deepest of them)."""
    return max((item.depth or COST_DEPTH for item in metrics), default=COST_DEPTH)


def first_hit_cap(metrics: Sequence[Metric]) -> int | None:
    """The cap of the first `first-hit-tokens` metric chosen; None when none is."""
    for item in metrics:
        if item.name == "first-hit-tokens":
            return FIRST_HIT_CAP
        found = _CAP_NAME.fullmatch(item.name)
        if found is not None:
            return int(found.group(1))
    return None


def _pairs(values: Iterable[tuple[str, float | None]]) -> tuple[tuple[str, float | None], ...]:
    return tuple(values)


def _keyed(pairs: Iterable[tuple[str, float | None]], key: str) -> float | None:
    """The value paired with `key`; KeyError when no pair has it."""
    for found, value in pairs:
        if found == key:
            return value
    raise KeyError(key)


@attrs.frozen(slots=True)
class CaseCost:
    """One case's cost values (by metric key; None where the query has no target), the
    reading they were scored from and the ranked results behind it, down to the depth."""

    values: tuple[tuple[str, float | None], ...] = attrs.field(converter=_pairs)
    reading: Reading
    results: tuple[SearchResult, ...] = attrs.field(default=(), eq=False, repr=False)

    def value(self, key: str) -> float | None:
        """The value of the cost metric keyed `key` (None: undefined for this query)."""
        return _keyed(self.values, key)


@attrs.frozen(slots=True)
class CostSummary:
    """One backend's cost metrics averaged over the queries that define them, with how
    they were measured: the tokenizer's id, the depth read and the first-hit cap."""

    metrics: tuple[Metric, ...]
    averages: tuple[tuple[str, float | None], ...] = attrs.field(converter=_pairs)
    queries: int
    tokenizer: str
    depth: int
    cap: int | None

    def value(self, key: str) -> float | None:
        """The mean of the cost metric keyed `key`; None when no query defines it."""
        return _keyed(self.averages, key)


def summarise_cost(
    metrics: Sequence[Metric], cases: Sequence[CaseCost], tokenizer: str
) -> CostSummary:
    """The backend's means of each cost metric over its cases, summed in case order."""
    averages = [
        (item.key, item.average([case.value(item.key) for case in cases])) for item in metrics
    ]
    defined = sum(1 for case in cases if case.reading.n_targets > 0)
    return CostSummary(
        tuple(metrics),
        averages,
        defined,
        tokenizer,
        cost_depth(metrics),
        first_hit_cap(metrics),
    )
