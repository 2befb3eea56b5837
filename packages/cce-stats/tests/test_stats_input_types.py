"""numpy scalars and other number types in, double-precision Python floats out.

Every public function converts its numbers to Python floats at the boundary
(docs/statistics.md#input-types): float32 deltas must give the answer their values give
as doubles, and nothing returned may be a numpy scalar. numpy is a test-only dependency.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy
import pytest

from cce_stats import (
    PAIRED_TESTS,
    adjust_p_values,
    chi_square_quantile,
    effect_size_dz,
    ln_gamma,
    minimum_detectable_effect,
    paired_t_test,
    paired_test,
    reg_inc_beta,
    required_sample_size,
    sample_sd,
    sd_confidence_interval,
    seq_sum,
    t_two_sided_critical,
    t_two_sided_p,
    wins_ties_losses,
)
from cce_stats.bootstrap import bootstrap_means, percentile

# numpy scalars are what these tests pass where floats are declared: typed as Any.
np: Any = numpy
ISSUE_DELTAS = (0.1, -0.2, 0.3, 0.05, 0.15)


def _as_doubles(values: list[Any]) -> list[float]:
    return [float(value) for value in values]


def test_float32_randomization_p_is_the_double_answer() -> None:
    singles = [np.float32(x) for x in ISSUE_DELTAS]
    result = paired_test("randomization").run(singles)
    assert result.p == 0.375
    assert type(result.p) is float
    assert result.p == paired_test("randomization").run(_as_doubles(singles)).p


@pytest.mark.parametrize("name", list(PAIRED_TESTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_every_paired_test_on_numpy_scalars_equals_the_same_values_as_floats(
    name: str, dtype: Any
) -> None:
    rng = np.random.default_rng(44)
    values = [dtype(x) for x in rng.normal(0.02, 0.2, size=23)]
    test = paired_test(name)
    got = test.run(values)
    want = test.run(_as_doubles(values))
    assert got == want
    for number in (got.mean_delta, got.statistic, got.p, got.decision_p):
        assert number is None or type(number) is float
    if got.ci95 is not None:
        assert all(type(end) is float for end in got.ci95)


def test_numpy_array_is_accepted_like_a_list() -> None:
    array = np.array(ISSUE_DELTAS, dtype=np.float32)
    for test in PAIRED_TESTS.values():
        assert test.run(array) == test.run([float(x) for x in array])


def test_float32_t_test_and_effects_use_doubles() -> None:
    singles = [np.float32(x) for x in ISSUE_DELTAS]
    doubles = _as_doubles(singles)
    assert paired_t_test(singles) == paired_t_test(doubles)
    assert effect_size_dz(singles) == effect_size_dz(doubles)
    assert type(effect_size_dz(singles)) is float
    assert sample_sd(singles) == sample_sd(doubles)
    assert type(sample_sd(singles)) is float
    assert wins_ties_losses(singles) == (4, 0, 1)


def test_resampling_helpers_convert() -> None:
    singles = [np.float32(x) for x in ISSUE_DELTAS]
    means = bootstrap_means(singles, 100, 7)
    assert means == bootstrap_means(_as_doubles(singles), 100, 7)
    assert all(type(value) is float for value in means)
    q = percentile(np.sort(np.array(singles)), np.float32(0.5))
    assert type(q) is float
    assert q == percentile(sorted(_as_doubles(singles)), 0.5)


def test_distribution_functions_take_numpy_scalars() -> None:
    p = t_two_sided_p(np.float32(1.5), np.int64(6))
    assert type(p) is float
    assert p == t_two_sided_p(float(np.float32(1.5)), 6.0)
    critical = t_two_sided_critical(np.float32(0.05), np.float32(6))
    assert critical == t_two_sided_critical(float(np.float32(0.05)), 6.0)
    assert type(critical) is float
    assert type(ln_gamma(np.float32(2.5))) is float
    assert type(reg_inc_beta(np.float32(1), 3, 0.2)) is float
    assert type(chi_square_quantile(np.float64(0.5), 4)) is float
    total = seq_sum([np.float32(0.1)] * 10)
    assert type(total) is float
    assert total == seq_sum([float(np.float32(0.1))] * 10)


def test_sizing_takes_numpy_scalars_and_fractions() -> None:
    sd = np.float32(0.25)
    assert required_sample_size(sd, np.float32(0.05)) == required_sample_size(
        float(sd), float(np.float32(0.05))
    )
    effect = minimum_detectable_effect(sd, np.int64(30))
    assert type(effect) is float
    assert effect == minimum_detectable_effect(float(sd), 30)
    low, high = sd_confidence_interval(Fraction(1, 4), np.int32(11))  # type: ignore[arg-type]
    assert (low, high) == sd_confidence_interval(0.25, 11)
    assert type(low) is float


def test_corrections_return_python_floats() -> None:
    adjusted = adjust_p_values([np.float32(0.01), None, np.float64(0.04)], "holm")
    assert adjusted == adjust_p_values([float(np.float32(0.01)), None, 0.04], "holm")
    assert all(value is None or type(value) is float for value in adjusted)


@pytest.mark.parametrize("bad", ["0.1", b"0.1", 1e400j])
def test_non_numbers_are_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"deltas\[1\]"):
        paired_t_test([0.1, bad])


def test_non_finite_numpy_scalars_are_refused() -> None:
    with pytest.raises(ValueError, match=r"deltas\[1\] is"):
        paired_test("t").run([np.float32(0.1), np.float32("nan")])
    with pytest.raises(ValueError, match="beyond the float range"):
        paired_t_test([0.1, 10**400])
