"""The Wilcoxon signed-rank test as a permutation test of the signed ranks.

Why it exists: the signed-rank test asks whether B beats A on more, and larger,
per-query deltas than chance would give, using only the order of the deltas'
magnitudes, so one outlier query cannot dominate it the way it can the mean.
This module owns `SignedRankTest`: zero deltas dropped, mid-ranks for tied
magnitudes, the exact permutation distribution of W+ when at most 300 non-zero
deltas remain, otherwise the normal approximation with the tie-corrected variance
and no continuity correction (docs/statistics.md#signed-rank-test). IR deltas are
lumpy (hit@k deltas are all ±1, P@10 deltas multiples of 0.1), and the normal
approximation misjudges such tied lattices well beyond a few dozen pairs, so the
exact count is kept as far as it stays affordable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cce_stats._checks import finite_mean, require_finite_values
from cce_stats.protocol import PairedTestResult

__all__ = ["EXACT_LIMIT", "SignedRankTest", "signed_ranks"]

EXACT_LIMIT = 300
"""Up to this many non-zero deltas the exact distribution of W+ is used.

The exact count costs O(m^4) bit operations: about 0.3 s at m = 300, 1.4 s at 500 and
6-11 s at 1,000 for one metric on one core, and a comparison tests several metrics
(and every tag). Beyond 300 the approximation is close even on the lumpiest deltas:
for +-1 deltas its false-positive rate at alpha = 0.05 is at most 0.056 (m = 336),
against 0.054 at m = 1,000 and 0.078 at m = 21 (docs/statistics.md#signed-rank-test).
"""

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


def _packed_counts(ranks: Sequence[int], cap: int, width: int) -> int:
    """Count the subsets of `ranks` by their sum, for sums 0..`cap`, packed in one integer.

    Field v (bits v*width .. (v+1)*width - 1) holds how many subsets sum to v. Adding
    a rank r to the pool maps every count at v to v + r as well, which is a single
    shift-and-add of the whole packed integer; CPython does that in C, some fifty
    times faster than a Python loop over a list of counts. `width` must exceed the
    bit length of 2^len(ranks), the largest possible count.
    """
    limit = (cap + 1) * width
    mask = (1 << limit) - 1
    packed = 1
    for rank in ranks:
        packed += packed << (rank * width)
        if packed.bit_length() > limit:
            packed &= mask
    return packed


def _unpacked(packed: int, fields: int, width: int) -> list[int]:
    field_bytes = width // 8
    raw = packed.to_bytes(fields * field_bytes, "little")
    return [
        int.from_bytes(raw[start : start + field_bytes], "little")
        for start in range(0, fields * field_bytes, field_bytes)
    ]


def _count_at_most(ranks: Sequence[int], cap: int) -> int:
    """How many of the 2^len(ranks) subsets of `ranks` sum to at most `cap`.

    Meet in the middle: the ranks are dealt alternately into two halves, the subset
    sums of each half are counted up to `cap`, and the count pairs every sum s of
    the first half with the number of second-half sums <= cap - s. That halves the
    pool each count runs over, about a quarter of the work of one full count.
    """
    ordered = sorted(ranks)
    halves = (ordered[0::2], ordered[1::2])
    counts: list[list[int]] = []
    for half in halves:
        width = 8 * ((len(half) + 1 + 7) // 8)
        fields = min(cap, sum(half)) + 1
        counts.append(_unpacked(_packed_counts(half, cap, width), fields, width))
    first, second = counts
    at_most: list[int] = []
    running = 0
    for count in second:
        running += count
        at_most.append(running)
    last = len(at_most) - 1
    return sum(count * at_most[min(cap - value, last)] for value, count in enumerate(first))


def _exact_p(doubled_ranks: list[int], doubled_w_plus: int) -> float:
    """P(|W+ - E| >= |w - E|) under the 2^m equally likely sign assignments.

    Mid-ranks are halves, so everything is counted in doubled ranks, which are
    integers (divided by their common divisor, which changes no comparison): the
    distribution of the doubled W+ is a subset-sum count and every comparison is
    exact. W+ is symmetric about half the rank total T, so for w != T/2 the two
    tails are equal and p = 2 * #{sums <= min(w, T - w)} / 2^m, computed as an exact
    integer ratio and rounded once.
    """
    divisor = math.gcd(*doubled_ranks)
    ranks = [rank // divisor for rank in doubled_ranks]
    observed = doubled_w_plus // divisor
    total = sum(ranks)
    if 2 * observed == total:
        return 1.0
    lower = min(observed, total - observed)
    extreme = 2 * _count_at_most(ranks, lower)
    return min(1.0, extreme / (1 << len(ranks)))


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
        mean = finite_mean(deltas)
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
