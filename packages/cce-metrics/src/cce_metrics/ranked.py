"""Rank-sensitive metrics over anchors: nDCG, average precision, hit and R-precision.

Why it exists: precision@k, recall, MRR and F1 (`cce_metrics.queries`) are the reference
engine's fixed contract; graded, position-discounted metrics are what IR evaluations
usually report next to them. This module owns their definitions for anchors (expected
items that a result can match, several at once) and, through `GainProfile`, for plain
document rankings, so the anchor metrics and the qrels/run API (`cce_metrics.evaluation`)
share one implementation (precision, recall, F1 and reciprocal rank over a profile are
here too, for `evaluate`; over anchors they are `cce_metrics.registry`'s). The contract is
written out in docs/metrics.md#ranked-metrics.

Every metric is computed in two steps:

1. `anchor_profile` turns a judgment matrix and one gain per anchor into a `GainProfile`:
   every anchor counts once, at the rank of the first considered result that matches it;
   the gain of a rank is the largest gain among the anchors first matched there (0.0
   when none is); the ideal gains are the relevant anchors' gains in descending order.
2. The metric functions read only the profile, reduced to its relevant ranks, with the
   textbook formulas of `cce_metrics.relevant_ranks` (which `evaluate` uses too).

All sums run strictly left to right (`seq_sum`), so results do not depend on the Python
version's `sum()`. The four metrics are registered in `cce_metrics.registry.METRICS` as
opt-in (`default=False`) metrics named ndcg, map, hit and rprec.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import attrs

from cce_metrics import relevant_ranks as formulas
from cce_metrics.registry import METRICS, Judgment, Metric
from cce_metrics.relevant_ranks import RelevantRanks
from cce_metrics.summation import seq_sum

EXPECTED_GAIN = 1.0
"""Gain of an expected anchor (docs/metrics.md#graded-relevance)."""

GRADED_EXPECTED_GAIN = 2.0
"""Gain of an expected anchor when graded relevance is asked for."""

SECONDARY_GAIN = 1.0
"""Gain of a secondary (partially relevant) anchor, graded or not."""


@attrs.frozen(slots=True)
class GainProfile:
    """What the ranked metrics of one query need, and nothing else.

    `rank_gains[r - 1]` is the gain earned at rank r, for every considered rank (the
    first `min(len(results), k)` results); a positive gain marks a relevant rank.
    `ideal_gains` are the gains of all relevant items (anchors or documents) in
    descending order; its length is R, the number of relevant items. `k` is the rank
    cut-off, or None for the whole ranking.
    """

    rank_gains: tuple[float, ...]
    ideal_gains: tuple[float, ...]
    k: int | None

    def __attrs_post_init__(self) -> None:
        for gain in (*self.rank_gains, *self.ideal_gains):
            if not math.isfinite(gain) or gain < 0.0:
                raise ValueError(f"gains must be finite and not negative, got {gain!r}")
        if any(gain == 0.0 for gain in self.ideal_gains):
            raise ValueError("ideal_gains lists relevant items only; a gain of 0.0 is not one")
        if list(self.ideal_gains) != sorted(self.ideal_gains, reverse=True):
            raise ValueError("ideal_gains must be in descending order")
        if self.k is not None and (self.k < 1 or len(self.rank_gains) > self.k):
            raise ValueError(f"k must be positive and cover every considered rank, got {self.k}")

    @property
    def relevant(self) -> int:
        """R: how many relevant items the query has (considered or not)."""
        return len(self.ideal_gains)


def anchor_gains(n_expected: int, n_secondary: int = 0, *, graded: bool = False) -> list[float]:
    """One gain per anchor column: expected anchors first, then secondary ones.

    Expected anchors gain `EXPECTED_GAIN` (1.0), or `GRADED_EXPECTED_GAIN` (2.0) when
    `graded`; secondary anchors gain `SECONDARY_GAIN` (1.0) either way.
    """
    if n_expected < 0 or n_secondary < 0:
        raise ValueError("anchor counts must not be negative")
    expected = GRADED_EXPECTED_GAIN if graded else EXPECTED_GAIN
    return [expected] * n_expected + [SECONDARY_GAIN] * n_secondary


def anchor_profile(
    matches: Sequence[Sequence[bool]], gains: Sequence[float], k: int
) -> GainProfile:
    """The gain profile of one query from its judgment matrix.

    `matches[i][j]` says whether result i (rank order) matches anchor j; `gains[j]` is
    anchor j's gain (a gain of 0.0 leaves the anchor out entirely). Only the first
    `min(len(matches), k)` results count. Raises ValueError when `k < 1`, a gain is
    negative or not finite, or a row's length differs from `len(gains)`.
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    for gain in gains:
        if not math.isfinite(gain) or gain < 0.0:
            raise ValueError(f"gains must be finite and not negative, got {gain!r}")
    n_anchors = len(gains)
    first_seen = [False] * n_anchors
    rank_gains: list[float] = []
    for rank, row in enumerate(matches[:k], start=1):
        if len(row) != n_anchors:
            raise ValueError(f"result {rank} has {len(row)} judgments, expected {n_anchors}")
        best = 0.0
        for anchor, matched in enumerate(row):
            if matched and not first_seen[anchor] and gains[anchor] > 0.0:
                first_seen[anchor] = True
                best = max(best, gains[anchor])
        rank_gains.append(best)
    ideal = sorted((gain for gain in gains if gain > 0.0), reverse=True)
    return GainProfile(rank_gains=tuple(rank_gains), ideal_gains=tuple(ideal), k=k)


def discount(rank: int) -> float:
    """The DCG position discount: log2(rank + 1), so rank 1 is not discounted."""
    return math.log2(rank + 1)


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains listed from rank 1: sum of gain / log2(rank + 1)."""
    return seq_sum(gain / discount(rank) for rank, gain in enumerate(gains, start=1))


def relevant_ranks(profile: GainProfile) -> RelevantRanks:
    """The profile reduced to its relevant ranks, their gains and the ideal gains."""
    ranks = [rank for rank, gain in enumerate(profile.rank_gains, start=1) if gain > 0.0]
    gains = [gain for gain in profile.rank_gains if gain > 0.0]
    return RelevantRanks(ranks, gains, profile.ideal_gains, len(profile.rank_gains))


def ndcg(profile: GainProfile) -> float:
    """nDCG: DCG of the ranking over DCG of the ideal gains at ranks 1..min(k, R); 0.0 if R = 0.

    The gain is used as is (Järvelin & Kekäläinen's linear gain, trec_eval's `ndcg_cut`),
    not 2^gain - 1.
    """
    return formulas.ndcg(relevant_ranks(profile), profile.k)


def average_precision(profile: GainProfile) -> float:
    """AP: the sum of precision@r over the relevant ranks r, divided by R; 0.0 if R = 0.

    Gains only decide relevance here (positive = relevant). The divisor is R, every
    relevant item, as in trec_eval's `map` and `map_cut`: a ranking cut at k < R scores at
    most k / R (docs/metrics.md#average-precision).
    """
    return formulas.average_precision(relevant_ranks(profile), profile.k)


def hit(profile: GainProfile) -> float:
    """Hit (success): 1.0 when any considered rank is relevant, else 0.0."""
    return formulas.hit(relevant_ranks(profile), profile.k)


def r_precision(profile: GainProfile) -> float:
    """R-precision: relevant ranks among the first R considered, divided by R; 0.0 if R = 0.

    Ranks past k are never considered, so when R > k this is the relevant ranks within k
    over R.
    """
    return formulas.r_precision(relevant_ranks(profile), profile.k)


def reciprocal_rank(profile: GainProfile) -> float:
    """1 / the first relevant rank, or 0.0 when no considered rank is relevant."""
    return formulas.reciprocal_rank(relevant_ranks(profile), profile.k)


def precision(profile: GainProfile) -> float:
    """Relevant ranks over k (over the considered ranks when k is None; 0.0 when none)."""
    return formulas.precision(relevant_ranks(profile), profile.k)


def recall(profile: GainProfile) -> float:
    """Relevant ranks over R; 0.0 if R = 0."""
    return formulas.recall(relevant_ranks(profile), profile.k)


def f1(profile: GainProfile) -> float:
    """2·P·R / (P + R) of `precision` and `recall`, or 0.0 when both are 0."""
    return formulas.f1(relevant_ranks(profile), profile.k)


def ndcg_at_k(matches: Sequence[Sequence[bool]], gains: Sequence[float], k: int) -> float:
    """nDCG@k of one query over anchors (docs/metrics.md#ndcg)."""
    return ndcg(anchor_profile(matches, gains, k))


def average_precision_at_k(
    matches: Sequence[Sequence[bool]], gains: Sequence[float], k: int
) -> float:
    """Average precision@k of one query over anchors (docs/metrics.md#average-precision)."""
    return average_precision(anchor_profile(matches, gains, k))


def hit_at_k(matches: Sequence[Sequence[bool]], gains: Sequence[float], k: int) -> float:
    """Hit@k (success@k) of one query over anchors (docs/metrics.md#hit)."""
    return hit(anchor_profile(matches, gains, k))


def r_precision_at_k(matches: Sequence[Sequence[bool]], gains: Sequence[float], k: int) -> float:
    """R-precision of one query over anchors, within the first k (docs/metrics.md#r-precision)."""
    return r_precision(anchor_profile(matches, gains, k))


def judgment_profile(judged: Judgment) -> GainProfile:
    """The gain profile of a registry `Judgment` (its rows are already cut at k)."""
    return anchor_profile(judged.matches, judged.gains, judged.k)


def _ndcg(judged: Judgment) -> float:
    return ndcg(judgment_profile(judged))


def _average_precision(judged: Judgment) -> float:
    return average_precision(judgment_profile(judged))


def _hit(judged: Judgment) -> float:
    return hit(judgment_profile(judged))


def _r_precision(judged: Judgment) -> float:
    return r_precision(judgment_profile(judged))


# Opt-in (default=False): reports that do not ask for them stay byte-identical.
NDCG: Final = METRICS.register(
    Metric(
        "ndcg",
        "ndcg_at_k",
        "nDCG@k",
        _ndcg,
        default=False,
        description="discounted gain of the anchors found, over the ideal ranking's",
        ranking_score=formulas.ndcg,
        aliases=("ndcg_cut",),
    )
)
AVERAGE_PRECISION: Final = METRICS.register(
    Metric(
        "map",
        "ap_at_k",
        "AP@k",
        _average_precision,
        default=False,
        description="mean precision at the ranks that find an anchor, over all anchors",
        ranking_score=formulas.average_precision,
        aliases=("AP", "map_cut"),
    )
)
HIT: Final = METRICS.register(
    Metric(
        "hit",
        "hit_at_k",
        "hit@k",
        _hit,
        default=False,
        description="1 when some top-k result finds an anchor",
        ranking_score=formulas.hit,
        aliases=("success", "hit_rate"),
    )
)
R_PRECISION: Final = METRICS.register(
    Metric(
        "rprec",
        "r_precision",
        "R-prec",
        _r_precision,
        default=False,
        description="anchors found in the first R ranks, over R anchors",
        ranking_score=formulas.r_precision,
        aliases=("r-precision", "r_precision"),
    )
)
