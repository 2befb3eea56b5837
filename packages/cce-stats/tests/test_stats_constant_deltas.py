"""Constant deltas: the t statistic says nothing, so no decision may rest on its p.

The reference's t-test reports p = 0.0 for deltas with no spread and a non-zero mean
(two queries that both lost 0.2 are "significantly worse"), and its report keeps that
byte; `decision_p`, what a gate compares with alpha, is the exact sign-flip p instead
(docs/statistics.md#constant-deltas). The oracle is the randomization test's exact
enumeration of every sign assignment.
"""

from __future__ import annotations

import itertools

import pytest

from cce_stats import paired_t_test, paired_test


def _enumerated_sign_flip_p(deltas: list[float]) -> float:
    """Share of all 2^n sign assignments whose |sum| reaches the observed |sum|."""
    observed = abs(sum(deltas))
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(deltas)):
        total = abs(sum(sign * delta for sign, delta in zip(signs, deltas, strict=True)))
        if total >= observed - 1e-12:
            hits += 1
    return hits / float(2 ** len(deltas))


def test_two_equal_losses_are_not_significant() -> None:
    result = paired_test("t").run([-0.2, -0.2])
    assert result.p == 0.0  # the reference's report byte, unchanged
    assert result.fallback_p == 0.5
    assert result.decision_p == 0.5
    assert paired_test("randomization").run([-0.2, -0.2]).p == 0.5
    assert paired_t_test([-0.2, -0.2]).decision_p == 0.5


@pytest.mark.parametrize("n", range(2, 13))
@pytest.mark.parametrize("value", [-0.2, 0.1, 1.0, -1e-9])
def test_constant_decision_p_is_the_exact_sign_flip_p(n: int, value: float) -> None:
    deltas = [value] * n
    result = paired_test("t").run(deltas)
    assert result.statistic is None
    assert result.p == 0.0
    assert result.decision_p == _enumerated_sign_flip_p(deltas)
    assert result.decision_p == paired_test("randomization").run(deltas).p


def test_bit_distinct_constant_deltas_use_the_same_rule() -> None:
    deltas = [0.6 - 0.4, 0.3 - 0.1, 0.5 - 0.3, 0.7 - 0.5]
    assert len(set(deltas)) > 1
    result = paired_test("t").run(deltas)
    assert result.p == 0.0
    assert result.decision_p == 2.0 / 2**4
    assert result.decision_p == paired_test("randomization").run(deltas).p


def test_all_zero_deltas_decide_nothing() -> None:
    result = paired_test("t").run([0.0, 0.0, 0.0])
    assert result.p == 1.0
    assert result.decision_p == 1.0


@pytest.mark.parametrize("deltas", [[0.1, -0.2, 0.3], [0.2, 0.2, 0.25], [], [0.4]])
def test_other_deltas_decide_by_their_p(deltas: list[float]) -> None:
    for test in ("t", "randomization", "signed-rank", "bootstrap"):
        result = paired_test(test).run(deltas)
        assert result.fallback_p is None
        assert result.decision_p == result.p
    plain = paired_t_test(deltas)
    assert plain.constant_p is None
    assert plain.decision_p == plain.p


def test_no_constant_input_decides_below_alpha_with_fewer_than_six_deltas() -> None:
    # 2^(1 - n) < 0.05 needs n >= 6: below that no constant comparison can fail a gate.
    for n in range(2, 6):
        assert paired_test("t").run([-0.3] * n).decision_p > 0.05  # type: ignore[operator]
    assert paired_test("t").run([-0.3] * 6).decision_p == 1 / 32
