"""A ranking reduced to the ranks of its relevant items, and every ranked formula over it.

Why it exists: precision, recall, F1, reciprocal rank, nDCG, average precision, hit and
R-precision depend on a ranking only through the ranks at which relevant items sit,
their gains, the ideal gains and how many items were ranked. This module owns that
reduction (`RelevantRanks`) and the one implementation of each formula over it, at any
cut-off, so the anchor metrics (`cce_metrics.ranked`, through its `GainProfile`) and
`evaluate`'s document rankings share a single definition, and `evaluate` reduces each
query once for all the metrics it is asked for (docs/metrics.md#ranked-metrics).

Sums run strictly left to right, as `seq_sum` does, so a value does not depend on the
Python version's `sum()`. Ranks without gain are not stored: adding their 0.0 terms to a
non-negative sum never changes it, so the results are bit-identical to summing over
every rank.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

__all__ = [
    "RelevantRanks",
    "average_precision",
    "f1",
    "hit",
    "ndcg",
    "precision",
    "r_precision",
    "recall",
    "reciprocal_rank",
]


class RelevantRanks:
    """What every ranked metric reads about one query's ranking.

    - `ranks`: the 1-based ranks that hold a relevant item, ascending;
    - `gains`: the gain earned at each of those ranks (positive), in the same order;
    - `ideal`: the gains of all relevant items, retrieved or not, in descending order
      (its length is R);
    - `retrieved`: how many items the ranking holds.

    A plain slotted class rather than an attrs one: `evaluate` builds one per query, and
    the inputs are checked by whoever reduces a ranking to it.
    """

    __slots__ = ("gains", "ideal", "ranks", "retrieved")

    def __init__(
        self,
        ranks: Sequence[int],
        gains: Sequence[float],
        ideal: Sequence[float],
        retrieved: int,
    ) -> None:
        self.ranks = ranks
        self.gains = gains
        self.ideal = ideal
        self.retrieved = retrieved

    def __repr__(self) -> str:
        return (
            f"RelevantRanks(ranks={list(self.ranks)!r}, gains={list(self.gains)!r}, "
            f"ideal={list(self.ideal)!r}, retrieved={self.retrieved!r})"
        )


# log2(rank + 1) for rank = 0, 1, 2, ...: the DCG discounts, computed once (with
# math.log2, so a looked-up discount is the very float the formula gives).
_DISCOUNTS: list[float] = [math.log2(rank + 1) for rank in range(1025)]


def discount(rank: int) -> float:
    """log2(rank + 1), the DCG discount of a 1-based rank."""
    if rank >= len(_DISCOUNTS):
        _DISCOUNTS.extend(math.log2(more + 1) for more in range(len(_DISCOUNTS), 2 * rank))
    return _DISCOUNTS[rank]


def found(ranking: RelevantRanks, k: int | None) -> int:
    """How many relevant ranks lie within the first k (all of them when k is None)."""
    return len(ranking.ranks) if k is None else bisect_right(ranking.ranks, k)


def precision(ranking: RelevantRanks, k: int | None) -> float:
    """Relevant ranks within k over k (over the ranked items when k is None; 0.0 if none)."""
    denominator = ranking.retrieved if k is None else k
    if denominator == 0:
        return 0.0
    return found(ranking, k) / denominator


def recall(ranking: RelevantRanks, k: int | None) -> float:
    """Relevant ranks within k over R; 0.0 if R = 0."""
    relevant = len(ranking.ideal)
    if relevant == 0:
        return 0.0
    return found(ranking, k) / relevant


def f1(ranking: RelevantRanks, k: int | None) -> float:
    """2·P·R / (P + R) of `precision` and `recall`, or 0.0 when both are 0."""
    p = precision(ranking, k)
    r = recall(ranking, k)
    return 2.0 * p * r / (p + r) if p + r > 0.0 else 0.0


def reciprocal_rank(ranking: RelevantRanks, k: int | None) -> float:
    """1 / the first relevant rank within k, or 0.0 when there is none."""
    ranks = ranking.ranks
    if not ranks or (k is not None and ranks[0] > k):
        return 0.0
    return 1.0 / ranks[0]


def hit(ranking: RelevantRanks, k: int | None) -> float:
    """1.0 when some rank within k is relevant, else 0.0."""
    ranks = ranking.ranks
    return 1.0 if ranks and (k is None or ranks[0] <= k) else 0.0


def ndcg(ranking: RelevantRanks, k: int | None) -> float:
    """DCG within k over the DCG of the ideal gains at ranks 1..min(k, R); 0.0 if R = 0.

    DCG = Σ gain / log2(rank + 1), the gain used as is (linear gain).
    """
    ideal = ranking.ideal if k is None else ranking.ideal[:k]
    if len(ideal) >= len(_DISCOUNTS) or (ranking.ranks and ranking.ranks[-1] >= len(_DISCOUNTS)):
        discount(max(len(ideal), *ranking.ranks[-1:]))
    discounts = _DISCOUNTS
    ideal_dcg = 0.0
    for rank, gain in enumerate(ideal, start=1):
        ideal_dcg += gain / discounts[rank]
    if ideal_dcg == 0.0:
        return 0.0
    dcg = 0.0
    for rank, gain in zip(ranking.ranks[: found(ranking, k)], ranking.gains, strict=False):
        dcg += gain / discounts[rank]
    return dcg / ideal_dcg


def average_precision(ranking: RelevantRanks, k: int | None) -> float:
    """Σ over relevant ranks r within k of precision@r, divided by R; 0.0 if R = 0."""
    relevant = len(ranking.ideal)
    if relevant == 0:
        return 0.0
    total = 0.0
    for hits, rank in enumerate(ranking.ranks[: found(ranking, k)], start=1):
        total += hits / rank
    return total / relevant


def r_precision(ranking: RelevantRanks, k: int | None) -> float:
    """Relevant ranks among the first R (and within k) over R; 0.0 if R = 0."""
    relevant = len(ranking.ideal)
    if relevant == 0:
        return 0.0
    limit = relevant if k is None else min(relevant, k)
    return bisect_right(ranking.ranks, limit) / relevant
