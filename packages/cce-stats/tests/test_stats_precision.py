"""The Student-t tail and quantile against scipy (a test-only dependency) and closed forms.

The public `t_two_sided_p` / `t_two_sided_critical` promise 1e-9 relative precision on
their whole domain and the reference's bits where the reference is that precise; the
t-test keeps the reference's bits everywhere (docs/statistics.md#precision).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from cce_stats import (
    MAX_DF,
    MIN_ALPHA,
    ln_gamma,
    paired_t_test,
    reg_inc_beta,
    seq_sum,
    t_two_sided_critical,
    t_two_sided_p,
)
from cce_stats.distributions import reference_t_two_sided_critical, reference_t_two_sided_p

RELATIVE = 1e-9


def true_tail(t: float, df: float) -> float:
    """Closed forms for df 1 and 2 (scipy loses digits near p = 1 at df = 1), else scipy."""
    if df == 1.0:
        return 2.0 / math.pi * math.atan2(1.0, abs(t))
    if df == 2.0:
        return 1.0 - abs(t) / math.sqrt(2.0 + t * t)
    return float(2.0 * stats.t.sf(abs(t), df))


def test_near_one_no_longer_rounds_to_exactly_one() -> None:
    for df in (1.0, 5.0, 30.0, 1000.0):
        p = t_two_sided_p(1e-8, df)
        assert p < 1.0
        assert abs(p - true_tail(1e-8, df)) <= RELATIVE * true_tail(1e-8, df)
    # The reference path is what lost it: kept for the t-test, and still exactly 1.0 there.
    assert reference_t_two_sided_p(1e-8, 5.0) == 1.0


def test_large_df_holds_the_precision() -> None:
    for df in (1e5, 1e6, MAX_DF):
        for t in (0.5, 1.0, 2.0, 3.0, 5.0):
            assert abs(t_two_sided_p(t, df) - true_tail(t, df)) <= RELATIVE * true_tail(t, df)
    # The reference path misses by more than 1e-9 at df = 1e6.
    reference = reference_t_two_sided_p(1.0, 1e6)
    assert abs(reference - true_tail(1.0, 1e6)) > RELATIVE * true_tail(1.0, 1e6)


def test_random_grid_against_scipy() -> None:
    rng = random.Random(20240601)
    for _ in range(3000):
        df = max(0.5, 10.0 ** rng.uniform(0.0, 7.0))
        if rng.random() < 0.3:
            df = float(round(df))
        t = 10.0 ** rng.uniform(-12.0, 2.5)
        expected = true_tail(t, df)
        if expected < 1e-300:
            continue
        assert abs(t_two_sided_p(t, df) - expected) <= RELATIVE * expected, (t, df)


@given(
    t=st.floats(min_value=-30.0, max_value=30.0),
    df=st.integers(min_value=1, max_value=10_000),
)
def test_reference_bits_kept_where_the_reference_is_precise(t: float, df: int) -> None:
    if t * t >= 1e-8 * df:
        assert t_two_sided_p(t, float(df)) == reference_t_two_sided_p(t, float(df))


def test_critical_at_df_one_follows_the_cauchy_quantile_for_tiny_alpha() -> None:
    for alpha in (1e-10, 1e-100, 4e-155, 1e-200, MIN_ALPHA):
        expected = 1.0 / math.tan(math.pi * alpha / 2.0)
        assert abs(t_two_sided_critical(alpha, 1.0) - expected) <= RELATIVE * expected
    # The reference path was stuck where t * t overflows.
    assert reference_t_two_sided_critical(1e-200, 1.0) < 1.4e154


@pytest.mark.parametrize("df", [1.0, 2.0, 3.0, 7.0, 30.0, 300.0, 1e4, 1e6])
@pytest.mark.parametrize("alpha", [1e-12, 1e-6, 0.001, 0.01, 0.05, 0.2, 0.5, 0.9])
def test_critical_against_scipy_ppf(alpha: float, df: float) -> None:
    expected = float(stats.t.isf(alpha / 2.0, df))
    assert abs(t_two_sided_critical(alpha, df) - expected) <= RELATIVE * expected


def test_critical_keeps_the_reference_table() -> None:
    for df in range(1, 31):
        assert t_two_sided_critical(0.05, float(df)) == reference_t_two_sided_critical(
            0.05, float(df)
        )
    assert t_two_sided_critical(1.0, 4.0) == 0.0


def test_t_test_keeps_the_reference_bits_where_the_reference_rounds() -> None:
    # |t| tiny against sqrt(df): the reference path says exactly 1.0, and so does the test.
    deltas = [0.1, -0.1, 0.1, -0.1 + 1e-12]
    result = paired_t_test(deltas)
    assert result.t is not None and abs(result.t) < 1e-8
    assert result.p == reference_t_two_sided_p(result.t, 3.0) == 1.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_arguments_raise(bad: float) -> None:
    calls: list[Callable[[], float]] = [
        lambda: t_two_sided_p(bad, 5.0),
        lambda: t_two_sided_p(1.0, bad),
        lambda: t_two_sided_critical(bad, 5.0),
        lambda: t_two_sided_critical(0.05, bad),
        lambda: reg_inc_beta(bad, 1.0, 0.5),
        lambda: reg_inc_beta(1.0, bad, 0.5),
        lambda: reg_inc_beta(1.0, 1.0, bad),
        lambda: ln_gamma(bad),
        lambda: seq_sum([1.0, bad]),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="finite"):
            call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: t_two_sided_p(1.0, 0.0), "df must be >= 1"),
        (lambda: t_two_sided_p(1.0, 2e7), "df must be >= 1 and <= 1e"),
        (lambda: t_two_sided_critical(0.0, 3.0), "alpha must be >= 1e-300"),
        (lambda: t_two_sided_critical(1e-301, 1.0), "alpha must be >= 1e-300"),
        (lambda: t_two_sided_critical(1.5, 3.0), "and <= 1"),
        (lambda: reg_inc_beta(0.0, 1.0, 0.5), "a and b must be > 0"),
        (lambda: ln_gamma(0.0), "x must be > 0"),
    ],
)
def test_out_of_domain_arguments_raise(call: Callable[[], float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_paired_t_test_agrees_with_scipy_ttest_rel() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randrange(2, 300)
        a = [rng.random() for _ in range(n)]
        b = [min(1.0, max(0.0, x + rng.gauss(0.02, 0.2))) for x in a]
        deltas = [y - x for x, y in zip(a, b, strict=True)]
        ours = paired_t_test(deltas)
        theirs = stats.ttest_rel(b, a)
        assert ours.t is not None and ours.p is not None and ours.ci95 is not None
        assert ours.t == pytest.approx(float(theirs.statistic), rel=1e-9)
        assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-9, abs=1e-300)
        interval = theirs.confidence_interval(0.95)
        assert ours.ci95[0] == pytest.approx(float(interval.low), rel=1e-9, abs=1e-12)
        assert ours.ci95[1] == pytest.approx(float(interval.high), rel=1e-9, abs=1e-12)
