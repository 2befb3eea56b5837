"""The paired-test protocol and registry, and the t-test behind it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_stats import (
    PAIRED_TESTS,
    PairedTest,
    PairedTestResult,
    paired_t_test,
    paired_test,
    paired_test_names,
)

deltas_strategy = st.lists(
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False),
    max_size=40,
)


def test_registry_starts_with_the_t_test_and_names_match_keys() -> None:
    assert paired_test_names()[0] == "t"
    for name, test in PAIRED_TESTS.items():
        assert test.name == name
        assert test.label
        assert test.statistic_name


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        PAIRED_TESTS["x"] = PAIRED_TESTS["t"]  # type: ignore[index]


def test_t_test_labels() -> None:
    test: PairedTest = paired_test("t")
    assert (test.name, test.label, test.statistic_name) == ("t", "paired t-test", "t")


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown paired test 'z'; expected one of: t\b"):
        paired_test("z")


def test_result_is_a_frozen_slotted_value() -> None:
    result = paired_test("t").run([0.2, 0.1])
    assert not hasattr(result, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n = 3  # type: ignore[misc]


def test_t_test_readme_numbers_through_the_protocol() -> None:
    result = paired_test("t").run([0.2, 0.1, 0.0, 0.3, -0.1, 0.1])
    assert result == PairedTestResult(
        test="t",
        n=6,
        mean_delta=0.10000000000000002,
        statistic=1.7320508075688774,
        p=0.14381080871159757,
        ci95=(-0.04841261147785679, 0.24841261147785682),
    )


@pytest.mark.parametrize(
    "deltas",
    [[], [0.3], [0.0, 0.0, 0.0], [0.1, 0.1, 0.1], [0.6 - 0.4, 0.3 - 0.1, 0.5 - 0.3, 0.7 - 0.5]],
)
def test_t_test_edge_rules_are_paired_t_test_s(deltas: list[float]) -> None:
    old = paired_t_test(deltas)
    new = paired_test("t").run(deltas)
    assert (new.n, new.mean_delta, new.statistic, new.p, new.ci95) == (
        old.n,
        old.mean_delta,
        old.t,
        old.p,
        old.ci95,
    )


@given(deltas_strategy)
def test_t_test_through_the_protocol_is_bit_identical(deltas: list[float]) -> None:
    old = paired_t_test(deltas)
    new = paired_test("t").run(deltas)
    assert new.test == "t"
    assert repr((new.n, new.mean_delta, new.statistic, new.p, new.ci95)) == repr(
        (old.n, old.mean_delta, old.t, old.p, old.ci95)
    )


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_every_registered_test_rejects_non_finite_deltas(bad: float) -> None:
    for test in PAIRED_TESTS.values():
        with pytest.raises(ValueError, match=r"deltas\[2\] is"):
            test.run([0.5, -0.3, bad])
