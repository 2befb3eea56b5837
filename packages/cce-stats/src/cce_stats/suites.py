"""Paired tests of a suite's macro mean, and member-level inference.

Why it exists: a suite pools several members (repositories, fixture sets) of very
different sizes, and its headline is the **macro** mean, the mean of the members'
mean deltas. Pooling every query and testing that (the micro mean) tests another
number: with members of 300, 10 and 10 queries the micro mean can be +0.026 and
"significantly better" while the macro mean the table shows is -0.114. This module
owns the tests of the mean that is reported
(docs/statistics.md#query-level-versus-member-level-inference):

- `macro_weights`: each query weighted 1 / (members × its member's queries), so the
  weighted mean of the deltas is the macro mean;
- `weighted_t_test`: the weighted mean, its design-based (sandwich) standard error,
  a t with Kish's effective n - 1 degrees of freedom, its p and 95% interval, and the
  effect size of the tested mean;
- `weighted_randomization_test`: the sign-flip test of the weighted sum, exact over
  every assignment when at most 20 deltas are non-zero, otherwise seeded SplitMix64;
- `macro_paired_test`: either of them over a suite's deltas grouped by member;
- `member_means` and `member_level_test`: the members as the unit, any registered
  paired test over the members' mean deltas, which is what a claim about repositories
  outside the suite rests on.

The query-level tests answer "does B beat A on these members' queries, each member
counting once?"; the member-level test answers "would B beat A on another member
drawn like these?", and with few members it has little power.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cce_stats._checks import constant_sign_flip_p, finite_float, finite_floats, is_constant
from cce_stats.distributions import MIN_DF, t_two_sided_critical, t_two_sided_p
from cce_stats.generator import DEFAULT_SEED
from cce_stats.paired import paired_test
from cce_stats.protocol import PairedTestResult
from cce_stats.randomization import EXACT_LIMIT, MIN_FLIPS, RandomizationTest

__all__ = [
    "MACRO_TESTS",
    "WeightedTTest",
    "macro_effect_size",
    "macro_paired_test",
    "macro_weights",
    "member_level_test",
    "member_means",
    "weighted_randomization_test",
    "weighted_t_test",
]

MACRO_TESTS: tuple[str, ...] = ("t", "randomization")
"""The paired tests that have a weighted form, by their registry names."""

_CONFIDENCE_ALPHA = 0.05


def _fsum_sum(values: Iterable[float]) -> float:
    """The correctly rounded sum; ValueError when it overflows the float range."""
    try:
        total = math.fsum(values)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("deltas are too large to sum in floating point")
    return total


def _fsum_mean(values: Sequence[float]) -> float:
    """The correctly rounded mean: one right answer whatever the order of the values."""
    return _fsum_sum(values) / len(values)


def _grouped(deltas_by_member: Sequence[Sequence[float]]) -> list[list[float]]:
    """Each member's deltas as doubles; ValueError for no member or an empty one."""
    if not deltas_by_member:
        raise ValueError("a suite needs at least one member with deltas")
    members: list[list[float]] = []
    for index, deltas in enumerate(deltas_by_member):
        converted = finite_floats(f"deltas_by_member[{index}]", deltas)
        if not converted:
            raise ValueError(
                f"deltas_by_member[{index}] is empty; a member without paired queries has "
                "no mean, so leave it out of the suite's test"
            )
        members.append(converted)
    return members


def macro_weights(member_sizes: Sequence[int]) -> list[float]:
    """Per-query weights that make the weighted mean the mean of the member means.

    A query of member j (of M members, n_j queries) weighs 1 / (M · n_j); the weights
    are listed member by member, in the order given, and sum to 1. Equal sizes give
    every query 1 / n, the plain mean. ValueError for no member or a size below 1.
    """
    if not member_sizes:
        raise ValueError("a suite needs at least one member")
    for index, size in enumerate(member_sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"member_sizes[{index}] must be an integer >= 1, got {size!r}")
    members = len(member_sizes)
    return [1.0 / (members * size) for size in member_sizes for _ in range(size)]


def member_means(deltas_by_member: Sequence[Sequence[float]]) -> list[float]:
    """Each member's mean delta (correctly rounded, `math.fsum` / n), in member order."""
    return [_fsum_mean(deltas) for deltas in _grouped(deltas_by_member)]


@dataclass(frozen=True, slots=True)
class WeightedTTest:
    """Outcome of a weighted paired t-test of the weighted mean delta.

    `mean_delta` is sum(w·d) / sum(w); `standard_error` the sandwich estimate
    sqrt(n / (n - 1) · sum(w²·(d - mean)²)) / sum(w); `df` is Kish's effective n,
    (sum w)² / sum(w²), minus one (never below 1); `t` = mean / standard error, `p`
    its two-sided Student-t p and `ci95` mean ± t₀.₀₅(df) · standard error.
    `effect_size` is mean / sd with the reliability-weighted sd
    sqrt(sum(w·(d - mean)²) / (sum w - sum(w²) / sum w)), the d_z of the tested mean.

    Constant deltas (the t-test's 16-epsilon rule): t, standard error and effect size
    are None, p is the exact sign-flip p (2^(1 - n), 1.0 for all zeros) and the
    interval collapses onto the mean. Fewer than two deltas: p, interval and effect
    size None.
    """

    n: int
    mean_delta: float
    standard_error: float | None
    df: float | None
    t: float | None
    p: float | None
    ci95: tuple[float, float] | None
    effect_size: float | None


def _checked_weights(deltas: Sequence[float], weights: Sequence[float]) -> list[float]:
    converted = finite_floats("weights", weights)
    if len(converted) != len(deltas):
        raise ValueError(f"{len(deltas)} deltas but {len(converted)} weights; pass one each")
    for index, weight in enumerate(converted):
        if weight <= 0.0:
            raise ValueError(f"weights[{index}] is {weight!r}; every weight must be > 0")
    return converted


def weighted_t_test(
    deltas: Sequence[float], weights: Sequence[float], mean_delta: float | None = None
) -> WeightedTTest:
    """Test "the weighted mean delta is zero" with a weighted paired t (`WeightedTTest`).

    The standard error is the design-based (sandwich, HC1) one: each query's
    residual counts with its own weight, so a member of 10 queries weighted like a
    member of 300 brings its larger per-query uncertainty with it. Equal weights give
    exactly the ordinary paired t-test's t, df, p and interval (up to rounding).
    `mean_delta`, when given, is the weighted mean computed elsewhere (the mean of the
    member means, as a report shows it) and is used as the mean; it must be finite.

    Raises ValueError for a non-finite delta or weight, a weight <= 0, or a count of
    weights that differs from the count of deltas.
    """
    values = finite_floats("deltas", deltas)
    weighting = _checked_weights(values, weights)
    n = len(values)
    if n == 0:
        return WeightedTTest(0, 0.0, None, None, None, None, None, None)
    total_weight = math.fsum(weighting)
    if mean_delta is None:
        mean = _fsum_sum(w * d for w, d in zip(weighting, values, strict=True)) / total_weight
    else:
        mean = finite_float("mean_delta", mean_delta)
    if n < 2:
        return WeightedTTest(n, mean, None, None, None, None, None, None)
    squared_weights = math.fsum(w * w for w in weighting)
    df = max(MIN_DF, total_weight * total_weight / squared_weights - 1.0)
    if is_constant(values):
        p = constant_sign_flip_p(n, all_zero=all(d == 0.0 for d in values))
        return WeightedTTest(n, mean, None, df, None, p, (mean, mean), None)
    residuals = [d - mean for d in values]
    sandwich = _fsum_sum((w * r) ** 2 for w, r in zip(weighting, residuals, strict=True))
    standard_error = math.sqrt(n / (n - 1) * sandwich) / total_weight
    t = mean / standard_error
    p = t_two_sided_p(t, df)
    half_width = t_two_sided_critical(_CONFIDENCE_ALPHA, df) * standard_error
    spread = _fsum_sum(w * r * r for w, r in zip(weighting, residuals, strict=True))
    sd = math.sqrt(spread / (total_weight - squared_weights / total_weight))
    effect_size = mean / sd if sd > 0.0 else None
    return WeightedTTest(
        n, mean, standard_error, df, t, p, (mean - half_width, mean + half_width), effect_size
    )


def weighted_randomization_test(
    deltas: Sequence[float],
    weights: Sequence[float],
    *,
    flips: int = MIN_FLIPS,
    seed: int = DEFAULT_SEED,
    exact_limit: int = EXACT_LIMIT,
) -> PairedTestResult:
    """The sign-flip test of the weighted sum: p for "the weighted mean delta is zero".

    Under the null each query's delta is as likely to have come out with the opposite
    sign, so the observed |sum(w·d)| is ranked among the |sum(±w·d)| of the sign
    assignments. That is the unweighted randomization test (`RandomizationTest`) of the
    products w·d, so its rules carry over unchanged: exact over all 2^m assignments of
    the m non-zero products when m <= `exact_limit` (20), otherwise
    p = (b + 1) / (`flips` + 1) over `flips` assignments drawn from SplitMix64(`seed`)
    (the documented generator and fixed seed, docs/statistics.md#generator). The
    result's `test` is "randomization", `mean_delta` and `statistic` are the weighted
    mean sum(w·d) / sum(w); there is no interval.
    """
    values = finite_floats("deltas", deltas)
    weighting = _checked_weights(values, weights)
    total_weight = math.fsum(weighting) if weighting else 1.0
    # Scaling every product by one positive constant changes no sign-flip p.
    products = [w / total_weight * d for w, d in zip(weighting, values, strict=True)]
    inner = RandomizationTest(flips=flips, seed=seed, exact_limit=exact_limit).run(products)
    mean = _fsum_sum(products)
    return PairedTestResult(inner.test, inner.n, mean, mean, inner.p, None)


def _macro_weighted(
    deltas_by_member: Sequence[Sequence[float]],
) -> tuple[list[float], list[float], float]:
    """The suite's deltas flattened member by member, their macro weights, the macro mean."""
    members = _grouped(deltas_by_member)
    deltas = [delta for member in members for delta in member]
    weights = macro_weights([len(member) for member in members])
    macro_mean = _fsum_mean([_fsum_mean(member) for member in members])
    return deltas, weights, macro_mean


def macro_paired_test(
    deltas_by_member: Sequence[Sequence[float]],
    test: str = "t",
    *,
    flips: int = MIN_FLIPS,
    seed: int = DEFAULT_SEED,
) -> PairedTestResult:
    """Test a suite's macro mean delta: every member counts once, whatever its size.

    `deltas_by_member` holds each member's per-query deltas (B minus A). Each query is
    weighted 1 / (members × its member's queries) (`macro_weights`) and `test` is "t"
    (`weighted_t_test`: `statistic` is t, `ci95` the weighted t interval) or
    "randomization" (`weighted_randomization_test`, no interval). `mean_delta` is the
    mean of the member means, the number the suite's table reports, and `n` the
    number of queries. ValueError for another test name (the signed-rank test and the
    bootstrap have no weighted form here: use `member_level_test` for them), an empty
    member, or a non-finite delta.
    """
    if test not in MACRO_TESTS:
        raise ValueError(
            f"no macro-weighted form of the {test!r} test; expected one of: "
            f"{', '.join(MACRO_TESTS)} (or test the member means with member_level_test)"
        )
    deltas, weights, macro_mean = _macro_weighted(deltas_by_member)
    if test == "randomization":
        result = weighted_randomization_test(deltas, weights, flips=flips, seed=seed)
        return PairedTestResult(result.test, result.n, macro_mean, macro_mean, result.p, None)
    weighted = weighted_t_test(deltas, weights, mean_delta=macro_mean)
    return PairedTestResult("t", weighted.n, macro_mean, weighted.t, weighted.p, weighted.ci95)


def macro_effect_size(deltas_by_member: Sequence[Sequence[float]]) -> float | None:
    """d_z of the macro mean: the macro mean over the macro-weighted sd of the deltas.

    The sd is the reliability-weighted one (`WeightedTTest.effect_size`), so between-
    member spread enters as it does in the macro mean, not as pooling every query
    would weigh it. None when undefined (fewer than two deltas, constant deltas).
    """
    deltas, weights, macro_mean = _macro_weighted(deltas_by_member)
    return weighted_t_test(deltas, weights, mean_delta=macro_mean).effect_size


def member_level_test(
    deltas_by_member: Sequence[Sequence[float]], test: str = "t"
) -> PairedTestResult:
    """Run the registered paired test `test` with the members as the unit.

    Each member contributes one number, its mean delta (`member_means`), and the test
    runs over those, so `n` is the number of members. This is the test behind a claim
    about members outside the suite (a new repository drawn like these); the t-test's
    p equals scipy's `ttest_rel` on the members' mean scores. ValueError for an unknown
    test name, an empty member or a non-finite delta.
    """
    return paired_test(test).run(member_means(deltas_by_member))
