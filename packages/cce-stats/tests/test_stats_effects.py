"""`effect_size_dz` and `wins_ties_losses`."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_stats import effect_size_dz, paired_t_test, sample_sd, wins_ties_losses

deltas_strategy = st.lists(
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False),
    min_size=2,
    max_size=40,
)


def test_dz_worked_example() -> None:
    deltas = [0.2, 0.1, 0.0, 0.3, -0.1, 0.1]
    expected = statistics.mean(deltas) / statistics.stdev(deltas)
    assert effect_size_dz(deltas) == pytest.approx(expected, rel=1e-14)
    assert effect_size_dz(deltas) == pytest.approx(1.7320508075688774 / math.sqrt(6), rel=1e-14)


@pytest.mark.parametrize(
    "deltas", [[], [0.4], [0.0, 0.0], [0.1, 0.1, 0.1], [0.6 - 0.4, 0.3 - 0.1, 0.5 - 0.3]]
)
def test_dz_undefined_for_too_few_or_constant_deltas(deltas: list[float]) -> None:
    assert effect_size_dz(deltas) is None


@given(deltas_strategy)
def test_dz_is_t_over_root_n_and_undefined_exactly_when_t_is(deltas: list[float]) -> None:
    dz = effect_size_dz(deltas)
    t = paired_t_test(deltas).t
    if t is None:
        assert dz is None
    elif dz is not None:
        assert dz == pytest.approx(t / math.sqrt(len(deltas)), rel=1e-9)


def test_wins_ties_losses() -> None:
    assert wins_ties_losses([0.1, 0.0, -0.2, 0.3, -0.0]) == (2, 2, 1)
    assert wins_ties_losses([]) == (0, 0, 0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_deltas_raise(bad: float) -> None:
    with pytest.raises(ValueError, match=r"deltas\[1\]"):
        effect_size_dz([0.1, bad, 0.2])
    with pytest.raises(ValueError, match=r"deltas\[1\]"):
        wins_ties_losses([0.1, bad])


def test_sample_sd() -> None:
    deltas = [0.2, 0.1, 0.0, 0.3, -0.1, 0.1]
    assert sample_sd(deltas) == pytest.approx(statistics.stdev(deltas), rel=1e-14)
    assert sample_sd([0.5]) is None
    assert sample_sd([0.1, 0.1]) == 0.0
    with pytest.raises(ValueError, match=r"deltas\[0\]"):
        sample_sd([math.nan, 0.1])
