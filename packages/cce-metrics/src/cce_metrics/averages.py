"""Per-backend aggregates of per-query scores (docs/metrics.md#macro-averages).

Why it exists: the reported averages must match the reference to the last bit, so the
summation order (case order, strictly left to right) and the divisor rules (macro
averages divide by max(n, 1); token averages only over queries that have a token
score) live here, once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from cce_metrics.queries import QueryScore, ReferenceValues
from cce_metrics.registry import METRICS, TOKEN_METRICS


class MacroAverages(ReferenceValues):
    """Unweighted means over queries of the chunk-level metrics, looked up by key.

    `values` maps each metric key to its mean; the reference four are also attributes.
    """

    __slots__ = ("values",)

    values: Mapping[str, float]

    def __init__(
        self,
        precision_at_k: float,
        recall: float,
        mrr: float,
        f1: float,
        *,
        extra: Mapping[str, float] | None = None,
    ) -> None:
        values = {"precision_at_k": precision_at_k, "recall": recall, "mrr": mrr, "f1": f1}
        if extra:
            values.update(extra)
        object.__setattr__(self, "values", MappingProxyType(values))

    @classmethod
    def from_values(cls, values: Mapping[str, float]) -> MacroAverages:
        """Wrap a `key -> mean` table (it must hold the reference four)."""
        averages = cls.__new__(cls)
        object.__setattr__(averages, "values", MappingProxyType(dict(values)))
        return averages

    def value(self, key: str) -> float:
        """The mean of the metric keyed `key`; KeyError when it was not averaged."""
        return self.values[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MacroAverages):
            return NotImplemented
        return dict(self.values) == dict(other.values)

    def __hash__(self) -> int:
        return hash(tuple(self.values.items()))

    def __repr__(self) -> str:
        scores = ", ".join(f"{key}={value!r}" for key, value in self.values.items())
        return f"MacroAverages({scores})"


@attrs.frozen(slots=True)
class TokenAverages:
    """Means of the token-level metrics over the `queries` queries that have them."""

    queries: int
    precision: float
    recall: float
    iou: float

    def value(self, key: str) -> float:
        """The mean of the token metric keyed `key` (see `TOKEN_METRICS`)."""
        return float(getattr(self, TOKEN_METRICS.get(key).report_key))


def macro_average(scores: Sequence[QueryScore]) -> MacroAverages:
    """Mean of each chunk-level metric in the given (case) order; all 0.0 when empty.

    Every metric of `METRICS` that all the scores carry is averaged with its own
    `aggregate` (the reference four: `seq_sum / max(n, 1)`).
    """
    values: dict[str, float] = {}
    for item in METRICS:
        if all(item.key in score.values for score in scores):
            values[item.key] = item.aggregate([score.values[item.key] for score in scores])
    return MacroAverages.from_values(values)


def token_average(scores: Sequence[QueryScore]) -> TokenAverages | None:
    """Mean token metrics over the scores that carry one; None when none does."""
    ranged = [score for score in scores if score.tokens is not None]
    if not ranged:
        return None
    means: dict[str, float] = {}
    for item in TOKEN_METRICS:
        mean = item.average([score.value(item.key) for score in ranged])
        assert mean is not None  # every ranged score defines every token metric
        means[item.report_key] = mean
    return TokenAverages(len(ranged), means["precision"], means["recall"], means["iou"])
