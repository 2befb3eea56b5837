"""The paired randomization (sign-flip) test of the mean delta.

Why it exists: under the null hypothesis that backends A and B are exchangeable,
each query's delta is as likely to have come out with the opposite sign, so the
observed mean delta can be ranked among the means of every sign assignment. The
test needs no normality assumption, and Smucker, Allan & Carterette (CIKM 2007)
recommend it for IR comparisons. This module owns `RandomizationTest`: exact
enumeration when at most 20 deltas are non-zero, otherwise a seeded Monte Carlo
over SplitMix64 (docs/statistics.md#randomization-test).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from cce_stats._checks import finite_floats
from cce_stats.distributions import reference_seq_sum
from cce_stats.generator import DEFAULT_SEED, SplitMix64
from cce_stats.protocol import PairedTestResult

__all__ = ["EXACT_LIMIT", "MIN_FLIPS", "RandomizationTest"]

EXACT_LIMIT = 20
"""Up to this many non-zero deltas, all 2^m sign assignments are enumerated."""
MIN_FLIPS = 100_000
"""The fewest Monte Carlo sign assignments a `RandomizationTest` accepts."""

# Sign-flipped sums that differ from the observed |sum| by less than this fraction of
# sum(|d|) count as ties: the same value summed in another order differs in its last bits.
_TIE_FRACTION = 1e-10
_CHUNK_BITS = 8


def _subset_sums(values: Sequence[float]) -> list[float]:
    """All 2^len(values) signed sums, indexed by the bit mask of flipped signs.

    Bit i of the index set means values[i] enters with a minus sign: the sum is the
    plain sum less twice the flipped values.
    """
    sums = [0.0]
    for value in values:
        sums = sums + [total - 2.0 * value for total in sums]
    base = reference_seq_sum(values)
    return [base + total for total in sums]


def _exact_count(nonzero: Sequence[float], threshold: float, tolerance: float) -> int:
    """Count sign assignments whose |sum| >= threshold - tolerance, meeting in the middle."""
    half = len(nonzero) // 2
    left = _subset_sums(nonzero[:half])
    right = sorted(_subset_sums(nonzero[half:]))
    if threshold <= tolerance:
        return len(left) * len(right)
    count = 0
    size = len(right)
    for value in left:
        # value + r >= threshold - tolerance  or  value + r <= -(threshold - tolerance)
        count += size - bisect.bisect_left(right, threshold - tolerance - value)
        count += bisect.bisect_right(right, -(threshold - tolerance) - value)
    return count


def _monte_carlo_count(
    nonzero: Sequence[float], threshold: float, tolerance: float, flips: int, seed: int
) -> int:
    """Count random sign assignments whose |sum| >= threshold - tolerance.

    Each assignment takes ceil(m / 64) SplitMix64 outputs; bit i of the
    concatenated words (low bits first) flips delta i. Sums are assembled from
    per-byte tables of the 256 signed partial sums of each block of 8 deltas.
    """
    m = len(nonzero)
    tables = [_subset_sums(nonzero[i : i + _CHUNK_BITS]) for i in range(0, m, _CHUNK_BITS)]
    words = (m + 63) // 64
    generator = SplitMix64(seed)
    next_u64 = generator.next_u64
    limit = threshold - tolerance
    count = 0
    for _ in range(flips):
        bits = 0
        for word in range(words):
            bits |= next_u64() << (64 * word)
        total = 0.0
        for table in tables:
            # The last block may hold fewer than 8 deltas: its table is shorter.
            total += table[bits & (len(table) - 1)]
            bits >>= _CHUNK_BITS
        if abs(total) >= limit:
            count += 1
    return count


@dataclass(frozen=True, slots=True)
class RandomizationTest:
    """Two-sided paired randomization test of "the mean delta is zero".

    p is the share of sign assignments whose |mean| reaches the observed |mean|:
    exact over all 2^m assignments of the m non-zero deltas when m <= `exact_limit`
    (zeros flip onto themselves, so this equals enumerating all 2^n), otherwise
    (b + 1) / (flips + 1) over `flips` assignments drawn from SplitMix64(`seed`),
    where b counts the draws that reach it. `statistic` is the observed mean delta;
    there is no interval. Fewer than two deltas give p None.
    """

    name: str = "randomization"
    label: str = "paired randomization test"
    statistic_name: str = "mean"
    flips: int = MIN_FLIPS
    seed: int = DEFAULT_SEED
    exact_limit: int = EXACT_LIMIT

    def __post_init__(self) -> None:
        if self.flips < MIN_FLIPS:
            raise ValueError(f"flips must be >= {MIN_FLIPS}, got {self.flips!r}")
        if not 0 <= self.exact_limit <= 30:
            raise ValueError(f"exact_limit must be in [0, 30], got {self.exact_limit!r}")

    def run(self, deltas: Sequence[float]) -> PairedTestResult:
        deltas = finite_floats("deltas", deltas)
        n = len(deltas)
        mean = 0.0 if n == 0 else reference_seq_sum(deltas) / n
        if n < 2:
            return PairedTestResult(self.name, n, mean, None, None, None)
        nonzero = [delta for delta in deltas if delta != 0.0]
        magnitude = reference_seq_sum(abs(delta) for delta in nonzero)
        if not math.isfinite(magnitude):
            raise ValueError("deltas are too large to sum in floating point")
        threshold = abs(reference_seq_sum(nonzero))
        tolerance = _TIE_FRACTION * magnitude
        m = len(nonzero)
        if m <= self.exact_limit:
            p = _exact_count(nonzero, threshold, tolerance) / float(1 << m)
        else:
            hits = _monte_carlo_count(nonzero, threshold, tolerance, self.flips, self.seed)
            p = (hits + 1) / (self.flips + 1)
        return PairedTestResult(self.name, n, mean, mean, p, None)
