"""Sample-size planning for paired comparisons: detectable effect and required n.

Why it exists: the reference's docs explain how many queries a fixture needs
before a paired t-test can tell two backends apart, but the reference never
computes it. This module owns that arithmetic, built on the same t quantiles the
test itself uses (`t_two_sided_critical`), so a plan and the later test agree:

    minimum_detectable_effect = (t_{alpha/2, n-1} + t_{beta, n-1}) * sd / sqrt(n)
    required_sample_size      = smallest n >= 2 with
                                n >= ((t_{alpha/2, n-1} + t_{beta, n-1}) * sd / delta)^2

where beta = 1 - power and t_{beta, df} is the one-sided upper quantile.

A pilot's sd is itself an estimate, and from a dozen queries a rough one, so the
module also owns `sd_confidence_interval`, the chi-square interval on the sd of
normal deltas: sizing at its two ends shows how far the plan could be off.

A gate that tests several metrics corrects their p-values for multiple testing, so a
single metric must reach a smaller p than alpha to fail it; `effective_alpha` gives
the level one metric is effectively tested at, the alpha a plan for that gate must
size at.
"""

from __future__ import annotations

import math
import operator

from cce_stats._checks import finite_float
from cce_stats.corrections import CORRECTIONS
from cce_stats.distributions import chi_square_quantile, t_two_sided_critical

__all__ = [
    "MAX_SAMPLE_SIZE",
    "effective_alpha",
    "minimum_detectable_effect",
    "required_sample_size",
    "sd_confidence_interval",
]

# Beyond ~1e8 degrees of freedom the Lanczos log-gamma differences inside the t tail
# lose digits, and no retrieval fixture needs ten million queries anyway.
MAX_SAMPLE_SIZE = 10_000_000
_MIN_SAMPLE_SIZE = 2


def _open_unit_interval(name: str, value: float) -> float:
    converted = _as_float(name, value)
    if not 0.0 < converted < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return converted


def _positive_finite(name: str, value: float) -> float:
    converted = _as_float(name, value)
    if not (converted > 0.0 and math.isfinite(converted)):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return converted


def _as_float(name: str, value: float) -> float:
    """`value` as a Python float (NaN and infinities pass, for the caller's range check)."""
    try:
        return finite_float(name, value)
    except ValueError:
        return float(value)


def _whole_number(name: str, value: int, minimum: int) -> int:
    """`value` as a Python int >= `minimum` (numpy integers included, bools not);
    ValueError otherwise."""
    try:
        converted = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        converted = None
    if converted is None or converted < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return converted


def _sample_size(n: int) -> int:
    """`n` as a Python int >= 2 (numpy integers included); ValueError otherwise."""
    return _whole_number("n", n, _MIN_SAMPLE_SIZE)


def _one_sided_upper_quantile(tail: float, df: float) -> float:
    """Return q with P(T > q) = `tail`; negative when `tail` exceeds one half.

    A one-sided tail of `tail` is a two-sided tail of 2 * `tail`, so the two-sided
    critical value serves directly; past one half, symmetry T ~ -T gives the
    negative quantile.
    """
    if tail == 0.5:
        return 0.0
    if tail < 0.5:
        return t_two_sided_critical(2.0 * tail, df)
    return -t_two_sided_critical(2.0 * (1.0 - tail), df)


def _quantile_sum(n: int, alpha: float, power: float) -> float:
    df = float(n - 1)
    return t_two_sided_critical(alpha, df) + _one_sided_upper_quantile(1.0 - power, df)


def minimum_detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Return the smallest mean delta a two-sided paired t-test on `n` deltas detects.

    `sd` is the standard deviation of the per-query deltas; the test has level
    `alpha` and detects an effect of the returned size with probability `power`.
    For example sd = 1, n = 6 gives (2.571 + 0.920) / sqrt(6) ≈ 1.425.
    """
    sd = _positive_finite("sd", sd)
    n = _sample_size(n)
    alpha = _open_unit_interval("alpha", alpha)
    power = _open_unit_interval("power", power)
    return _quantile_sum(n, alpha, power) * sd / math.sqrt(float(n))


def required_sample_size(sd: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Return the fewest paired deltas (>= 2) needed to detect a mean delta of `delta`.

    That is the smallest n with n >= ((t_{alpha/2,n-1} + t_{beta,n-1}) * sd / delta)^2.
    The right-hand side only shrinks as n (and so df) grows while the left grows,
    so once n qualifies every larger n does: the search walks upward from 2 in
    doubling strides and then bisects the last stride, which finds the same n as a
    one-by-one scan in logarithmically many quantile evaluations.

    Raises ValueError for invalid arguments, or when more than `MAX_SAMPLE_SIZE`
    deltas would be needed (the effect is too small relative to `sd`).
    """
    sd = _positive_finite("sd", sd)
    delta = _positive_finite("delta", delta)
    alpha = _open_unit_interval("alpha", alpha)
    power = _open_unit_interval("power", power)

    def is_enough(n: int) -> bool:
        return n >= (_quantile_sum(n, alpha, power) * sd / delta) ** 2

    too_small = _MIN_SAMPLE_SIZE - 1
    candidate = _MIN_SAMPLE_SIZE
    while not is_enough(candidate):
        if candidate >= MAX_SAMPLE_SIZE:
            raise ValueError(
                f"required sample size exceeds {MAX_SAMPLE_SIZE} for sd={sd!r}, "
                f"delta={delta!r}, alpha={alpha!r}, power={power!r}; "
                "the effect is too small relative to sd to plan for"
            )
        too_small = candidate
        candidate = min(2 * candidate, MAX_SAMPLE_SIZE)
    # Invariant: too_small fails (or is below the minimum), candidate qualifies.
    while candidate - too_small > 1:
        middle = (too_small + candidate) // 2
        if is_enough(middle):
            candidate = middle
        else:
            too_small = middle
    return candidate


def sd_confidence_interval(sd: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return the two-sided `confidence` interval on the true sd, from a sample sd of `n`.

    For normal deltas (n - 1) * sd^2 / sigma^2 is chi-square with n - 1 degrees of
    freedom, so sigma lies in [sd * sqrt((n - 1) / chi2_{1-a/2}), sd * sqrt((n - 1) /
    chi2_{a/2})] with a = 1 - `confidence`. From an 11-query pilot with sd 0.287 the
    95% interval is about [0.201, 0.504]. Raises ValueError for sd < 0, n < 2 or
    `confidence` outside (0, 1).
    """
    given_sd = sd
    sd = _as_float("sd", sd)
    if not (sd >= 0.0 and math.isfinite(sd)):
        raise ValueError(f"sd must be a finite number >= 0, got {given_sd!r}")
    n = _sample_size(n)
    confidence = _open_unit_interval("confidence", confidence)
    df = float(n - 1)
    tail = (1.0 - confidence) / 2.0
    low = sd * math.sqrt(df / chi_square_quantile(1.0 - tail, df))
    high = sd * math.sqrt(df / chi_square_quantile(tail, df))
    return low, high


def effective_alpha(alpha: float, family_size: int, correction: str) -> float:
    """Return the level at which one metric is tested inside a corrected family.

    A gate at level `alpha` over `family_size` metrics adjusts their p-values by
    `correction` (one of `CORRECTIONS`). Planning for one metric whose change is real
    while the others' are not, that metric fails the gate exactly when its raw p is
    at most:

    - "none": `alpha`;
    - "bonferroni": `alpha` / m;
    - "holm": `alpha` / m (its p is the smallest, so its adjusted p is m · p);
    - "bh": `alpha` / m (the smallest of m p-values is adjusted to m · p, and the
      others' larger p cannot lower it when they are null).

    So every correction but "none" sizes at `alpha` / m: the conservative plan, exact
    for a change confined to one metric; when several metrics change at once, Holm and
    Benjamini-Hochberg let the later ones through at up to `alpha`. A family of one is
    `alpha` itself. Raises ValueError for alpha outside (0, 1), a family size below 1
    or an unknown correction.
    """
    alpha = _open_unit_interval("alpha", alpha)
    size = _whole_number("family_size", family_size, 1)
    if correction not in CORRECTIONS:
        valid = ", ".join(CORRECTIONS)
        raise ValueError(f"unknown correction {correction!r}; expected one of: {valid}")
    if correction == "none":
        return alpha
    return alpha / size
