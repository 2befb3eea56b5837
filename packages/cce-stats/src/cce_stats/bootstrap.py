"""The paired bootstrap percentile interval of the mean delta.

Why it exists: a confidence interval says how large the difference between two
backends plausibly is, not only whether it is distinguishable from zero, and the
bootstrap gives one without assuming normal deltas. This module owns
`BootstrapTest`: 10,000 resamples of the queries with replacement drawn from
SplitMix64 with a fixed seed, the 2.5% and 97.5% percentiles of the resampled
means as the interval, the percentile test's two-sided p, and `BOOTSTRAP_CALIBRATED_N`,
the fewest deltas at which that p is close enough to its nominal level to act on
(docs/statistics.md#bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cce_stats._checks import finite_float, finite_floats, finite_mean
from cce_stats.generator import DEFAULT_SEED, SplitMix64
from cce_stats.protocol import PairedTestResult

__all__ = [
    "BOOTSTRAP_CALIBRATED_N",
    "MIN_RESAMPLES",
    "BootstrapTest",
    "bootstrap_means",
    "percentile",
]

MIN_RESAMPLES = 10_000
"""The fewest resamples a `BootstrapTest` accepts (and its default)."""
_CONFIDENCE = 0.95

BOOTSTRAP_CALIBRATED_N = 30
"""The fewest deltas at which the percentile test's p may decide anything.

Below it the percentile interval is too narrow (it scales the sd by 1/n where the
t interval uses 1/(n - 1) and a t quantile), so under a true null p < 0.05 far more
often than 5% of the time: about 0.10 at n = 10 and 0.07 at n = 20 for normal
deltas, worse for skewed ones. From 30 deltas the simulated rate on symmetric null
deltas stays within about 0.07: 0.060-0.065 at n = 30 for normal deltas with the
default 10,000 resamples, still above the nominal 0.05 (docs/statistics.md#bootstrap,
pinned by simulations in the test suite, the precise one marked slow). The result
is still computed below it; callers that turn p into a decision (a merge gate)
refuse instead.
"""


def bootstrap_means(deltas: Sequence[float], resamples: int, seed: int) -> list[float]:
    """Return the means of `resamples` resamples of `deltas` with replacement, sorted.

    The n * `resamples` indexes come from one SplitMix64(`seed`) stream
    (`indexes_below(n, ...)`); resample r is the r-th run of n of them. Each mean is
    `math.fsum` / n: the correctly rounded sum has one right answer, so the bytes do
    not depend on the platform or the Python version (unlike `sum()`, which gained
    compensation in 3.12). Raises ValueError when any delta is not finite, there
    are none, or they are so large (near 1e308) that a resample's sum overflows.
    """
    deltas = finite_floats("deltas", deltas)
    n = len(deltas)
    if n == 0:
        raise ValueError("deltas must not be empty")
    indexes = SplitMix64(seed).indexes_below(n, n * resamples)
    pick = deltas.__getitem__
    try:
        means = [
            math.fsum(map(pick, indexes[start : start + n])) / n
            for start in range(0, n * resamples, n)
        ]
    except OverflowError:
        raise ValueError("deltas are too large to sum in floating point") from None
    means.sort()
    return means


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Return the q-quantile of `sorted_values` by linear interpolation.

    The position is h = (N - 1) * q, interpolated between the order statistics at
    floor(h) and floor(h) + 1 — the "linear" (Hyndman–Fan type 7) rule that numpy's
    `quantile` uses by default. Raises ValueError for no values, a non-finite value
    or q outside [0, 1].
    """
    sorted_values = finite_floats("sorted_values", sorted_values)
    q = finite_float("q", q)
    if not sorted_values or not 0.0 <= q <= 1.0:
        raise ValueError(
            f"percentile needs values and 0 <= q <= 1, got {len(sorted_values)} and {q!r}"
        )
    position = (len(sorted_values) - 1) * q
    below = math.floor(position)
    fraction = position - below
    if below + 1 >= len(sorted_values):
        return sorted_values[-1]
    lo = sorted_values[below]
    hi = sorted_values[below + 1]
    return lo + (hi - lo) * fraction


@dataclass(frozen=True, slots=True)
class BootstrapTest:
    """Paired bootstrap: a percentile 95% interval of the mean delta and its test.

    `ci95` is (q_0.025, q_0.975) of the sorted resampled means (type-7 quantiles).
    p = min(1, 2 * (min(#{mean* <= 0}, #{mean* >= 0}) + 1) / (resamples + 1)): twice
    the smaller share of resampled means on either side of zero, with the same + 1
    as the randomization test so it is never exactly 0. `statistic` is the observed
    mean delta. Fewer than two deltas give p and ci95 None.
    """

    name: str = "bootstrap"
    label: str = "paired bootstrap"
    statistic_name: str = "mean"
    resamples: int = MIN_RESAMPLES
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if self.resamples < MIN_RESAMPLES:
            raise ValueError(f"resamples must be >= {MIN_RESAMPLES}, got {self.resamples!r}")

    def run(self, deltas: Sequence[float]) -> PairedTestResult:
        deltas = finite_floats("deltas", deltas)
        n = len(deltas)
        mean = finite_mean(deltas)
        if n < 2:
            return PairedTestResult(self.name, n, mean, None, None, None)
        means = bootstrap_means(deltas, self.resamples, self.seed)
        tail = (1.0 - _CONFIDENCE) / 2.0
        ci95 = (percentile(means, tail), percentile(means, 1.0 - tail))
        at_most_zero = sum(1 for value in means if value <= 0.0)
        at_least_zero = sum(1 for value in means if value >= 0.0)
        smaller = min(at_most_zero, at_least_zero)
        p = min(1.0, 2.0 * (smaller + 1) / (self.resamples + 1))
        return PairedTestResult(self.name, n, mean, mean, p, ci95)
