"""Anchors for the special functions (docs/statistics.md#paired-t-test).

Bit-exact values are compared with `==` (the reference prints their reprs); the
reference's own unit tests use tolerances, which are ported as written.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_stats import ln_gamma, reg_inc_beta, seq_sum, t_two_sided_critical, t_two_sided_p

# The reference's repr of t₀.₀₅ for df 1..30, identical to the Rust reference's output.
T_CRITICAL_05 = {
    1: 12.706204736173607,
    2: 4.302652729749353,
    3: 3.1824463052836593,
    4: 2.7764451051977517,
    5: 2.570581835636279,
    6: 2.446911851144936,
    7: 2.3646242515927547,
    8: 2.30600413520414,
    9: 2.2621571627981742,
    10: 2.228138851986248,
    11: 2.2009851600916104,
    12: 2.1788128296672076,
    13: 2.1603686564627713,
    14: 2.1447866879177937,
    15: 2.1314495455597724,
    16: 2.1199052992212595,
    17: 2.1098155778333396,
    18: 2.1009220402410707,
    19: 2.093024054408355,
    20: 2.0859634472659296,
    21: 2.079613844727759,
    22: 2.073873067904125,
    23: 2.0686576104191623,
    24: 2.0638985616281538,
    25: 2.059538552753443,
    26: 2.055529438643031,
    27: 2.051830516480467,
    28: 2.0484071417954386,
    29: 2.0452296421329095,
    30: 2.0422724563014567,
}


class TestSeqSum:
    def test_empty_is_positive_zero(self) -> None:
        total = seq_sum([])
        assert total == 0.0
        assert math.copysign(1.0, total) == 1.0

    def test_adds_strictly_left_to_right_without_compensation(self) -> None:
        # Left to right: (1e16 + 1.0) rounds back to 1e16, then -1e16 leaves 0.0.
        # A compensated or exact sum (sum() on 3.12+, math.fsum) would give 1.0.
        assert seq_sum([1e16, 1.0, -1e16]) == 0.0
        assert seq_sum([0.1, 0.2, 0.3]) == (0.1 + 0.2) + 0.3 == 0.6000000000000001

    def test_accepts_any_iterable(self) -> None:
        assert seq_sum(x / 2 for x in (1.0, 2.0, 3.0)) == 3.0


class TestLnGamma:
    def test_two_is_not_exactly_zero(self) -> None:
        assert ln_gamma(2.0) == -4.440892098500626e-16

    @pytest.mark.parametrize(
        ("x", "expected"),
        [
            (1.0, 0.0),
            (2.0, 0.0),
            (5.0, math.log(24.0)),
            (0.5, math.log(math.sqrt(math.pi))),
            (2.5, math.log(0.75 * math.sqrt(math.pi))),
        ],
    )
    def test_known_values(self, x: float, expected: float) -> None:
        assert abs(ln_gamma(x) - expected) < 1e-10


class TestRegIncBeta:
    def test_endpoints_are_exact(self) -> None:
        assert reg_inc_beta(2.0, 3.0, 0.0) == 0.0
        assert reg_inc_beta(2.0, 3.0, 1.0) == 1.0
        assert reg_inc_beta(2.0, 3.0, -0.5) == 0.0
        assert reg_inc_beta(2.0, 3.0, 1.5) == 1.0

    def test_bit_exact_values(self) -> None:
        assert reg_inc_beta(1.0, 1.0, 0.3) == 0.2999999999999998
        assert reg_inc_beta(1.0, 3.0, 0.2) == 0.4880000000000003

    def test_reference_tolerances(self) -> None:
        assert abs(reg_inc_beta(1.0, 1.0, 0.3) - 0.3) < 1e-12
        assert abs(reg_inc_beta(1.0, 3.0, 0.2) - (1.0 - 0.8**3)) < 1e-12
        reflected = reg_inc_beta(2.5, 0.5, 0.4) + reg_inc_beta(0.5, 2.5, 0.6)
        assert abs(reflected - 1.0) < 1e-12

    @given(
        a=st.floats(min_value=0.1, max_value=50.0),
        b=st.floats(min_value=0.1, max_value=50.0),
        x=st.floats(min_value=0.001, max_value=0.999),
    )
    def test_reflection_symmetry(self, a: float, b: float, x: float) -> None:
        assert abs(reg_inc_beta(a, b, x) + reg_inc_beta(b, a, 1.0 - x) - 1.0) < 1e-9


class TestTwoSidedP:
    def test_zero_t_is_exactly_one(self) -> None:
        assert t_two_sided_p(0.0, 5.0) == 1.0

    @pytest.mark.parametrize("df", [1.0, 2.0, 5.0, 30.0])
    def test_symmetric_in_t(self, df: float) -> None:
        assert t_two_sided_p(1.7, df) == t_two_sided_p(-1.7, df)

    @pytest.mark.parametrize(
        ("t", "df", "expected"),
        [
            (1.0, 6.0, 0.3559176837496092),
            (math.sqrt(3.0), 5.0, 0.14381080871159757),
            (1.0, 1.0, 0.5000000000000434),
            (math.sqrt(3.0), 1.0, 0.3333333333333048),
            (math.sqrt(2.0), 2.0, 0.29289321881343855),
        ],
    )
    def test_bit_exact_values(self, t: float, df: float, expected: float) -> None:
        assert t_two_sided_p(t, df) == expected

    @pytest.mark.parametrize(
        ("t", "df", "expected"),
        [
            (1.0, 1.0, 0.5),
            (math.sqrt(3.0), 1.0, 1.0 / 3.0),
            (math.sqrt(2.0), 2.0, 1.0 - math.sqrt(2.0) / 2.0),
        ],
    )
    def test_closed_forms(self, t: float, df: float, expected: float) -> None:
        assert abs(t_two_sided_p(t, df) - expected) < 1e-10

    @pytest.mark.parametrize(
        ("df", "t"), [(1.0, 12.7062), (2.0, 4.30265), (5.0, 2.570582), (10.0, 2.228139)]
    )
    def test_printed_table_points_are_five_percent(self, df: float, t: float) -> None:
        assert abs(t_two_sided_p(t, df) - 0.05) < 1e-4

    @given(
        t=st.floats(min_value=-1e6, max_value=1e6),
        df=st.integers(min_value=1, max_value=1000),
    )
    def test_is_a_probability_symmetric_in_t(self, t: float, df: int) -> None:
        p = t_two_sided_p(t, float(df))
        assert 0.0 <= p <= 1.0
        assert p == t_two_sided_p(-t, float(df))


class TestTwoSidedCritical:
    @pytest.mark.parametrize(("df", "expected"), sorted(T_CRITICAL_05.items()))
    def test_quantile_table_is_bit_exact(self, df: int, expected: float) -> None:
        assert t_two_sided_critical(0.05, float(df)) == expected

    @pytest.mark.parametrize(
        ("df", "expected"),
        [(1, 12.706205), (2, 4.302653), (5, 2.570582), (10, 2.228139), (30, 2.042272)],
    )
    def test_reference_tolerances(self, df: int, expected: float) -> None:
        assert abs(t_two_sided_critical(0.05, float(df)) - expected) < 1e-4

    @pytest.mark.parametrize("df", [1.0, 3.0, 12.0, 200.0])
    @pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2, 0.4, 0.9])
    def test_inverts_the_tail(self, alpha: float, df: float) -> None:
        assert abs(t_two_sided_p(t_two_sided_critical(alpha, df), df) - alpha) < 1e-12

    def test_shrinks_toward_the_normal_quantile(self) -> None:
        values = [t_two_sided_critical(0.05, float(df)) for df in (1, 2, 5, 30, 1000)]
        assert values == sorted(values, reverse=True)
        assert abs(t_two_sided_critical(0.05, 1e6) - 1.959964) < 1e-5
