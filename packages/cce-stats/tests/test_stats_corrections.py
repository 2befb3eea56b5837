"""`adjust_p_values` against statsmodels' `multipletests` (a test-only dependency)."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from cce_stats import CORRECTIONS, adjust_p_values

STATSMODELS_NAME = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}

p_value = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
# Repeated values make ties common, which is where step-up/step-down code goes wrong.
families = st.lists(
    st.one_of(p_value, st.sampled_from([0.0, 0.01, 0.04, 0.05, 0.5, 1.0])), min_size=1, max_size=30
)


def _statsmodels(p_values: list[float], method: str) -> list[float]:
    # multipletests runs a full gc.collect() on every call (about 0.2 s in a large test
    # process); it frees nothing the result depends on, so it is skipped here.
    with mock.patch("gc.collect"):
        _, corrected, _, _ = multipletests(np.array(p_values), alpha=0.05, method=method)
    return [float(value) for value in corrected]


def test_corrections_are_named() -> None:
    assert CORRECTIONS == ("holm", "bonferroni", "bh", "none")


def test_worked_example() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust_p_values(p, "bonferroni") == [0.04, 0.16, 0.12, 0.02]
    assert adjust_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert adjust_p_values(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)
    assert adjust_p_values(p, "none") == p


@pytest.mark.parametrize("method", ["holm", "bonferroni", "bh"])
@given(p_values=families)
def test_equal_to_statsmodels_bit_for_bit(method: str, p_values: list[float]) -> None:
    ours = adjust_p_values(p_values, method)
    assert ours == _statsmodels(p_values, STATSMODELS_NAME[method])


@pytest.mark.parametrize("method", CORRECTIONS)
def test_none_entries_pass_through_and_do_not_count(method: str) -> None:
    with_none = adjust_p_values([None, 0.01, None, 0.04], method)
    without = adjust_p_values([0.01, 0.04], method)
    assert with_none == [None, without[0], None, without[1]]
    assert adjust_p_values([None, None], method) == [None, None]
    assert adjust_p_values([], method) == []


@pytest.mark.parametrize("method", ["holm", "bonferroni", "bh"])
@given(p_values=families)
def test_adjusted_values_are_p_values_no_smaller_than_the_input(
    method: str, p_values: list[float]
) -> None:
    adjusted = adjust_p_values(p_values, method)
    for raw, value in zip(p_values, adjusted, strict=True):
        assert value is not None
        assert raw <= value <= 1.0


def test_unknown_method_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="expected one of: holm, bonferroni, bh, none"):
        adjust_p_values([0.1], "sidak")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -0.1, 1.5])
def test_rejects_values_that_are_not_p_values(bad: float) -> None:
    with pytest.raises(ValueError, match=r"p_values\[1\]"):
        adjust_p_values([0.1, bad], "holm")
