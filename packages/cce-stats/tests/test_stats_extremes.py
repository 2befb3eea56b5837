"""Deltas far from metric scale, and degrees of freedom below one.

Underflow must never read as significance, overflow must never pass as an answer, and
a p-value must never exceed 1 (docs/statistics.md#non-finite-input,
docs/statistics.md#precision). The oracles are scipy on the same deltas scaled by a
power of two (which changes no statistic) and closed forms.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from cce_stats import (
    PAIRED_TESTS,
    effect_size_dz,
    paired_t_test,
    paired_test,
    sample_sd,
    t_two_sided_critical,
    t_two_sided_p,
)
from cce_stats.bootstrap import bootstrap_means


@pytest.mark.parametrize(
    ("deltas", "unit"),
    [
        ([1e-200, -3e-200], 1e-200),
        ([5e-324, -5e-324], 5e-324),
        ([0.0, 5e-324], 5e-324),
        ([2e-160, 1e-160, 4e-160, -1e-160], 1e-160),
    ],
)
def test_t_test_on_tiny_deltas_is_the_t_test_on_their_scaled_copy(
    deltas: list[float], unit: float
) -> None:
    ours = paired_t_test(deltas)
    scaled = [d / unit for d in deltas]
    theirs = stats.ttest_1samp(scaled, 0.0)
    assert ours.t is not None and ours.p is not None and ours.ci95 is not None
    assert ours.t == pytest.approx(float(theirs.statistic), rel=1e-12, abs=1e-15)
    assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-12)
    assert ours.p > 0.2  # nowhere near "significant"
    if unit < 1e-300:
        return  # subnormal endpoints hold only a few bits; t and p are what matter
    interval = theirs.confidence_interval(0.95)
    assert ours.ci95[0] / unit == pytest.approx(float(interval.low), rel=1e-9)
    assert ours.ci95[1] / unit == pytest.approx(float(interval.high), rel=1e-9)


def test_effect_size_and_sd_of_huge_deltas_are_computed_not_lost() -> None:
    assert effect_size_dz([1e200, -1e200, 3e200]) == pytest.approx(0.5, rel=1e-14)
    big = [1e308, 1.5e308]
    expected_sd = 0.5e308 / math.sqrt(2.0)
    assert sample_sd(big) == pytest.approx(expected_sd, rel=1e-14)
    assert effect_size_dz(big) == pytest.approx(1.25e308 / expected_sd, rel=1e-14)
    assert effect_size_dz([1e-200, -3e-200]) == pytest.approx(-1.0 / math.sqrt(8.0), rel=1e-14)
    assert sample_sd([1e-200, -3e-200]) == pytest.approx(math.sqrt(8.0) * 1e-200, rel=1e-14)


def test_the_sd_beyond_the_float_range_is_refused() -> None:
    with pytest.raises(ValueError, match="float range"):
        sample_sd([-1.7e308, 1.7e308])


@pytest.mark.parametrize("name", ["t", "randomization", "signed-rank", "bootstrap"])
def test_every_test_refuses_deltas_whose_sum_overflows(name: str) -> None:
    with pytest.raises(ValueError, match="too large to sum"):
        paired_test(name).run([1e308, 1.5e308, 1.2e308])


def test_bootstrap_means_refuse_a_sum_that_overflows() -> None:
    with pytest.raises(ValueError, match="too large to sum"):
        bootstrap_means([1e308, 1e308], 10, 1)


def test_every_test_still_answers_for_deltas_near_but_inside_the_range() -> None:
    for test in PAIRED_TESTS.values():
        result = test.run([1e150, -2e150, 3e150])
        assert result.p is not None and 0.0 < result.p <= 1.0
        assert math.isfinite(result.mean_delta)


@pytest.mark.parametrize("df", [1e-300, 0.004, 0.5, 0.999])
def test_degrees_of_freedom_below_one_are_refused(df: float) -> None:
    with pytest.raises(ValueError, match="df must be >= 1"):
        t_two_sided_p(2.0, df)
    with pytest.raises(ValueError, match="df must be >= 1"):
        t_two_sided_critical(0.05, df)


@pytest.mark.parametrize("df", [1.0, 1.001, 1.25, 1.5, 1.99])
def test_near_one_degree_of_freedom_the_precision_holds(df: float) -> None:
    for t in (1e-9, 1e-3, 0.5, 2.0, 30.0, 1e6, 1e100):
        p = t_two_sided_p(t, df)
        expected = (
            float(2.0 * stats.t.sf(t, df))
            if t > 1e-3
            else 1.0 - 2 * float(stats.t.cdf(t, df) - 0.5)
        )
        assert 0.0 < p <= 1.0
        assert p == pytest.approx(expected, rel=1e-9)
    for alpha in (1e-300, 1e-100, 1e-10, 0.05, 0.5):
        quantile = t_two_sided_critical(alpha, df)
        assert math.isfinite(quantile)
        assert t_two_sided_p(quantile, df) == pytest.approx(alpha, rel=1e-9)
