"""Log-gamma, the regularized incomplete beta and the Student-t tail and quantile.

Why it exists: the CCE reference computes its t-test p-values and confidence
intervals with its own Numerical-Recipes style special functions rather than a
library, so matching it bit for bit means transcribing those exact algorithms with
the same operation order (docs/statistics.md#paired-t-test). This module owns them:
`ln_gamma` (Lanczos, g = 5, six terms), `reg_inc_beta` (modified Lentz continued
fraction), the Student-t two-sided tail and its bisection-based quantile, plus
`seq_sum`, the strictly left-to-right sum every mean in the package relies on.
It also owns the chi-square quantile (`chi_square_quantile`, from the regularized
incomplete gamma function), which the sd's confidence interval in sizing needs; no
reference exists for it, so it is written for precision alone.

Every expression of the reference path keeps the reference's evaluation order;
"simplifying" one (reassociating a product, using `math.lgamma`, `sum()` or
`math.fsum`) changes the last bits and breaks byte-identical output.

The reference path loses digits in two corners: near p = 1 (|t| small against
sqrt(df), where 1 - df/(df + t^2) cancels) and for large df (where the Lanczos
log-gammas of df/2 cancel). The public `t_two_sided_p` therefore keeps the
reference's bits only where they are within 1e-10 of the true tail, and elsewhere
evaluates the same continued fraction from t^2/(df + t^2) directly, with an
asymptotic log-gamma ratio, which holds 1e-9 relative up to df = 1e7
(docs/statistics.md#precision). The t-test itself always uses the reference path
(`reference_t_two_sided_p`, `reference_t_two_sided_critical`), so its report stays
byte-identical to the reference's, rounding included.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

from cce_stats._checks import finite_float, finite_floats

__all__ = [
    "MAX_DF",
    "MIN_ALPHA",
    "MIN_DF",
    "chi_square_quantile",
    "ln_gamma",
    "reference_seq_sum",
    "reference_t_two_sided_critical",
    "reference_t_two_sided_p",
    "reg_inc_beta",
    "seq_sum",
    "t_two_sided_critical",
    "t_two_sided_p",
]

MAX_DF = 1e7
"""Largest degrees of freedom `t_two_sided_p` and `t_two_sided_critical` accept."""
MIN_DF = 1.0
"""Smallest degrees of freedom they accept. Below one degree of freedom the tail
decays so slowly (like |t|^-df) that the 0.05 quantile at df = 0.004 lies beyond
the float range, and for df near 0 the continued fraction's rounding pushes p past
1; a paired test on n deltas has df = n - 1 >= 1, so nothing needs less."""
MIN_ALPHA = 1e-300
"""Smallest tail `t_two_sided_critical` inverts (at df = 1 the quantile nears 1e300)."""

_LANCZOS_COEFFICIENTS = (
    76.18009172947146,
    -86.50532032941677,
    24.01409824083091,
    -1.231739572450155,
    0.1208650973866179e-2,
    -0.5395239384953e-5,
)
_LANCZOS_SERIES_START = 1.000000000190015
_SQRT_TWO_PI = 2.5066282746310005

_BETACF_MAX_ITERATIONS = 300
_BETACF_EPSILON = 3e-14
# Stands in for a zero denominator in Lentz's method so the recurrence never divides by 0.
_BETACF_FLOOR = 1e-300

_BISECTION_STEPS = 200
_BRACKET_LIMIT = 1e300


def reference_seq_sum(values: Iterable[float]) -> float:
    """Add `values` strictly left to right starting from 0.0, without any checks.

    Python's `sum()` compensates float rounding since 3.12 and `math.fsum` is exact;
    the reference does neither, so means and variances must use this instead. The
    unchecked form exists for sums of finite values that may overflow (squared
    deviations of huge deltas), where the reference carries the infinity on.
    """
    total = 0.0
    for value in values:
        total += value
    return total


def seq_sum(values: Iterable[float]) -> float:
    """Add `values` strictly left to right starting from 0.0.

    Raises ValueError naming the first value that is NaN or infinite.
    """
    total = 0.0
    for value in finite_floats("values", values):
        total += value
    return total


def ln_gamma(x: float) -> float:
    """Return ln Γ(x) for finite x > 0 by the classic Lanczos `gammln` (g = 5, six terms).

    Deliberately not `math.lgamma`: the reference's approximation differs from the
    true value in the last bits (ln Γ(2) is -4.440892098500626e-16, not 0). Raises
    ValueError for x <= 0 or a non-finite x.
    """
    x = finite_float("x", x)
    if x <= 0.0:
        raise ValueError(f"x must be > 0, got {x!r}")
    return _ln_gamma(x)


def _ln_gamma(x: float) -> float:
    series = _LANCZOS_SERIES_START
    for offset, coefficient in enumerate(_LANCZOS_COEFFICIENTS):
        series += coefficient / (x + 1.0 + offset)
    tmp = x + 5.5
    tmp = tmp - (x + 0.5) * math.log(tmp)
    return -tmp + math.log(_SQRT_TWO_PI * series / x)


def _floor_magnitude(value: float) -> float:
    return _BETACF_FLOOR if abs(value) < _BETACF_FLOOR else value


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Evaluate the incomplete-beta continued fraction by the modified Lentz method.

    Like the reference, it returns the last estimate without complaint when 300
    iterations do not reach the tolerance.
    """
    a_plus_b = a + b
    a_plus_one = a + 1.0
    a_minus_one = a - 1.0
    c = 1.0
    d = _floor_magnitude(1.0 - a_plus_b * x / a_plus_one)
    d = 1.0 / d
    fraction = d
    for step in range(1, _BETACF_MAX_ITERATIONS + 1):
        m = float(step)
        m2 = 2.0 * m
        even_term = m * (b - m) * x / ((a_minus_one + m2) * (a + m2))
        d = _floor_magnitude(1.0 + even_term * d)
        c = _floor_magnitude(1.0 + even_term / c)
        d = 1.0 / d
        fraction *= d * c
        odd_term = -(a + m) * (a_plus_b + m) * x / ((a + m2) * (a_plus_one + m2))
        d = _floor_magnitude(1.0 + odd_term * d)
        c = _floor_magnitude(1.0 + odd_term / c)
        d = 1.0 / d
        correction = d * c
        fraction *= correction
        if abs(correction - 1.0) < _BETACF_EPSILON:
            break
    return fraction


def reg_inc_beta(a: float, b: float, x: float) -> float:
    """Return the regularized incomplete beta function I_x(a, b) for finite a, b > 0.

    x <= 0 gives exactly 0.0 and x >= 1 exactly 1.0. Otherwise the continued
    fraction is evaluated directly or through the symmetry I_x(a,b) = 1 - I_{1-x}(b,a),
    whichever converges faster, as Numerical Recipes' `betai` does. Raises
    ValueError for a or b <= 0 and for any non-finite argument.
    """
    a = finite_float("a", a)
    b = finite_float("b", b)
    x = finite_float("x", x)
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"a and b must be > 0, got a={a!r}, b={b!r}")
    return _reg_inc_beta(a, b, x)


def _reg_inc_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        _ln_gamma(a + b) - _ln_gamma(a) - _ln_gamma(b) + a * math.log(x) + b * math.log(1.0 - x)
    )
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def reference_t_two_sided_p(t: float, df: float) -> float:
    """Return P(|T| >= |t|) for Student-t T with `df` degrees of freedom, as the reference does.

    Exactly 1.0 at t = 0 and symmetric in the sign of t. No argument checks: the
    paired t-test calls it with whatever t its arithmetic produced (±inf or NaN for
    subnormal deltas), exactly as the reference does.
    """
    return _reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))


# Reference bits are kept where they lie within 1e-10 of the true tail: up to this df,
# and while t^2 is at least this fraction of df (below it 1 - df/(df + t^2) cancels).
_REFERENCE_MAX_DF = 1e4
_REFERENCE_MIN_T2_OVER_DF = 1e-8
# Above this |t| / sqrt(df), t^2 / df would overflow; the tail is computed from logs.
_HUGE_RATIO = 1e150
_TINY_RATIO = 1e-150
_ACCURATE_MAX_ITERATIONS = 10_000
_ACCURATE_EPSILON = 1e-16
_LN_SQRT_PI = 0.5723649429247001  # ln Γ(1/2)
# Stirling series coefficients B_2k / (2k (2k - 1)) for k = 1..7.
_STIRLING = (
    1.0 / 12.0,
    -1.0 / 360.0,
    1.0 / 1260.0,
    -1.0 / 1680.0,
    1.0 / 1188.0,
    -691.0 / 360360.0,
    1.0 / 156.0,
)
_STIRLING_MIN_ARGUMENT = 8.0


def _stirling_correction(z: float) -> float:
    inverse = 1.0 / z
    inverse_squared = inverse * inverse
    power = inverse
    total = 0.0
    for coefficient in _STIRLING:
        total += coefficient * power
        power *= inverse_squared
    return total


def _ln_gamma_ratio_half(a: float) -> float:
    """Return ln Γ(a + 1/2) - ln Γ(a) with a small absolute error for every a > 0.

    Differencing two log-gammas of size a·ln(a) loses about log10(a) digits; here
    the large Stirling terms are combined analytically, (1/2)·ln a + a·(log1p(h) - h)
    with h = 1/(2a), leaving only the small series corrections to subtract. Below
    a = 8 the recurrence Γ(z + 1) = z·Γ(z) shifts the argument up first.
    """
    shift = 0.0
    while a < _STIRLING_MIN_ARGUMENT:
        shift += math.log(a) - math.log(a + 0.5)
        a += 1.0
    h = 0.5 / a
    if h > 1e-3:
        log1p_minus_h = math.log1p(h) - h
    else:
        # Taylor series of log1p(h) - h; math.log1p(h) - h would cancel for tiny h.
        log1p_minus_h = h * h * (-0.5 + h * (1.0 / 3.0 + h * (-0.25 + h * 0.2)))
    stirling = _stirling_correction(a + 0.5) - _stirling_correction(a)
    return shift + 0.5 * math.log(a) + a * log1p_minus_h + stirling


def _continued_fraction_long(a: float, b: float, x: float) -> float:
    """The Lentz continued fraction of `reg_inc_beta`, run to full double precision."""
    a_plus_b = a + b
    a_plus_one = a + 1.0
    a_minus_one = a - 1.0
    c = 1.0
    d = 1.0 / _floor_magnitude(1.0 - a_plus_b * x / a_plus_one)
    fraction = d
    for step in range(1, _ACCURATE_MAX_ITERATIONS + 1):
        m = float(step)
        m2 = 2.0 * m
        even_term = m * (b - m) * x / ((a_minus_one + m2) * (a + m2))
        d = 1.0 / _floor_magnitude(1.0 + even_term * d)
        c = _floor_magnitude(1.0 + even_term / c)
        fraction *= d * c
        odd_term = -(a + m) * (a_plus_b + m) * x / ((a + m2) * (a_plus_one + m2))
        d = 1.0 / _floor_magnitude(1.0 + odd_term * d)
        c = _floor_magnitude(1.0 + odd_term / c)
        correction = d * c
        fraction *= correction
        if abs(correction - 1.0) < _ACCURATE_EPSILON:
            break
    return fraction


def _accurate_t_two_sided_p(t: float, df: float) -> float:
    """I_x(df/2, 1/2) at x = df/(df + t^2), with 1 - x and every logarithm formed directly."""
    if t == 0.0:
        return 1.0
    a = df / 2.0
    b = 0.5
    ratio = abs(t) / math.sqrt(df)
    if ratio < _TINY_RATIO:
        # 1 - p is about 0.64 * ratio here, far below half an ulp of 1.0.
        return 1.0
    if ratio > _HUGE_RATIO:
        ln_x = -2.0 * math.log(ratio)
        ln_y = 0.0
        x = math.exp(ln_x)
        y = 1.0
    else:
        ratio_squared = ratio * ratio
        ln_x = -math.log1p(ratio_squared)
        ln_y = math.log(ratio_squared) + ln_x
        x = 1.0 / (1.0 + ratio_squared)
        y = ratio_squared / (1.0 + ratio_squared)
    ln_front = _ln_gamma_ratio_half(a) - _LN_SQRT_PI + a * ln_x + b * ln_y
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction_long(a, b, x) / a
    return 1.0 - front * _continued_fraction_long(b, a, y) / b


def _require_df(df: float) -> float:
    df = finite_float("df", df)
    if not MIN_DF <= df <= MAX_DF:
        raise ValueError(
            f"df must be >= {MIN_DF:g} and <= {MAX_DF:g} (the domain where the tail holds "
            f"1e-9 relative precision), got {df!r}"
        )
    return df


def _t_two_sided_p(t: float, df: float) -> float:
    if df <= _REFERENCE_MAX_DF and _REFERENCE_MIN_T2_OVER_DF * df <= t * t < math.inf:
        return reference_t_two_sided_p(t, df)
    return _accurate_t_two_sided_p(t, df)


def t_two_sided_p(t: float, df: float) -> float:
    """Return P(|T| >= |t|) for a Student-t variable T with `df` degrees of freedom.

    Exactly 1.0 at t = 0 and symmetric in the sign of t; within 1e-9 relative of the
    true tail for every finite t and `MIN_DF` <= df <= `MAX_DF`, and bit-identical to the
    reference wherever the reference is that precise (docs/statistics.md#precision).
    Raises ValueError for a non-finite t or df outside that domain.
    """
    t = finite_float("t", t)
    df = _require_df(df)
    return _t_two_sided_p(t, df)


def _bisect_critical(alpha: float, df: float, tail: Callable[[float, float], float]) -> float:
    lo = 0.0
    hi = 1.0
    while tail(hi, df) > alpha and hi < _BRACKET_LIMIT:
        hi *= 2.0
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if tail(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# Pure in its two floats and a 200-step bisection: a compare run asks for the same df
# once per metric, and sizing asks for the same quantiles repeatedly.
@functools.lru_cache(maxsize=1024)
def reference_t_two_sided_critical(alpha: float, df: float) -> float:
    """Return the t >= 0 whose two-sided tail is `alpha`, exactly as the reference does.

    Found by deterministic bisection: double the upper bracket until it passes the
    quantile, then halve exactly 200 times with no early exit, so every platform
    lands on the same bits. No argument checks (alpha >= 1 collapses toward 0).
    """
    return _bisect_critical(alpha, df, reference_t_two_sided_p)


@functools.lru_cache(maxsize=1024)
def _t_two_sided_critical(alpha: float, df: float) -> float:
    return _bisect_critical(alpha, df, _t_two_sided_p)


def t_two_sided_critical(alpha: float, df: float) -> float:
    """Return the t >= 0 whose two-sided tail probability is `alpha` (e.g. 0.05 → t₀.₀₅).

    The reference's bisection (bracket doubling, then exactly 200 halvings) over
    `t_two_sided_p`, so it is bit-identical to the reference's quantile wherever
    that tail is; alpha = 1 gives exactly 0.0. Raises ValueError unless
    `MIN_ALPHA` <= alpha <= 1 and `MIN_DF` <= df <= `MAX_DF`
    (docs/statistics.md#precision).
    """
    alpha = finite_float("alpha", alpha)
    if not MIN_ALPHA <= alpha <= 1.0:
        raise ValueError(f"alpha must be >= {MIN_ALPHA:g} and <= 1, got {alpha!r}")
    df = _require_df(df)
    if alpha == 1.0:
        return 0.0
    return _t_two_sided_critical(alpha, df)


_GAMMA_MAX_ITERATIONS = 100_000
_GAMMA_EPSILON = 1e-16
_CHI_SQUARE_BISECTION_STEPS = 400


def _reg_inc_gamma_tails(a: float, x: float) -> tuple[float, float]:
    """Return (P(a, x), Q(a, x)), the regularized lower and upper incomplete gamma.

    The series converges fast for x < a + 1 and gives P directly; beyond, Lentz's
    continued fraction gives Q directly. The other tail is one minus it, so the small
    tail is always computed without cancellation (Numerical Recipes' gser and gcf).
    """
    if x <= 0.0:
        return 0.0, 1.0
    front = math.exp(a * math.log(x) - x - math.lgamma(a))
    if x < a + 1.0:
        term = 1.0 / a
        total = term
        denominator = a
        for _ in range(_GAMMA_MAX_ITERATIONS):
            denominator += 1.0
            term *= x / denominator
            total += term
            if abs(term) < abs(total) * _GAMMA_EPSILON:
                break
        lower = total * front
        return lower, 1.0 - lower
    b = x + 1.0 - a
    c = 1.0 / _BETACF_FLOOR
    d = 1.0 / b
    fraction = d
    for step in range(1, _GAMMA_MAX_ITERATIONS + 1):
        an = -step * (step - a)
        b += 2.0
        d = 1.0 / _floor_magnitude(an * d + b)
        c = _floor_magnitude(b + an / c)
        correction = d * c
        fraction *= correction
        if abs(correction - 1.0) < _GAMMA_EPSILON:
            break
    upper = front * fraction
    return 1.0 - upper, upper


def chi_square_quantile(q: float, df: float) -> float:
    """Return the x with P(X <= x) = `q` for a chi-square variable X with `df` df.

    Bisection on the tail that is smaller at the answer (the lower tail for q <= 1/2,
    the upper for q > 1/2), so neither end loses digits; within 1e-9 relative of the
    true quantile (checked against scipy's `chi2.ppf`). Raises ValueError unless
    0 < q < 1 and `MIN_DF` <= df <= `MAX_DF`.
    """
    q = finite_float("q", q)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    df = _require_df(df)
    a = df / 2.0
    use_lower = q <= 0.5
    target = q if use_lower else 1.0 - q

    def below(x: float) -> bool:
        lower, upper = _reg_inc_gamma_tails(a, x / 2.0)
        return lower < target if use_lower else upper > target

    lo = 0.0
    hi = max(1.0, df)
    while below(hi):
        lo = hi
        hi *= 2.0
    for _ in range(_CHI_SQUARE_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if below(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
