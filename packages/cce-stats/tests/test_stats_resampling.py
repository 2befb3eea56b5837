"""Randomization, signed-rank and bootstrap tests against scipy and brute force.

scipy is a test-only dependency; the brute-force enumerations below are written
independently of the package's meet-in-the-middle and subset-sum code.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats

from cce_stats import PAIRED_TESTS, BootstrapTest, RandomizationTest, SignedRankTest, paired_test
from cce_stats.bootstrap import bootstrap_means, percentile
from cce_stats.generator import DEFAULT_SEED, SplitMix64
from cce_stats.signed_rank import signed_ranks

# Deltas on a 0.05 grid: ties and zeros are common, as they are for P@k and MRR deltas.
grid_deltas = st.lists(
    st.integers(min_value=-20, max_value=20).map(lambda step: step * 0.05), min_size=2, max_size=12
)
real_deltas = st.lists(
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False),
    min_size=2,
    max_size=30,
)


def _cases(seed: int, count: int, sizes: range, decimals: int | None) -> list[list[float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.choice(sizes)
        values = [rng.gauss(0.05, 0.25) for _ in range(n)]
        out.append([round(v, decimals) for v in values] if decimals is not None else values)
    return out


def brute_force_randomization_p(deltas: list[float]) -> float:
    observed = abs(math.fsum(deltas))
    hits = 0
    signs = list(itertools.product((1.0, -1.0), repeat=len(deltas)))
    for assignment in signs:
        total = math.fsum(s * d for s, d in zip(assignment, deltas, strict=True))
        if abs(total) >= observed - 1e-9:
            hits += 1
    return hits / len(signs)


def brute_force_signed_rank_p(deltas: list[float]) -> float:
    ranks, _ = signed_ranks(deltas)
    magnitudes = [abs(r) for r in ranks]
    expected = sum(magnitudes) / 2.0
    observed = abs(sum(r for r in ranks if r > 0) - expected)
    hits = 0
    signs = list(itertools.product((True, False), repeat=len(magnitudes)))
    for assignment in signs:
        w = sum(m for positive, m in zip(assignment, magnitudes, strict=True) if positive)
        if abs(w - expected) >= observed - 1e-9:
            hits += 1
    return hits / len(signs) if signs else 1.0


class TestGenerator:
    def test_splitmix64_known_stream(self) -> None:
        # The published SplitMix64 test vector for seed 1234567.
        generator = SplitMix64(1234567)
        assert [generator.next_u64() for _ in range(5)] == [
            6457827717110365317,
            3203168211198807973,
            9817491932198370423,
            4593380528125082431,
            16408922859458223821,
        ]

    def test_indexes_are_in_range_and_roughly_uniform(self) -> None:
        indexes = SplitMix64(DEFAULT_SEED).indexes_below(7, 70_000)
        counts = [indexes.count(value) for value in range(7)]
        assert sum(counts) == 70_000
        assert all(9_500 < count < 10_500 for count in counts)

    def test_rejects_bad_arguments(self) -> None:
        with pytest.raises(ValueError, match="bound"):
            SplitMix64(1).indexes_below(0, 3)
        with pytest.raises(ValueError, match="seed"):
            SplitMix64(1.5)  # type: ignore[arg-type]


class TestRandomization:
    @pytest.mark.parametrize("deltas", _cases(11, 25, range(2, 13), 2))
    def test_exact_p_equals_scipy_permutation_test(self, deltas: list[float]) -> None:
        ours = paired_test("randomization").run(deltas)
        theirs = stats.permutation_test(
            (np.array(deltas),), np.mean, permutation_type="samples", n_resamples=np.inf
        )
        assert ours.p is not None
        assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-12)

    @settings(max_examples=60, deadline=None)
    @given(grid_deltas)
    def test_exact_p_equals_brute_force(self, deltas: list[float]) -> None:
        assert paired_test("randomization").run(deltas).p == pytest.approx(
            brute_force_randomization_p(deltas), rel=1e-12
        )

    def test_worked_example(self) -> None:
        result = paired_test("randomization").run([0.2, 0.1, 0.0, 0.3, -0.1, 0.1])
        # Flipping a set F of the five non-zero deltas gives 0.6 - 2 * sum(F); |0.6 - 2s|
        # >= 0.6 needs sum(F) <= 0 (4 sets: {}, {-0.1}, two {0.1, -0.1}) or >= 0.6 (4 more).
        assert result.p == 8 / 32
        assert result.statistic == result.mean_delta == 0.10000000000000002
        assert result.ci95 is None

    def test_monte_carlo_agrees_with_the_exact_p(self) -> None:
        deltas = _cases(5, 1, range(24, 25), 2)[0]
        exact = RandomizationTest(exact_limit=30).run(deltas).p
        sampled = RandomizationTest(exact_limit=20).run(deltas).p
        assert exact is not None and sampled is not None
        standard_error = math.sqrt(exact * (1.0 - exact) / 100_000)
        assert abs(sampled - exact) < 4.0 * standard_error + 1e-5
        # p = (b + 1) / (B + 1) for an integer b.
        hits = sampled * 100_001 - 1.0
        assert abs(hits - round(hits)) < 1e-6

    def test_monte_carlo_is_byte_stable_and_seeded(self) -> None:
        deltas = _cases(6, 1, range(40, 41), None)[0]
        first = paired_test("randomization").run(deltas)
        second = paired_test("randomization").run(deltas)
        assert repr(first) == repr(second)
        other = RandomizationTest(seed=7).run(deltas)
        assert other.p != first.p

    def test_refuses_fewer_than_the_minimum_flips(self) -> None:
        with pytest.raises(ValueError, match="flips must be >= 100000"):
            RandomizationTest(flips=10)

    def test_all_zero_and_too_few(self) -> None:
        assert paired_test("randomization").run([0.0, 0.0, 0.0]).p == 1.0
        assert paired_test("randomization").run([0.4]).p is None


class TestSignedRank:
    @pytest.mark.parametrize("deltas", _cases(21, 25, range(2, 21), None))
    def test_exact_equals_scipy_exact_without_ties(self, deltas: list[float]) -> None:
        ours = paired_test("signed-rank").run(deltas)
        theirs = stats.wilcoxon(deltas, method="exact")
        assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-12)
        ranks, _ = signed_ranks(deltas)
        w_plus = sum(r for r in ranks if r > 0)
        assert ours.statistic == w_plus
        assert min(w_plus, sum(abs(r) for r in ranks) - w_plus) == float(theirs.statistic)

    @pytest.mark.parametrize("deltas", _cases(22, 12, range(4, 11), 1))
    def test_ties_and_zeros_equal_scipy_s_permutation_default(self, deltas: list[float]) -> None:
        # With ties or zeros and n <= 13, scipy's default is a full permutation test.
        ours = paired_test("signed-rank").run(deltas)
        assert ours.p == pytest.approx(float(stats.wilcoxon(deltas).pvalue), rel=1e-12)

    @pytest.mark.parametrize("deltas", _cases(23, 20, range(21, 120), 2))
    def test_normal_approximation_equals_scipy_asymptotic(self, deltas: list[float]) -> None:
        nonzero = [d for d in deltas if d != 0.0]
        if len(nonzero) <= 20:
            pytest.skip("too few non-zero deltas for the approximation")
        ours = SignedRankTest(exact_limit=20).run(deltas)
        theirs = stats.wilcoxon(deltas, method="asymptotic", correction=False)
        assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-9)

    @settings(max_examples=60, deadline=None)
    @given(grid_deltas)
    def test_exact_equals_brute_force_with_ties(self, deltas: list[float]) -> None:
        assert paired_test("signed-rank").run(deltas).p == pytest.approx(
            brute_force_signed_rank_p(deltas), rel=1e-12
        )

    def test_differs_from_scipy_exact_when_ranks_tie(self) -> None:
        # scipy's "exact" uses the untied distribution and rounds W+; the exact
        # permutation distribution of the mid-ranks is a different number.
        deltas = [0.1, 0.1, 0.1, -0.2, 0.3, 0.3, 0.4, -0.4, 0.5, 0.6, 0.6, 0.7, 0.8, 0.9]
        ours = paired_test("signed-rank").run(deltas).p
        assert ours == pytest.approx(brute_force_signed_rank_p(deltas), rel=1e-12)
        assert ours != pytest.approx(float(stats.wilcoxon(deltas, method="exact").pvalue))

    def test_noise_level_differences_tie(self) -> None:
        ranks, groups = signed_ranks([0.3 - 0.2, 0.2 - 0.1, -0.5])
        assert ranks == [1.5, 1.5, -3.0]
        assert groups == [2, 1]

    def test_zeros_dropped_and_all_zero(self) -> None:
        assert signed_ranks([0.0, 0.2, -0.0, -0.1]) == ([2.0, -1.0], [1, 1])
        result = paired_test("signed-rank").run([0.0, 0.0])
        assert (result.statistic, result.p) == (0.0, 1.0)


class TestBootstrap:
    def test_interval_is_the_percentiles_of_the_resampled_means(self) -> None:
        deltas = _cases(31, 1, range(30, 31), None)[0]
        result = paired_test("bootstrap").run(deltas)
        means = bootstrap_means(deltas, 10_000, DEFAULT_SEED)
        assert result.ci95 is not None
        expected = np.quantile(np.array(means), [0.025, 0.975])
        assert result.ci95[0] == pytest.approx(float(expected[0]), rel=1e-14)
        assert result.ci95[1] == pytest.approx(float(expected[1]), rel=1e-14)
        assert result.ci95[0] < result.mean_delta < result.ci95[1]

    @pytest.mark.parametrize("deltas", _cases(32, 4, range(25, 80), None))
    def test_interval_is_close_to_scipy_s_percentile_bootstrap(self, deltas: list[float]) -> None:
        ours = paired_test("bootstrap").run(deltas).ci95
        theirs = stats.bootstrap(
            (np.array(deltas),), np.mean, n_resamples=10_000, method="percentile", rng=1
        ).confidence_interval
        standard_error = float(np.std(deltas, ddof=1)) / math.sqrt(len(deltas))
        assert ours is not None
        assert abs(ours[0] - float(theirs.low)) < 0.1 * standard_error
        assert abs(ours[1] - float(theirs.high)) < 0.1 * standard_error

    def test_p_matches_the_share_of_means_beyond_zero(self) -> None:
        deltas = _cases(33, 1, range(20, 21), None)[0]
        means = bootstrap_means(deltas, 10_000, DEFAULT_SEED)
        smaller = min(sum(m <= 0.0 for m in means), sum(m >= 0.0 for m in means))
        assert paired_test("bootstrap").run(deltas).p == min(1.0, 2 * (smaller + 1) / 10_001)

    def test_byte_stable(self) -> None:
        deltas = [0.2, 0.1, 0.0, 0.3, -0.1, 0.1]
        assert repr(paired_test("bootstrap").run(deltas)) == repr(
            paired_test("bootstrap").run(deltas)
        )

    def test_percentile_endpoints(self) -> None:
        assert percentile([1.0, 2.0, 3.0], 0.0) == 1.0
        assert percentile([1.0, 2.0, 3.0], 1.0) == 3.0
        assert percentile([1.0, 2.0, 3.0], 0.25) == 1.5

    def test_refuses_fewer_than_the_minimum_resamples(self) -> None:
        with pytest.raises(ValueError, match="resamples must be >= 10000"):
            BootstrapTest(resamples=100)


class TestProperties:
    @settings(max_examples=15, deadline=None)
    @given(real_deltas)
    @example([0.0, 5e-324])  # subnormal: the t-test rescales instead of underflowing
    def test_negating_the_deltas_keeps_p(self, deltas: list[float]) -> None:
        negated = [-d for d in deltas]
        for test in PAIRED_TESTS.values():
            assert test.run(deltas).p == test.run(negated).p

    @settings(max_examples=15, deadline=None)
    @given(real_deltas)
    @example([0.0, 5e-324])
    def test_p_is_a_probability_and_calls_are_deterministic(self, deltas: list[float]) -> None:
        for test in PAIRED_TESTS.values():
            first = test.run(deltas)
            assert first.p is not None
            assert 0.0 <= first.p <= 1.0
            assert repr(first) == repr(test.run(deltas))
            assert first.test == test.name and first.n == len(deltas)


def test_signed_rank_test_class_is_registered() -> None:
    assert isinstance(PAIRED_TESTS["signed-rank"], SignedRankTest)
    assert list(PAIRED_TESTS) == ["t", "randomization", "signed-rank", "bootstrap"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_helpers_reject_non_finite_input(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        signed_ranks([0.1, bad])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_means([0.1, bad], 10, 1)
    with pytest.raises(ValueError, match="finite"):
        percentile([0.1, bad], 0.5)
    with pytest.raises(ValueError, match="finite"):
        percentile([0.1, 0.2], bad)
