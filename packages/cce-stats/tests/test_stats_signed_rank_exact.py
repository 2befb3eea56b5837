"""The signed-rank test's exact count beyond 20 pairs, against independent oracles.

IR deltas sit on lattices (hit@k deltas are ±1, P@10 deltas multiples of 0.1), where
the normal approximation is poor well past 20 pairs. Up to `EXACT_LIMIT` (1,000)
non-zero deltas the p-value is the exact permutation p; here it is checked against
scipy's binomial test (all magnitudes tied), scipy's exact Wilcoxon distribution (no
ties), a numpy convolution over tie groups and an exact integer subset-sum count
(`oracle_count_at_most`), all written independently of the package's fixed-point
count, whose p must be the exact p to the last bit (docs/statistics.md#signed-rank-test).
Seeds are fixed; the 1,000-pair comparisons with the exact integer count are slow-marked.
"""

from __future__ import annotations

import math
import random
from itertools import accumulate

import numpy as np
import pytest
from scipy import stats

from cce_stats import SignedRankTest, paired_test
from cce_stats import signed_rank as signed_rank_module
from cce_stats.signed_rank import EXACT_LIMIT, _bounded_count_at_most, signed_ranks


def _oracle_counts(ranks: list[int], cap: int) -> list[int]:
    """How many subsets of `ranks` sum to each of 0..cap: exact integer fields, packed."""
    width = 8 * ((len(ranks) + 1 + 7) // 8)
    limit = (cap + 1) * width
    packed = 1
    for rank in ranks:
        packed += packed << (rank * width)
        if packed.bit_length() > limit:
            packed &= (1 << limit) - 1
    field_bytes = width // 8
    fields = min(cap, sum(ranks)) + 1
    raw = packed.to_bytes(fields * field_bytes, "little")
    return [
        int.from_bytes(raw[start : start + field_bytes], "little")
        for start in range(0, len(raw), field_bytes)
    ]


def oracle_count_at_most(ranks: list[int], cap: int) -> int:
    """Exactly how many subsets of `ranks` sum to at most `cap`: integer counts throughout.

    The sorted ranks are dealt alternately into two halves whose exact counts meet at
    `cap` (the package's algorithm before its counts went fixed-point). 4-9 s at 1,000
    ranks, exact by construction.
    """
    ordered = sorted(ranks)
    first, second = (_oracle_counts(half, cap) for half in (ordered[0::2], ordered[1::2]))
    at_most = list(accumulate(second))
    last = len(at_most) - 1
    return sum(count * at_most[min(cap - value, last)] for value, count in enumerate(first))


def oracle_p(deltas: list[float]) -> float:
    """The exact permutation p as the integer ratio 2 * #{W+ <= c} / 2^m, rounded once."""
    ranks, _ = signed_ranks(deltas)
    doubled = [round(2.0 * abs(rank)) for rank in ranks]
    observed = sum(d for d, rank in zip(doubled, ranks, strict=True) if rank > 0.0)
    total = sum(doubled)
    if 2 * observed == total:
        return 1.0
    count = oracle_count_at_most(doubled, min(observed, total - observed))
    return min(1.0, 2 * count / (1 << len(doubled)))


def untied_deltas(m: int, drift: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(drift, 1.0) for _ in range(m)]


def lattice_deltas(m: int, levels: int, bias: float, seed: int) -> list[float]:
    """m non-zero deltas that are multiples of 1/levels (P@10: levels = 10), wins with
    probability 0.5 + bias."""
    rng = random.Random(seed)
    sign = [1 if rng.random() < 0.5 + bias else -1 for _ in range(m)]
    return [s * rng.randint(1, levels) / levels for s in sign]


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


def test_1000_pairs_of_plus_minus_one_get_the_exact_binomial_p() -> None:
    # Every magnitude ties: W+ counts the wins and p is the two-sided binomial p.
    deltas = [1.0] * 531 + [-1.0] * 469
    p = SignedRankTest().run(deltas).p
    assert EXACT_LIMIT == 1000
    tail = sum(math.comb(1000, k) for k in range(470))
    assert p == 2 * tail / 2**1000
    assert p == pytest.approx(float(stats.binomtest(531, 1000).pvalue), rel=1e-9)


def test_one_pair_beyond_the_limit_gets_the_normal_approximation() -> None:
    deltas = [1.0] * 532 + [-1.0] * 469
    p = SignedRankTest().run(deltas).p
    theirs = stats.wilcoxon(deltas, method="asymptotic", correction=False).pvalue
    assert p == pytest.approx(float(theirs), rel=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_the_fixed_point_bracket_holds_the_exact_count(seed: int) -> None:
    """With few bits kept the truncation error is large, and still bounded as claimed."""
    rng = random.Random(3600 + seed)
    m = rng.randrange(20, 160)
    ranks = [rng.randint(1, 3 * m) for _ in range(m)]
    cap = rng.randrange(0, sum(ranks) // 2 + 1)
    precision = rng.randint(4, 40)
    low, error = _bounded_count_at_most(ranks, cap, precision)
    exact = oracle_count_at_most(ranks, cap)
    assert low <= exact <= low + error
    exact_low, exact_error = _bounded_count_at_most(ranks, cap, None)
    assert (exact_low, exact_error) == (exact, 0)


def test_a_bracket_too_wide_to_round_is_counted_again_to_the_exact_p(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With 4 bits the first bracket cannot decide the double; the redo must.
    monkeypatch.setattr(signed_rank_module, "_PRECISION_BITS", 4)
    precisions: list[int | None] = []

    def recording(ranks: list[int], cap: int, precision: int | None) -> tuple[int, int]:
        precisions.append(precision)
        return _bounded_count_at_most(ranks, cap, precision)

    monkeypatch.setattr(signed_rank_module, "_bounded_count_at_most", recording)
    for seed in range(6):
        deltas = lattice_deltas(240, 10, 0.03 * seed, 3700 + seed)
        precisions.clear()
        assert SignedRankTest().run(deltas).p == oracle_p(deltas)
        assert len(precisions) >= 2


@pytest.mark.parametrize("m", [301, 500])
@pytest.mark.parametrize("drift", [0.0, 0.08, 0.3])
def test_untied_deltas_at_301_and_500_pairs_equal_the_exact_count_and_scipy(
    m: int, drift: float
) -> None:
    deltas = untied_deltas(m, drift, 3800 + m)
    p = SignedRankTest().run(deltas).p
    assert p == oracle_p(deltas)
    assert p == pytest.approx(float(stats.wilcoxon(deltas, method="exact").pvalue), rel=1e-9)


@pytest.mark.parametrize("m", [301, 500])
@pytest.mark.parametrize(("levels", "bias"), [(10, 0.0), (10, 0.06), (5, 0.1), (2, 0.02)])
def test_lattice_deltas_at_301_and_500_pairs_equal_the_exact_count(
    m: int, levels: int, bias: float
) -> None:
    deltas = lattice_deltas(m, levels, bias, 3900 + m + levels)
    assert SignedRankTest().run(deltas).p == oracle_p(deltas)


@pytest.mark.slow
@pytest.mark.parametrize(
    "deltas",
    [
        untied_deltas(1000, 0.0, 4000),
        untied_deltas(1000, 0.1, 4001),
        lattice_deltas(1000, 10, 0.0, 4002),
        lattice_deltas(1000, 10, 0.05, 4003),
        [(1 + index % 8) * 0.05 * (1 if index % 2 else -1) for index in range(1000)],
    ],
    ids=["untied-centre", "untied-tail", "p10-centre", "p10-tail", "eight-levels"],
)
def test_1000_pairs_equal_the_exact_integer_count(deltas: list[float]) -> None:
    assert SignedRankTest().run(deltas).p == oracle_p(deltas)


@pytest.mark.slow
def test_1000_untied_pairs_equal_scipy_exact() -> None:
    deltas = untied_deltas(1000, 0.05, 4100)
    p = SignedRankTest().run(deltas).p
    assert p == pytest.approx(float(stats.wilcoxon(deltas, method="exact").pvalue), rel=1e-9)


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


@pytest.mark.parametrize("m", [EXACT_LIMIT + 1, EXACT_LIMIT + 33])
def test_beyond_the_exact_limit_the_approximation_stays_near_nominal(m: int) -> None:
    """Why the exact count may stop at EXACT_LIMIT: on +-1 deltas, the lumpiest IR
    deltas, the approximation rejects a true null at most 5.4% of the time past it
    (the maximum over 1,001..2,000 is 0.0537, at m = 1,033; over 301..1,000 it was
    0.0560, at m = 336)."""
    assert _approximate_false_positive_rate(m) <= 0.0537
