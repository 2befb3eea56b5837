"""The signed-rank test's exact count beyond 20 pairs, against independent oracles.

IR deltas sit on lattices (hit@k deltas are ±1, P@10 deltas multiples of 0.1), where
the normal approximation is poor well past 20 pairs. Up to `EXACT_LIMIT` non-zero
deltas the p-value is the exact permutation p; here it is checked against scipy's
binomial test (all magnitudes tied), scipy's exact Wilcoxon distribution (no ties) and
a numpy convolution over tie groups written independently of the package's packed
subset-sum count (docs/statistics.md#signed-rank-test). Seeds are fixed.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from cce_stats import SignedRankTest, paired_test
from cce_stats.signed_rank import EXACT_LIMIT


def grouped_permutation_p(deltas: list[float]) -> float:
    """Exact p of the signed-rank permutation test by convolving the tie groups' binomials.

    Each tie group of t magnitudes with doubled mid-rank r adds r * K, K ~ Bin(t, 1/2),
    to the doubled W+; the groups are independent under the null.
    """
    nonzero = np.array([d for d in deltas if d != 0.0])
    doubled = np.rint(2.0 * stats.rankdata(np.abs(nonzero), method="average")).astype(np.int64)
    observed = int(doubled[nonzero > 0].sum())
    total = int(doubled.sum())
    pmf = np.zeros(total + 1)
    pmf[0] = 1.0
    reach = 0
    for rank in np.unique(doubled):
        size = int((doubled == rank).sum())
        weights = stats.binom.pmf(np.arange(size + 1), size, 0.5)
        mixed = np.zeros(total + 1)
        for k, weight in enumerate(weights):
            shift = int(k * rank)
            mixed[shift : shift + reach + 1] += weight * pmf[: reach + 1]
        pmf = mixed
        reach += size * int(rank)
    distance = np.abs(2 * np.arange(total + 1) - total)
    return float(pmf[distance >= abs(2 * observed - total)].sum())


def test_fifteen_wins_six_losses_of_one_is_the_exact_binomial_p() -> None:
    deltas = [1.0] * 15 + [-1.0] * 6
    result = paired_test("signed-rank").run(deltas)
    # All 21 magnitudes tie, so W+ counts the wins: Bin(21, 1/2), two-sided.
    assert result.p == pytest.approx(float(stats.binomtest(15, 21).pvalue), rel=1e-12)
    assert result.p == pytest.approx(0.0783538818359375, rel=1e-12)
    assert result.statistic == 15 * 11.0


@pytest.mark.parametrize("seed", range(12))
def test_lattice_deltas_from_21_to_200_pairs_equal_the_grouped_count(seed: int) -> None:
    rng = random.Random(3400 + seed)
    m = rng.randrange(21, 201)
    levels = rng.choice([1, 2, 5, 10])  # hit@k, two levels, P@5, P@10 lattices
    steps = [rng.choice([k for k in range(-levels, levels + 1) if k != 0]) for _ in range(m)]
    deltas = [step / levels for step in steps] + [0.0] * rng.randrange(0, 5)
    rng.shuffle(deltas)
    ours = paired_test("signed-rank").run(deltas).p
    assert ours is not None
    assert ours == pytest.approx(grouped_permutation_p(deltas), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("seed", range(6))
def test_untied_deltas_from_21_to_200_pairs_equal_scipy_exact(seed: int) -> None:
    rng = random.Random(3500 + seed)
    deltas = [rng.gauss(0.05, 0.3) for _ in range(rng.randrange(21, 201))]
    ours = paired_test("signed-rank").run(deltas).p
    theirs = float(stats.wilcoxon(deltas, method="exact").pvalue)
    assert ours == pytest.approx(theirs, rel=1e-9)


def test_beyond_the_limit_the_normal_approximation_remains() -> None:
    deltas = [1.0] * 15 + [-1.0] * 6
    approximate = SignedRankTest(exact_limit=20).run(deltas).p
    theirs = stats.wilcoxon(deltas, method="approx", correction=False).pvalue
    assert approximate == pytest.approx(float(theirs), rel=1e-9)


def test_the_worst_case_for_the_exact_count_uses_the_approximation_at_1000_pairs() -> None:
    """1,000 tied lattice deltas with W+ near its mean cost 6-11 s to count exactly;
    past EXACT_LIMIT they get the tie-corrected normal approximation instead."""
    deltas = [(1 + index % 8) * 0.05 * (1 if index % 2 else -1) for index in range(1000)]
    p = SignedRankTest().run(deltas).p
    theirs = stats.wilcoxon(deltas, method="asymptotic", correction=False).pvalue
    assert EXACT_LIMIT == 300
    assert p == pytest.approx(float(theirs), rel=1e-9)


def _approximate_false_positive_rate(m: int) -> float:
    """The approximation's exact rejection rate at alpha 0.05 on m null +-1 deltas.

    Every magnitude ties, so W+ = k (m + 1) / 2 with k ~ Bin(m, 1/2) wins; the package's
    p is evaluated at each k (it falls as k leaves m / 2) and the binomial mass of the
    rejected k is summed exactly.
    """
    test = SignedRankTest()
    rejected = 0
    for wins in range(m // 2 + 1):
        p = test.run([1.0] * wins + [-1.0] * (m - wins)).p
        assert p is not None
        if p >= 0.05:
            break
        rejected += 2 * math.comb(m, wins) if 2 * wins != m else math.comb(m, wins)
    return float(rejected / 2**m)


@pytest.mark.parametrize("m", [EXACT_LIMIT + 1, EXACT_LIMIT + 36, 500, 1000])
def test_beyond_the_exact_limit_the_approximation_stays_near_nominal(m: int) -> None:
    """Why the exact count may stop at EXACT_LIMIT: on +-1 deltas, the lumpiest IR
    deltas, the approximation rejects a true null at most 5.6% of the time past it
    (the maximum over 301..1,000 is 0.0560, at m = 336)."""
    assert _approximate_false_positive_rate(m) <= 0.0561
