"""The Wilcoxon signed-rank test as a permutation test of the signed ranks.

Why it exists: the signed-rank test asks whether B beats A on more, and larger,
per-query deltas than chance would give, using only the order of the deltas'
magnitudes, so one outlier query cannot dominate it the way it can the mean.
This module owns `SignedRankTest`: zero deltas dropped, mid-ranks for tied
magnitudes, the exact permutation distribution of W+ when at most 20 non-zero
deltas remain, otherwise the normal approximation with the tie-corrected variance
and no continuity correction (docs/statistics.md#signed-rank-test).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cce_stats._checks import require_finite_values
from cce_stats.distributions import reference_seq_sum
from cce_stats.protocol import PairedTestResult

__all__ = ["EXACT_LIMIT", "SignedRankTest", "signed_ranks"]

EXACT_LIMIT = 20
"""Up to this many non-zero deltas the exact distribution of W+ is used."""

# Magnitudes are ranked by their ratio to the largest magnitude rounded to this many
# decimals, so deltas equal but for floating-point noise (0.3 - 0.2 and 0.2 - 0.1) tie.
_TIE_DECIMALS = 12


def signed_ranks(deltas: Sequence[float]) -> tuple[list[float], list[int]]:
    """Return the mid-ranks of the non-zero deltas' magnitudes, signed, and the tie sizes.

    Zeros (exactly 0.0) are dropped. Magnitudes tie when their ratios to the
    largest magnitude agree to 12 decimals, and tied magnitudes share the average
    of the ranks they span. The second list holds the size of every group of tied
    magnitudes (1 for an untied one), for the variance's tie correction. Raises
    ValueError when any delta is not finite.
    """
    require_finite_values("deltas", deltas)
    nonzero = [delta for delta in deltas if delta != 0.0]
    if not nonzero:
        return [], []
    scale = max(abs(delta) for delta in nonzero)
    keys = [round(abs(delta) / scale, _TIE_DECIMALS) for delta in nonzero]
    order = sorted(range(len(nonzero)), key=lambda i: keys[i])
    ranks = [0.0] * len(nonzero)
    groups: list[int] = []
    start = 0
    while start < len(order):
        stop = start + 1
        key = keys[order[start]]
        while stop < len(order) and keys[order[stop]] == key:
            stop += 1
        # Ranks start..stop-1 (0-based) are shared: their average is (start + stop + 1) / 2.
        mid_rank = (start + stop + 1) / 2.0
        for position in range(start, stop):
            index = order[position]
            ranks[index] = math.copysign(mid_rank, nonzero[index])
        groups.append(stop - start)
        start = stop
    return ranks, groups


def _exact_p(doubled_ranks: list[int], doubled_w_plus: int) -> float:
    """P(|W+ - E| >= |w - E|) under the 2^m equally likely sign assignments.

    Mid-ranks are halves, so everything is counted in doubled ranks, which are
    integers: the distribution of the doubled W+ comes from a subset-sum count, and
    every comparison is exact.
    """
    total = sum(doubled_ranks)
    counts = [0] * (total + 1)
    counts[0] = 1
    reach = 0
    for rank in doubled_ranks:
        reach += rank
        for value in range(reach, rank - 1, -1):
            counts[value] += counts[value - rank]
    # In doubled units the mean of W+ is total / 2; compare 2 * |s - total/2| as integers.
    observed = abs(2 * doubled_w_plus - total)
    extreme = sum(count for value, count in enumerate(counts) if abs(2 * value - total) >= observed)
    return extreme / float(1 << len(doubled_ranks))


@dataclass(frozen=True, slots=True)
class SignedRankTest:
    """Two-sided Wilcoxon signed-rank test; `statistic` is W+, the sum of positive ranks.

    With m non-zero deltas, p is exact when m <= `exact_limit`; beyond it,
    z = (W+ - m(m+1)/4) / sqrt(m(m+1)(2m+1)/24 - sum(t^3 - t)/48) over the tie
    groups t, and p = erfc(|z| / sqrt 2). All-zero deltas give W+ = 0 and p = 1.
    Fewer than two deltas give p None. There is no interval.
    """

    name: str = "signed-rank"
    label: str = "Wilcoxon signed-rank test"
    statistic_name: str = "W+"
    exact_limit: int = EXACT_LIMIT

    def run(self, deltas: Sequence[float]) -> PairedTestResult:
        require_finite_values("deltas", deltas)
        n = len(deltas)
        mean = 0.0 if n == 0 else reference_seq_sum(deltas) / n
        if n < 2:
            return PairedTestResult(self.name, n, mean, None, None, None)
        ranks, groups = signed_ranks(deltas)
        m = len(ranks)
        doubled = [round(2.0 * abs(rank)) for rank in ranks]
        doubled_w_plus = sum(d for d, rank in zip(doubled, ranks, strict=True) if rank > 0.0)
        w_plus = doubled_w_plus / 2.0
        if m == 0:
            return PairedTestResult(self.name, n, mean, 0.0, 1.0, None)
        if m <= self.exact_limit:
            p = _exact_p(doubled, doubled_w_plus)
        else:
            expected = m * (m + 1) / 4.0
            tie_correction = sum(t * t * t - t for t in groups)
            variance = (m * (m + 1) * (2 * m + 1) - tie_correction / 2.0) / 24.0
            z = (w_plus - expected) / math.sqrt(variance)
            p = math.erfc(abs(z) / math.sqrt(2.0))
        return PairedTestResult(self.name, n, mean, w_plus, min(p, 1.0), None)
