"""The Wilcoxon signed-rank test as a permutation test of the signed ranks.

Why it exists: the signed-rank test asks whether B beats A on more, and larger,
per-query deltas than chance would give, using only the order of the deltas'
magnitudes, so one outlier query cannot dominate it the way it can the mean.
This module owns `SignedRankTest`: zero deltas dropped, mid-ranks for tied
magnitudes, the exact permutation distribution of W+ when at most `EXACT_LIMIT`
(1,000) non-zero deltas remain, otherwise the normal approximation with the
tie-corrected variance and no continuity correction (docs/statistics.md#signed-rank-test).
IR deltas are lumpy (hit@k deltas are all ±1, P@10 deltas multiples of 0.1), and the
normal approximation misjudges such tied lattices: 15 deltas of +1 and 6 of -1 give
p = 0.0495 by the approximation against 0.0784 exactly.

How the exact p stays affordable at 1,000 pairs, in pure Python:

- Few tie groups (±1 deltas are one, a binomial): the sums of all groups but the
  largest are listed with binomial counts and paired with the largest group's
  cumulative binomial, exactly, in milliseconds.
- Otherwise the subset sums of the doubled ranks are counted with every count of a
  half packed into one integer (one shift-and-add per rank, in C), meet in the
  middle, each half counted only up to half its total (symmetry), and a half of even
  ranks counted in steps of two. Exact counts need fields of about m/2 bits; here
  they keep about 90 significant bits (plus log2(1/p)) in fixed point, and every
  truncation is accounted for, so the count is known to lie in a bracket
  [low, low + error]. p is returned only when both ends round to the same double,
  which is then the exact p correctly rounded: the same bytes an exact integer count
  gives, on every machine. Otherwise (about once in 4,000) the count is redone with
  more bits, exactly in the end. Near the mean that cuts the cost at m = 1,000 from
  2.9 s to 0.34 s (untied) and from 6.1 s to 0.61 s (P@10-like); the measurements are
  in docs/statistics.md#how-the-exact-p-is-computed.

Rejected: multiplying by a tie group's binomial polynomial in one go (CPython's
Karatsuba multiplication costs more than the group's shift-adds); fixed-point
probabilities with a documented absolute error (an absolute error says nothing about
the small p that matter, and such p would no longer be the exact p's bytes).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import mul
from typing import NamedTuple

from cce_stats._checks import finite_floats, finite_mean
from cce_stats.protocol import PairedTestResult

__all__ = ["EXACT_LIMIT", "SignedRankTest", "signed_ranks"]

EXACT_LIMIT = 1000
"""Up to this many non-zero deltas the exact distribution of W+ is used.

At m = 1,000 one exact p costs about 0.35 s of one core for untied deltas with W+ near
its mean, 0.6 s for P@10-like deltas (ten tie groups, half-integer mid-ranks) and
milliseconds for ±1 deltas; magnitudes all tied in pairs (every mid-rank a
half-integer) are the costliest lattice, 0.7-2 s. A smaller p keeps log2(1/p) more
bits per count and costs more: about 1 s at 1e-34, up to 1.4 s at 1e-50 and 3.5 s at
1e-105 (then the count is the exact integer count); tied deltas with p from 1e-55 to
1e-117 1.3-2.5 s, about what the exact integer count costs there. Beyond 1,000 the
approximation is close even on the lumpiest deltas: for ±1 deltas its false-positive
rate at alpha = 0.05 is at most 0.054 for m from 1,001 to 2,000
(docs/statistics.md#signed-rank-test).
"""

# Magnitudes are ranked by their ratio to the largest magnitude rounded to this many
# decimals, so deltas equal but for floating-point noise (0.3 - 0.2 and 0.2 - 0.1) tie.
_TIE_DECIMALS = 12

# Significant bits a count keeps beyond log2(1/p): 53 for a double, 24 for the
# bracket's width (up to 2^17 fields truncated some 36 times, mirrored, in two halves)
# and 12 so that the bracket straddles a rounding boundary about once in 4,000.
_PRECISION_BITS = 89
# The bits the bracket must sit below the count to decide the rounding, when redoing.
_ROUNDING_BITS = 66
# Ranks between two truncations: at least this many spare bits per field.
_HEADROOM_BITS = 12
# The first attempt keeps a quarter more tail bits than the normal approximation
# estimates: far out it overstates p (the permutation distribution's tails are lighter),
# by 15 bits at p = 1e-58 and 60 at 1e-115 on tied deltas at m = 1,000, and an attempt
# short of bits is a second full count.
_TAIL_MARGIN_DIVISOR = 4
# Fixed-point fields at least 7/8 as wide as a half's exact fields are not worth their
# truncations: such counts are done exactly from the start.
_EXACT_SHARE_NUMERATOR = 7
_EXACT_SHARE_DENOMINATOR = 8
# Tie groups are counted by their binomials while the sums of all groups but the
# largest have at most this many combinations.
_FEW_GROUPS = 4096


class _Counts(NamedTuple):
    """Subset counts by sum: counts[k] * 2^shift for the sum step * k, short by <= error."""

    step: int
    counts: list[int]
    shift: int
    error: int


def signed_ranks(deltas: Sequence[float]) -> tuple[list[float], list[int]]:
    """Return the mid-ranks of the non-zero deltas' magnitudes, signed, and the tie sizes.

    Zeros (exactly 0.0) are dropped. Magnitudes tie when their ratios to the
    largest magnitude agree to 12 decimals, and tied magnitudes share the average
    of the ranks they span. The second list holds the size of every group of tied
    magnitudes (1 for an untied one), for the variance's tie correction. Raises
    ValueError when any delta is not finite.
    """
    deltas = finite_floats("deltas", deltas)
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


def _subset_sum_counts(ranks: Sequence[int], cap: int, precision: int | None) -> _Counts:
    """Count the subsets of `ranks` (ascending) by their sum, for sums 0..`cap`.

    The counts of all sums are packed into one integer, field v (`width` bits) holding
    the count for sum v, so adding a rank r to the pool (every count at v also counts at
    v + r) is one shift-and-add of the whole integer, done by CPython in C.

    With `precision` None, or when the exact counts (at most 2^len(ranks)) fit in fields
    no wider than `precision` needs, the fields are wide enough for the exact counts and
    the result is exact. Otherwise the fields are `precision` + headroom bits wide: each
    rank at most doubles a count, so after `headroom` ranks every field is shifted right
    by `headroom` bits, truncating. Then counts[v] * 2^shift <= the count at v, and the
    truncations add up to at most `error` subsets, summed over every sum <= `cap` and
    carried through the ranks still to come (each truncated field loses less than
    2^shift subsets of its prefix, and each of those extends in at most 2^(ranks left)
    ways).
    """
    n = len(ranks)
    exact_width = 8 * ((n + 1 + 7) // 8)
    width, headroom = exact_width, 0
    if precision is not None and precision + _HEADROOM_BITS + 1 < exact_width:
        width = 8 * ((precision + _HEADROOM_BITS + 8) // 8)
        headroom = width - 1 - precision
    fields = cap + 1
    limit = fields * width
    truncate = (1 << limit) - 1
    # Sums beyond cap never feed a sum <= cap: trimmed once they exceed it by 1/16.
    slack = limit + limit // 16 + width
    field_bytes = width // 8
    keep = 0
    if headroom:
        low_bits = ((1 << (width - headroom)) - 1).to_bytes(field_bytes, "little")
        keep = int.from_bytes(low_bits * fields, "little")
    packed, shift, error, reach = 1, 0, 0, 0
    for index, rank in enumerate(ranks):
        if index + 1 - shift > width - 1:
            # The next rank could carry a field into its neighbour: drop `headroom` low
            # bits of every field (the mask clears what slid in from the field above).
            packed = (packed >> headroom) & keep
            shift += headroom
            error += (min(reach, cap) + 1) << (shift + n - index)
        packed += packed << (rank * width)
        reach += rank
        if packed.bit_length() > slack:
            packed &= truncate
    raw = (packed & truncate).to_bytes(fields * field_bytes, "little")
    counts = [
        int.from_bytes(raw[start : start + field_bytes], "little")
        for start in range(0, fields * field_bytes, field_bytes)
    ]
    return _Counts(1, counts, shift, error)


def _half_counts(ranks: Sequence[int], cap: int, precision: int | None) -> _Counts:
    """Subset-sum counts of one half of the ranks for sums 0..`cap`, in steps of its gcd.

    The ranks are divided by their greatest common divisor (a half of even ranks needs
    half the fields), and only sums up to half the half's total are counted: the counts
    are symmetric (a subset and its complement), so the rest is mirrored, its error
    bound with it.
    """
    step = math.gcd(*ranks)
    reduced = sorted(rank // step for rank in ranks)
    total = sum(reduced)
    top = min(cap // step, total)
    computed = min(top, total // 2)
    counted = _subset_sum_counts(reduced, computed, precision)
    counts, error = counted.counts, counted.error
    if top > computed:
        # The count at v > total / 2 is the count at total - v.
        counts.extend(counts[total - top : total - computed][::-1])
        error *= 2
    return _Counts(step, counts, counted.shift, error)


def _split_cost(ranks: Sequence[int]) -> int:
    """Fields a half's count touches, summed over its ranks: its cost up to a constant."""
    if not ranks:
        return 0
    step = math.gcd(*ranks)
    middle = sum(ranks) // step // 2
    reach, cost = 0, 0
    for rank in sorted(ranks):
        reach += rank // step
        cost += min(reach, middle) + 1
    return cost


def _halves(ranks: Sequence[int]) -> tuple[list[int], list[int]]:
    """Split the ranks in two for meet-in-the-middle, whichever split costs less.

    Dealing the sorted ranks alternately balances the halves; putting the even ranks
    on one side lets that side count in steps of two (untied ranks 1..m: a quarter less
    work). The side in steps of one goes second, where its cumulative counts are read
    by slicing.
    """
    ordered = sorted(ranks)
    splits = [(ordered[0::2], ordered[1::2])]
    even = [rank for rank in ordered if rank % 2 == 0]
    odd = [rank for rank in ordered if rank % 2]
    if even and odd:
        splits.append((even, odd))
    first, second = min(splits, key=lambda split: _split_cost(split[0]) + _split_cost(split[1]))
    if not second or (first and math.gcd(*first) < math.gcd(*second)):
        first, second = second, first
    return first, second


def _bounded_count_at_most(
    ranks: Sequence[int], cap: int, precision: int | None
) -> tuple[int, int]:
    """(low, error) with low <= #{subsets of `ranks` summing to at most `cap`} <= low + error.

    Meet in the middle: both halves' subset sums are counted, and every sum s of the
    first half is paired with the number of second-half sums <= `cap` - s. A shortfall
    of the first half's counts is multiplied by at most 2^len(second), the number of
    second-half subsets, and vice versa. With `precision` None the count is exact and
    the error 0.
    """
    first, second = _halves(ranks)
    mine = _half_counts(first, cap, precision)
    if not second:
        return sum(mine.counts) << mine.shift, mine.error
    theirs = _half_counts(second, cap, precision)
    at_most = list(accumulate(theirs.counts))
    last = len(at_most) - 1
    reach = min(len(mine.counts) - 1, cap // mine.step)
    if theirs.step == 1:
        # weights[k] = at_most[min(cap - step * k, last)], the clipped head then a slice.
        clipped = min(reach + 1, max(0, -((last - cap) // mine.step)))
        weights = [at_most[last]] * clipped + at_most[cap - mine.step * clipped :: -mine.step]
    else:
        weights = [
            at_most[min((cap - mine.step * k) // theirs.step, last)] for k in range(reach + 1)
        ]
    low = sum(map(mul, mine.counts, weights)) << (mine.shift + theirs.shift)
    error = (mine.error << len(second)) + (theirs.error << len(first))
    return low, error


def _grouped_count_at_most(ranks: Sequence[int], cap: int) -> int | None:
    """Exactly #{subsets summing to at most `cap`} when the ranks fall in few tie groups.

    A group of t equal ranks r adds r * k with C(t, k) ways. The sums of every group but
    the largest are listed with their counts, each paired with the largest group's
    cumulative binomial count, which costs the product of (t + 1) over those groups:
    None when that exceeds `_FEW_GROUPS`, where counting the subsets is cheaper.
    ±1 deltas are one group, a binomial.
    """
    sizes = Counter(ranks)
    largest = max(sizes, key=lambda rank: (sizes[rank], rank))
    combinations = 1
    for rank, size in sizes.items():
        if rank != largest:
            combinations *= size + 1
            if combinations > _FEW_GROUPS:
                return None
    sums = {0: 1}
    for rank, size in sorted(sizes.items()):
        if rank == largest:
            continue
        ways = _binomials(size, min(size, cap // rank))
        merged: dict[int, int] = {}
        for value, count in sums.items():
            for k in range(min(size, (cap - value) // rank) + 1):
                key = value + k * rank
                merged[key] = merged.get(key, 0) + count * ways[k]
        sums = merged
    size = sizes[largest]
    at_most = list(accumulate(_binomials(size, min(size, cap // largest))))
    last = len(at_most) - 1
    return sum(
        count * at_most[min((cap - value) // largest, last)] for value, count in sums.items()
    )


def _binomials(size: int, last: int) -> list[int]:
    """C(size, k) for k = 0..last, each from the one before."""
    ways = [1]
    for k in range(last):
        ways.append(ways[-1] * (size - k) // (k + 1))
    return ways


def _tail_bits(ranks: Sequence[int], cap: int) -> int:
    """About log2(1 / p) by the normal approximation: how far below 1 the p will be.

    Only the precision of the first attempt depends on it, never the p returned.
    """
    spread = math.sqrt(sum(rank * rank for rank in ranks)) / 2.0
    z = (sum(ranks) / 2.0 - cap) / spread
    tail = math.erfc(z / math.sqrt(2.0))
    if tail > 1e-300:
        return max(0, math.ceil(-math.log2(tail)))
    return math.ceil(z * z / (2.0 * math.log(2.0)) + math.log2(z))


def _exact_p(doubled_ranks: list[int], doubled_w_plus: int) -> float:
    """P(|W+ - E| >= |w - E|) under the 2^m equally likely sign assignments, rounded once.

    Mid-ranks are halves, so everything is counted in doubled ranks, which are integers
    (divided by their common divisor, which changes no comparison): the distribution of
    the doubled W+ is a subset-sum count and every comparison is exact. W+ is symmetric
    about half the rank total T, so for w != T/2 the two tails are equal and
    p = 2 * #{sums <= c} / 2^m with c = min(w, T - w).

    The count is bracketed, low <= count <= low + error, with `_PRECISION_BITS` plus
    about log2(1/p) bits per count, and p is the double that both 2 * low / 2^m and
    2 * (low + error) / 2^m round to: the exact ratio lies between them and rounding is
    monotonic, so it is the exact p correctly rounded, the same double an exact integer
    count gives. When the two round apart (about once in 4,000 tests) the count is
    redone with the precision that bracket shows to be needed, exact in the end.
    """
    divisor = math.gcd(*doubled_ranks)
    ranks = [rank // divisor for rank in doubled_ranks]
    observed = doubled_w_plus // divisor
    total = sum(ranks)
    if 2 * observed == total:
        return 1.0
    lower = min(observed, total - observed)
    outcomes = 1 << len(ranks)
    grouped = _grouped_count_at_most(ranks, lower)
    if grouped is not None:
        return min(1.0, 2 * grouped / outcomes)
    tail_bits = _tail_bits(ranks, lower)
    first = _PRECISION_BITS + tail_bits + tail_bits // _TAIL_MARGIN_DIVISOR
    # A half's exact fields are about len(ranks) / 2 bits wide. Fields nearly as wide
    # save little and still truncate: such a count is exact at once.
    nearly_exact = _EXACT_SHARE_NUMERATOR * len(ranks) <= (
        _EXACT_SHARE_DENOMINATOR * 2 * (first + _HEADROOM_BITS)
    )
    precision: int | None = None if nearly_exact else first
    while True:
        low, error = _bounded_count_at_most(ranks, lower, precision)
        p = min(1.0, 2 * low / outcomes)
        if p == min(1.0, 2 * (low + error) / outcomes):
            return p
        assert precision is not None  # an exact count has no bracket to straddle
        # Short by the bits the bracket is wider than a double's rounding can absorb.
        shortfall = error.bit_length() - low.bit_length() + _ROUNDING_BITS
        # Nothing left above the truncation: count exactly (fields of len(ranks) bits).
        precision = len(ranks) if low == 0 else precision + max(16, shortfall)


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
        deltas = finite_floats("deltas", deltas)
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
