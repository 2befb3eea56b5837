"""A suite's macro mean tested as reported, and its members as the unit of inference.

Oracles: statsmodels' weighted least squares with the HC1 sandwich covariance (the
weighted t's standard error), scipy's Student t (p and interval at Kish's effective
degrees of freedom), numpy's reliability-weighted covariance (the effect size), a
direct enumeration of every sign assignment (the exact weighted randomization p), a
numpy Monte Carlo on its own generator (the seeded one), and scipy's `ttest_rel`,
`wilcoxon` and `permutation_test` on member means
(docs/statistics.md#query-level-versus-member-level-inference).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy
import pytest
import statsmodels.api as sm
from scipy import stats

from cce_stats import (
    effect_size_dz,
    macro_effect_size,
    macro_paired_test,
    macro_weights,
    member_level_test,
    member_means,
    paired_t_test,
    paired_test,
    weighted_randomization_test,
    weighted_t_test,
)

np: Any = numpy

# A constructed suite: one member of 300 queries that gains a little, two of 10 that
# lose a lot. Pooled (micro), B is "significantly better"; the macro mean the suite's
# table shows is clearly worse.
LARGE = [0.5, 0.25, 0.0, 0.0, -0.25, 0.0, 0.25, 0.0, -0.25, 0.0, 0.0, 0.0] * 25
SMALL_B = [-0.5, -0.25, 0.0, -0.25, -0.2, 0.0, -0.25, -0.1, -0.5, 0.15]
SMALL_C = [-0.5, 0.0, -0.25, -0.2, 0.0, -0.25, -0.25, 0.0, -0.5, 0.0]
SUITE = [LARGE, SMALL_B, SMALL_C]
POOLED = [delta for member in SUITE for delta in member]


def _hc1_oracle(deltas: list[float], weights: list[float]) -> tuple[float, float]:
    """statsmodels: (mean, standard error) of an intercept-only WLS with HC1 errors."""
    exog = np.ones((len(deltas), 1))
    fit = sm.WLS(np.array(deltas), exog, weights=np.array(weights)).fit(cov_type="HC1")
    return float(fit.params[0]), float(fit.bse[0])


def _kish_df(weights: list[float]) -> float:
    w = np.array(weights)
    return float(w.sum() ** 2 / (w * w).sum() - 1.0)


def test_macro_weights_make_the_weighted_mean_the_mean_of_member_means() -> None:
    weights = macro_weights([300, 10, 10])
    assert len(weights) == 320
    assert math.fsum(weights) == pytest.approx(1.0, abs=1e-15)
    assert weights[0] == 1 / 900 and weights[300] == 1 / 30
    weighted = math.fsum(w * d for w, d in zip(weights, POOLED, strict=True))
    assert weighted == pytest.approx(np.mean([np.mean(m) for m in SUITE]), abs=1e-15)
    assert macro_weights([4, 4]) == [1 / 8] * 8


def test_the_constructed_suite_micro_better_macro_worse() -> None:
    micro_t = paired_test("t").run(POOLED)
    micro_randomization = paired_test("randomization").run(POOLED)
    assert micro_t.mean_delta == pytest.approx(0.02703125, abs=1e-12)
    assert micro_t.p == pytest.approx(0.0205, abs=5e-4)
    assert micro_randomization.p == pytest.approx(0.022, abs=2e-3)

    macro = macro_paired_test(SUITE)
    assert macro.mean_delta == pytest.approx(-0.114444444444, abs=1e-11)
    assert macro.n == 320
    assert macro.p is not None and macro.p < 0.001
    assert macro.ci95 is not None and macro.ci95[1] < 0.0
    macro_randomization = macro_paired_test(SUITE, "randomization")
    assert macro_randomization.mean_delta == macro.mean_delta
    assert macro_randomization.p is not None
    assert 0.001 < macro_randomization.p < 0.004

    # Member level: three members are little evidence either way.
    members = member_level_test(SUITE)
    assert members.n == 3
    assert members.p == pytest.approx(0.2803, abs=1e-4)


def test_the_constructed_suite_weighted_t_matches_statsmodels_and_scipy() -> None:
    weights = macro_weights([len(member) for member in SUITE])
    mean, standard_error = _hc1_oracle(POOLED, weights)
    df = _kish_df(weights)
    result = weighted_t_test(POOLED, weights)
    assert result.mean_delta == pytest.approx(mean, abs=1e-14)
    assert result.standard_error == pytest.approx(standard_error, rel=1e-12)
    assert result.df == pytest.approx(df, rel=1e-12)
    assert result.t == pytest.approx(mean / standard_error, rel=1e-12)
    assert result.p == pytest.approx(2 * stats.t.sf(abs(mean / standard_error), df), rel=1e-9)
    half = stats.t.ppf(0.975, df) * standard_error
    assert result.ci95 is not None
    assert result.ci95[0] == pytest.approx(mean - half, rel=1e-9)
    assert result.ci95[1] == pytest.approx(mean + half, rel=1e-9)
    macro = macro_paired_test(SUITE)
    assert macro.statistic == pytest.approx(result.t, rel=1e-12)
    assert macro.p == pytest.approx(result.p, rel=1e-9)


def test_the_constructed_suite_effect_sizes() -> None:
    weights = macro_weights([len(member) for member in SUITE])
    variance = float(np.cov(np.array(POOLED), aweights=np.array(weights)))
    want = np.average(POOLED, weights=weights) / math.sqrt(variance)
    assert macro_effect_size(SUITE) == pytest.approx(want, rel=1e-9)
    assert macro_effect_size(SUITE) == pytest.approx(-0.504, abs=1e-3)
    pooled = effect_size_dz(POOLED)
    assert pooled is not None and pooled > 0.0  # the pooled d_z has the other sign
    per_member = [effect_size_dz(member) for member in SUITE]
    assert per_member == pytest.approx([0.2082, -0.9024, -0.9927], abs=1e-4)


def test_the_constructed_suite_weighted_randomization_matches_a_numpy_monte_carlo() -> None:
    weights = np.array(macro_weights([len(member) for member in SUITE]))
    products = weights * np.array(POOLED)
    observed = abs(products.sum())
    rng = np.random.default_rng(20261206)
    draws = 400_000
    hits = 0
    for _ in range(draws // 50_000):
        signs = rng.choice((-1.0, 1.0), size=(50_000, len(products)))
        hits += int((np.abs(signs @ products) >= observed - 1e-12).sum())
    oracle = (hits + 1) / (draws + 1)
    ours = macro_paired_test(SUITE, "randomization").p
    assert ours is not None
    # Both are Monte Carlo estimates of one p: within four standard errors of each other.
    spread = math.sqrt(oracle * (1 - oracle) * (1 / draws + 1 / 100_000))
    assert abs(ours - oracle) <= 4 * spread


@pytest.mark.parametrize("seed", range(6))
def test_weighted_randomization_exact_equals_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 13))
    deltas = [float(x) for x in np.round(rng.normal(0.05, 0.3, size=n), 2)]
    weights = [float(x) for x in rng.uniform(0.2, 3.0, size=n)]
    products = [w * d for w, d in zip(weights, deltas, strict=True)]
    observed = abs(math.fsum(products))
    scale = math.fsum(abs(p) for p in products)
    hits = sum(
        1
        for signs in itertools.product((1.0, -1.0), repeat=n)
        if abs(math.fsum(s * p for s, p in zip(signs, products, strict=True)))
        >= observed - 1e-9 * scale
    )
    result = weighted_randomization_test(deltas, weights)
    assert result.p == hits / 2**n
    assert result.mean_delta == pytest.approx(math.fsum(products) / math.fsum(weights))


def test_weighted_randomization_monte_carlo_is_seeded_and_close_to_exact() -> None:
    rng = np.random.default_rng(7)
    deltas = [float(x) for x in rng.normal(0.1, 0.4, size=18)]
    weights = [float(x) for x in rng.uniform(0.5, 2.0, size=18)]
    exact = weighted_randomization_test(deltas, weights).p
    drawn = weighted_randomization_test(deltas, weights, exact_limit=0).p
    assert exact is not None and drawn is not None
    assert drawn == weighted_randomization_test(deltas, weights, exact_limit=0).p
    assert abs(drawn - exact) <= 4 * math.sqrt(exact * (1 - exact) / 100_000) + 1e-5


@pytest.mark.parametrize("seed", range(5))
def test_equal_weights_give_the_ordinary_paired_t_test(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    deltas = [float(x) for x in rng.normal(0.03, 0.2, size=int(rng.integers(3, 60)))]
    result = weighted_t_test(deltas, [1.0] * len(deltas))
    plain = paired_t_test(deltas)
    scipy_result = stats.ttest_1samp(deltas, 0.0)
    assert result.df == pytest.approx(len(deltas) - 1, rel=1e-12)
    assert result.t == pytest.approx(plain.t, rel=1e-10)
    assert result.p == pytest.approx(scipy_result.pvalue, rel=1e-9)
    low, high = scipy_result.confidence_interval(0.95)
    assert result.ci95 == pytest.approx((low, high), rel=1e-9, abs=1e-12)
    assert result.effect_size == pytest.approx(effect_size_dz(deltas), rel=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_random_suites_match_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    sizes = [int(rng.integers(1, 40)) for _ in range(int(rng.integers(2, 7)))]
    suite = [[float(x) for x in rng.normal(rng.normal(0, 0.1), 0.25, size=s)] for s in sizes]
    pooled = [delta for member in suite for delta in member]
    weights = macro_weights(sizes)
    mean, standard_error = _hc1_oracle(pooled, weights)
    df = max(1.0, _kish_df(weights))
    result = macro_paired_test(suite)
    assert result.mean_delta == pytest.approx(mean, abs=1e-14)
    assert result.p == pytest.approx(2 * stats.t.sf(abs(mean / standard_error), df), rel=1e-8)


def _member_scores(seed: int, members: int) -> tuple[list[list[float]], list[list[float]]]:
    rng = np.random.default_rng(300 + seed)
    a_side: list[list[float]] = []
    b_side: list[list[float]] = []
    for _ in range(members):
        size = int(rng.integers(1, 25))
        a = rng.uniform(0, 1, size=size)
        a_side.append([float(x) for x in a])
        b_side.append([float(x) for x in np.clip(a + rng.normal(0.05, 0.2, size=size), 0, 1)])
    return a_side, b_side


@pytest.mark.parametrize("seed", range(8))
def test_member_level_t_equals_scipy_ttest_rel_on_member_means(seed: int) -> None:
    a_side, b_side = _member_scores(seed, int(np.random.default_rng(seed).integers(3, 15)))
    deltas = [
        [b - a for a, b in zip(a_member, b_member, strict=True)]
        for a_member, b_member in zip(a_side, b_side, strict=True)
    ]
    a_means = [float(np.mean(member)) for member in a_side]
    b_means = [float(np.mean(member)) for member in b_side]
    want = stats.ttest_rel(b_means, a_means)
    result = member_level_test(deltas, "t")
    assert result.n == len(deltas)
    assert result.p == pytest.approx(want.pvalue, rel=1e-9)
    assert result.statistic == pytest.approx(want.statistic, rel=1e-9)
    assert member_means(deltas) == pytest.approx(
        [b - a for a, b in zip(a_means, b_means, strict=True)], abs=1e-15
    )


def test_member_level_signed_rank_and_randomization_match_scipy() -> None:
    means = [0.12, -0.03, 0.2, 0.07, 0.15, -0.01, 0.09, 0.11]
    suite = [[mean, mean] for mean in means]  # every member's mean is `mean`
    signed_rank = member_level_test(suite, "signed-rank")
    assert signed_rank.p == pytest.approx(stats.wilcoxon(means, method="exact").pvalue, rel=1e-12)
    randomization = member_level_test(suite, "randomization")
    want = stats.permutation_test(
        (np.array(means),),
        np.mean,
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="two-sided",
    ).pvalue
    assert randomization.p == pytest.approx(want, rel=1e-12)


def test_constant_weighted_deltas_decide_by_the_sign_flip_p() -> None:
    result = weighted_t_test([-0.2, -0.2], [0.5, 0.25])
    assert result.t is None
    assert result.p == 0.5
    assert result.ci95 == (result.mean_delta, result.mean_delta)
    assert result.mean_delta == pytest.approx(-0.2, abs=1e-15)
    assert macro_paired_test([[-0.2], [-0.2]]).p == 0.5
    assert macro_paired_test([[0.0, 0.0], [0.0]]).p == 1.0


def test_float32_members_give_the_double_answer() -> None:
    suite32 = [[np.float32(d) for d in member] for member in SUITE]
    suite64 = [[float(d) for d in member] for member in suite32]
    assert macro_paired_test(suite32) == macro_paired_test(suite64)
    assert type(macro_paired_test(suite32).p) is float


def test_fewer_than_two_queries() -> None:
    result = macro_paired_test([[0.3]])
    assert result.n == 1 and result.p is None and result.ci95 is None
    assert weighted_t_test([], []).n == 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: macro_paired_test([[0.1], []]), r"deltas_by_member\[1\] is empty"),
        (lambda: macro_paired_test([]), "at least one member"),
        (lambda: macro_paired_test(SUITE, "bootstrap"), "no macro-weighted form"),
        (lambda: weighted_t_test([0.1, 0.2], [1.0]), "2 deltas but 1 weights"),
        (lambda: weighted_t_test([0.1, 0.2], [1.0, 0.0]), r"weights\[1\]"),
        (lambda: macro_weights([3, 0]), r"member_sizes\[1\]"),
        (lambda: member_level_test([[0.1, math.nan]]), r"deltas_by_member\[0\]\[1\]"),
    ],
)
def test_bad_input_is_refused(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
