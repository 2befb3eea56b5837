"""Anchors and properties for `paired_t_test` (docs/statistics.md#paired-t-test)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_stats import PairedTTest, paired_t_test


def test_result_is_a_frozen_slotted_value() -> None:
    result = paired_t_test([0.3])
    assert result == PairedTTest(n=1, mean_delta=0.3, t=None, p=None, ci95=None)
    assert not hasattr(result, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n = 2  # type: ignore[misc]


class TestTooFewDeltas:
    def test_empty(self) -> None:
        assert paired_t_test([]) == PairedTTest(n=0, mean_delta=0.0, t=None, p=None, ci95=None)

    def test_single_delta(self) -> None:
        assert paired_t_test([0.3]) == PairedTTest(n=1, mean_delta=0.3, t=None, p=None, ci95=None)


class TestConstantDeltas:
    def test_all_zero_means_no_difference(self) -> None:
        result = paired_t_test([0.0, 0.0, 0.0, 0.0])
        assert result == PairedTTest(n=4, mean_delta=0.0, t=None, p=1.0, ci95=(0.0, 0.0))

    def test_equal_nonzero_is_certain(self) -> None:
        assert paired_t_test([0.1, 0.1, 0.1]) == PairedTTest(
            n=3, mean_delta=0.1, t=None, p=0.0, ci95=(0.1, 0.1)
        )
        assert paired_t_test([1.0, 1.0]) == PairedTTest(
            n=2, mean_delta=1.0, t=None, p=0.0, ci95=(1.0, 1.0)
        )

    def test_near_constant_within_tolerance_issue_108(self) -> None:
        deltas = [0.6 - 0.4, 0.3 - 0.1, 0.5 - 0.3, 0.7 - 0.5]
        assert len(set(deltas)) > 1, "the case only matters if the deltas differ in bits"
        result = paired_t_test(deltas)
        assert result.t is None
        assert result.p == 0.0
        # mean_delta is the first delta, not the mean of the four.
        assert result.mean_delta == 0.19999999999999996
        assert result.ci95 == (0.19999999999999996, 0.19999999999999996)
        assert abs(result.mean_delta - 0.2) < 1e-12

    def test_spread_just_past_tolerance_is_tested(self) -> None:
        # 16 ulps of 1.0 is the tolerance; 32 ulps of spread is a real (if tiny) variance.
        result = paired_t_test([1.0, 1.0 + 32 * 2.220446049250313e-16])
        assert result.t is not None
        assert result.p is not None and 0.0 < result.p < 1.0


class TestAnchors:
    def test_six_deltas(self) -> None:
        result = paired_t_test([0.2, 0.1, 0.0, 0.3, -0.1, 0.1])
        assert result == PairedTTest(
            n=6,
            mean_delta=0.10000000000000002,
            t=1.7320508075688774,
            p=0.14381080871159757,
            ci95=(-0.04841261147785679, 0.24841261147785682),
        )
        assert result.t is not None and abs(result.t - math.sqrt(3.0)) < 1e-9
        assert result.p is not None and 0.10 < result.p < 0.20

    def test_compare_stats_hand_case_mrr_deltas(self) -> None:
        # The reference's compare_stats case: B's MRRs minus A's 0.5, as float subtractions.
        deltas = [b - 0.5 for b in (0.7, 0.6, 0.5, 0.8, 0.4, 0.6)]
        assert deltas == [
            0.19999999999999996,
            0.09999999999999998,
            0.0,
            0.30000000000000004,
            -0.09999999999999998,
            0.09999999999999998,
        ]
        result = paired_t_test(deltas)
        assert result.n == 6
        assert result.t == 1.732050807568877
        assert result.p == 0.14381080871159768
        assert result.ci95 == (-0.04841261147785682, 0.24841261147785682)

    def test_sign_symmetry_anchor(self) -> None:
        forward = paired_t_test([0.2, 0.1, 0.3, 0.05])
        backward = paired_t_test([-0.2, -0.1, -0.3, -0.05])
        assert forward.t == 2.9314195092110333
        assert backward.t == -2.9314195092110333
        assert forward.p == backward.p == 0.060930743070577525
        assert forward.ci95 == (-0.013915392946532074, 0.33891539294653217)
        assert backward.ci95 == (-0.33891539294653217, 0.013915392946532074)

    def test_two_deltas(self) -> None:
        assert paired_t_test([0.5, 0.0]) == PairedTTest(
            n=2,
            mean_delta=0.25,
            t=1.0,
            p=0.5000000000000434,
            ci95=(-2.9265511840434018, 3.4265511840434018),
        )

    def test_symmetric_deltas_give_zero_t(self) -> None:
        assert paired_t_test([-0.5, 0.5]) == PairedTTest(
            n=2, mean_delta=0.0, t=0.0, p=1.0, ci95=(-6.3531023680868035, 6.3531023680868035)
        )


class TestDocumentedExample:
    """The documented `--compare bm25,hybrid` on code.jsonl — one MRR delta of 1/2 - 1/3 among 7."""

    def test_mrr_row(self) -> None:
        mrr_delta = 1.0 / 2.0 - 1.0 / 3.0
        result = paired_t_test([mrr_delta, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        assert result == PairedTTest(
            n=7,
            mean_delta=0.02380952380952381,
            t=1.0,
            p=0.3559176837496092,
            ci95=(-0.03445028217011753, 0.08206932978916515),
        )

    def test_unchanged_metrics_row(self) -> None:
        assert paired_t_test([0.0] * 7) == PairedTTest(
            n=7, mean_delta=0.0, t=None, p=1.0, ci95=(0.0, 0.0)
        )


unit_scores = st.floats(min_value=0.0, max_value=1.0)
paired_scores = st.lists(st.tuples(unit_scores, unit_scores), max_size=40)


def _same(x: float | None, y: float | None) -> bool:
    if x is None or y is None:
        return x is y
    return x == y or (math.isnan(x) and math.isnan(y))


@given(paired_scores)
def test_swapping_a_and_b_negates_mean_t_and_ci_and_keeps_p(
    pairs: list[tuple[float, float]],
) -> None:
    a_to_b = paired_t_test([b - a for a, b in pairs])
    b_to_a = paired_t_test([a - b for a, b in pairs])
    assert b_to_a.n == a_to_b.n
    assert b_to_a.mean_delta == -a_to_b.mean_delta
    # Subnormal deltas can underflow the variance to zero, where t and p are NaN in both
    # directions (see TestUnderflowingVariance); NaN compares equal to NaN here.
    assert _same(b_to_a.t, None if a_to_b.t is None else -a_to_b.t)
    assert _same(b_to_a.p, a_to_b.p)
    if a_to_b.ci95 is None:
        assert b_to_a.ci95 is None
    else:
        low, high = a_to_b.ci95
        assert b_to_a.ci95 == (-high, -low)


# Magnitudes below 1e-100 are left to TestUnderflowingVariance: their squared
# deviations can underflow to a zero variance, where p is legitimately NaN.
well_scaled_deltas = st.floats(min_value=-1.0, max_value=1.0).filter(
    lambda x: x == 0.0 or abs(x) >= 1e-100
)


@given(st.lists(well_scaled_deltas, min_size=2, max_size=40))
def test_interval_brackets_the_mean_and_p_is_a_probability(deltas: list[float]) -> None:
    result = paired_t_test(deltas)
    assert result.p is not None and 0.0 <= result.p <= 1.0
    assert result.ci95 is not None
    low, high = result.ci95
    assert low <= result.mean_delta <= high
    if result.t is None:
        assert low == high


class TestUnderflowingVariance:
    """Distinct tiny deltas whose squared deviations would underflow to a zero variance.

    Unscaled, the reference reports t = ±inf (p = 0.0, "significant") or NaN; scaled by
    a power of two first, t is that of any two deltas 0 and x: mean x/2, se x/2, t = ±1.
    """

    def test_nonzero_mean_gives_t_one_not_infinity(self) -> None:
        result = paired_t_test([0.0, 2.2250738585072014e-308])
        assert result.t == 1.0
        assert result.p == pytest.approx(0.5, rel=1e-12)
        assert result.ci95 is not None and result.ci95[0] < 0.0 < result.ci95[1]

    def test_negative_mean_gives_t_minus_one(self) -> None:
        result = paired_t_test([0.0, -2.2250738585072014e-308])
        assert result.t == -1.0
        assert result.p == pytest.approx(0.5, rel=1e-12)

    def test_zero_mean_gives_t_zero_and_p_one(self) -> None:
        result = paired_t_test([-1e-200, 1e-200])
        assert (result.mean_delta, result.t, result.p) == (0.0, 0.0, 1.0)
        assert result.ci95 is not None and result.ci95[0] == -result.ci95[1] < 0.0


@pytest.mark.parametrize(
    "deltas", [[0.5, -0.3, math.inf], [0.0, 0.0, math.nan], [-math.inf, 0.1], [math.nan]]
)
def test_non_finite_deltas_are_refused_not_significant(deltas: list[float]) -> None:
    with pytest.raises(ValueError, match="must be a finite number"):
        paired_t_test(deltas)


def test_deltas_whose_sums_overflow_are_refused() -> None:
    with pytest.raises(ValueError, match="too large to sum"):
        paired_t_test([1e308, -1e308, 1e308])
