"""Sizing math: minimum detectable effect, required sample size and the sd's interval."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cce_stats import (
    MAX_SAMPLE_SIZE,
    adjust_p_values,
    chi_square_quantile,
    effective_alpha,
    minimum_detectable_effect,
    required_sample_size,
    sd_confidence_interval,
    t_two_sided_critical,
)


def linear_scan_sample_size(sd: float, delta: float, alpha: float, power: float) -> int:
    """The definition taken literally: the first n from 2 up that satisfies the bound."""
    n = 2
    while True:
        df = float(n - 1)
        tail = 1.0 - power
        t_beta = (
            t_two_sided_critical(2.0 * tail, df)
            if tail < 0.5
            else -t_two_sided_critical(2.0 * (1.0 - tail), df)
        )
        if n >= ((t_two_sided_critical(alpha, df) + t_beta) * sd / delta) ** 2:
            return n
        n += 1


class TestMinimumDetectableEffect:
    def test_six_deltas_detect_about_1_43_sd(self) -> None:
        t_alpha = t_two_sided_critical(0.05, 5.0)
        # beta = 1 - power; the one-sided beta quantile is the two-sided one at 2 * beta.
        t_beta = t_two_sided_critical(2.0 * (1.0 - 0.8), 5.0)
        assert t_alpha == 2.570581835636279
        assert abs(t_beta - 0.920) < 5e-4
        effect = minimum_detectable_effect(1.0, 6)
        assert effect == (t_alpha + t_beta) * 1.0 / math.sqrt(6.0)
        assert abs(effect - 1.43) < 0.01

    def test_scales_linearly_with_sd(self) -> None:
        assert minimum_detectable_effect(0.25, 6) == minimum_detectable_effect(1.0, 6) / 4.0

    def test_shrinks_with_more_deltas_and_grows_with_power(self) -> None:
        by_n = [minimum_detectable_effect(1.0, n) for n in (2, 5, 10, 50, 500)]
        assert by_n == sorted(by_n, reverse=True)
        by_power = [minimum_detectable_effect(1.0, 20, power=p) for p in (0.3, 0.5, 0.8, 0.95)]
        assert by_power == sorted(by_power)

    def test_half_power_leaves_only_the_alpha_quantile(self) -> None:
        expected = t_two_sided_critical(0.05, 9.0) / math.sqrt(10.0)
        assert minimum_detectable_effect(1.0, 10, power=0.5) == expected

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"sd": 0.0, "n": 6}, "sd must be a finite number > 0, got 0.0"),
            ({"sd": -1.0, "n": 6}, "sd must be a finite number > 0, got -1.0"),
            ({"sd": math.nan, "n": 6}, "sd must be a finite number > 0, got nan"),
            ({"sd": math.inf, "n": 6}, "sd must be a finite number > 0, got inf"),
            ({"sd": 1.0, "n": 1}, "n must be an integer >= 2, got 1"),
            ({"sd": 1.0, "n": True}, "n must be an integer >= 2, got True"),
            ({"sd": 1.0, "n": 6, "alpha": 0.0}, "alpha must be strictly between 0 and 1, got 0.0"),
            ({"sd": 1.0, "n": 6, "alpha": 1.0}, "alpha must be strictly between 0 and 1, got 1.0"),
            ({"sd": 1.0, "n": 6, "power": 1.0}, "power must be strictly between 0 and 1, got 1.0"),
            (
                {"sd": 1.0, "n": 6, "power": -0.1},
                "power must be strictly between 0 and 1, got -0.1",
            ),
        ],
    )
    def test_rejects_invalid_arguments(self, kwargs: dict[str, float], message: str) -> None:
        with pytest.raises(ValueError) as excinfo:
            minimum_detectable_effect(**kwargs)  # type: ignore[arg-type]
        assert str(excinfo.value) == message


class TestRequiredSampleSize:
    @pytest.mark.parametrize(
        ("effect_in_sd", "expected"), [(1.0, 10), (0.8, 15), (0.5, 34), (0.3, 90), (0.2, 199)]
    )
    def test_conventional_effect_sizes(self, effect_in_sd: float, expected: int) -> None:
        # Two-sided alpha 0.05, power 0.8: the familiar paired-t planning numbers.
        assert required_sample_size(1.0, effect_in_sd) == expected

    def test_is_the_smallest_n_meeting_the_bound(self) -> None:
        n = required_sample_size(1.0, 0.5)
        assert minimum_detectable_effect(1.0, n) <= 0.5 < minimum_detectable_effect(1.0, n - 1)

    def test_huge_effect_needs_only_the_minimum(self) -> None:
        assert required_sample_size(1.0, 100.0) == 2

    def test_unreachable_effect_raises_instead_of_looping(self) -> None:
        with pytest.raises(ValueError, match=f"exceeds {MAX_SAMPLE_SIZE}") as excinfo:
            required_sample_size(1.0, 1e-6)
        assert "too small relative to sd" in str(excinfo.value)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"sd": 0.0, "delta": 0.5}, "sd must be a finite number > 0, got 0.0"),
            ({"sd": 1.0, "delta": 0.0}, "delta must be a finite number > 0, got 0.0"),
            ({"sd": 1.0, "delta": -0.5}, "delta must be a finite number > 0, got -0.5"),
            (
                {"sd": 1.0, "delta": 0.5, "alpha": 1.5},
                "alpha must be strictly between 0 and 1, got 1.5",
            ),
            (
                {"sd": 1.0, "delta": 0.5, "power": 0.0},
                "power must be strictly between 0 and 1, got 0.0",
            ),
        ],
    )
    def test_rejects_invalid_arguments(self, kwargs: dict[str, float], message: str) -> None:
        with pytest.raises(ValueError) as excinfo:
            required_sample_size(**kwargs)
        assert str(excinfo.value) == message

    @settings(max_examples=25, deadline=None)
    @given(
        effect_in_sd=st.floats(min_value=0.35, max_value=3.0),
        alpha=st.sampled_from([0.01, 0.05, 0.1]),
        power=st.sampled_from([0.3, 0.5, 0.8, 0.9]),
    )
    def test_matches_a_one_by_one_scan(
        self, effect_in_sd: float, alpha: float, power: float
    ) -> None:
        expected = linear_scan_sample_size(1.0, effect_in_sd, alpha, power)
        assert required_sample_size(1.0, effect_in_sd, alpha, power) == expected


class TestSdConfidenceInterval:
    """The chi-square quantile and the interval on a pilot's sd, against scipy."""

    def test_chi_square_quantile_matches_scipy_ppf(self) -> None:
        rng = random.Random(1007)
        for _ in range(300):
            df = rng.choice([1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0, 1000.0, rng.uniform(1, 300)])
            q = rng.choice([1e-12, 1e-6, 0.001, 0.025, 0.5, 0.975, 0.999, 1 - 1e-9, rng.random()])
            expected = float(stats.chi2.ppf(q, df))
            assert chi_square_quantile(q, df) == pytest.approx(expected, rel=1e-9), (q, df)

    def test_interval_matches_the_chi_square_formula(self) -> None:
        for sd, n in ((0.28714, 11), (0.1, 2), (1.0, 30), (0.05, 400)):
            df = n - 1
            low, high = sd_confidence_interval(sd, n)
            assert low == pytest.approx(sd * math.sqrt(df / stats.chi2.ppf(0.975, df)), rel=1e-9)
            assert high == pytest.approx(sd * math.sqrt(df / stats.chi2.ppf(0.025, df)), rel=1e-9)
            assert low < sd < high

    def test_an_eleven_query_pilot_could_need_half_or_three_times_the_queries(self) -> None:
        low, high = sd_confidence_interval(0.28714, 11)
        assert (round(low, 2), round(high, 2)) == (0.20, 0.50)
        assert required_sample_size(0.28714, 0.05) == 261
        assert 120 <= required_sample_size(low, 0.05) <= 135
        assert 780 <= required_sample_size(high, 0.05) <= 820

    def test_bad_arguments(self) -> None:
        with pytest.raises(ValueError, match="q must be strictly between"):
            chi_square_quantile(1.0, 3.0)
        with pytest.raises(ValueError, match="df must be >= 1"):
            chi_square_quantile(0.5, 0.5)
        with pytest.raises(ValueError, match="n must be an integer >= 2"):
            sd_confidence_interval(0.2, 1)
        with pytest.raises(ValueError, match="confidence"):
            sd_confidence_interval(0.2, 5, 1.0)


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh"])
@pytest.mark.parametrize("family_size", [1, 2, 4, 7])
def test_effective_alpha_is_where_one_real_change_starts_to_fail_the_gate(
    correction: str, family_size: int
) -> None:
    alpha = 0.05
    level = effective_alpha(alpha, family_size, correction)
    assert level == alpha / family_size
    nulls = [0.9] * (family_size - 1)
    # The corrections' own arithmetic (checked against statsmodels elsewhere) is the oracle.
    at = adjust_p_values([level, *nulls], correction)[0]
    above = adjust_p_values([level * 1.001, *nulls], correction)[0]
    assert at is not None and at <= alpha * (1 + 1e-12)  # BH divides by 1/m: rounding
    assert above is not None and above > alpha


def test_effective_alpha_without_correction_and_errors() -> None:
    assert effective_alpha(0.05, 5, "none") == 0.05
    assert required_sample_size(0.25, 0.05, effective_alpha(0.05, 4, "holm")) > (
        required_sample_size(0.25, 0.05, 0.05)
    )
    with pytest.raises(ValueError, match="family_size"):
        effective_alpha(0.05, 0, "holm")
    with pytest.raises(ValueError, match="unknown correction"):
        effective_alpha(0.05, 3, "sidak")
    with pytest.raises(ValueError, match="alpha"):
        effective_alpha(1.5, 3, "holm")
