"""The paired t-test the `cce relevance --compare` report is built on.

Why it exists: comparing two retrieval backends pairs their per-query scores and
asks whether the mean difference is distinguishable from zero. The reference's
answer (docs/statistics.md#paired-t-test) has specific edge rules — fewer than two deltas, and
"constant" deltas that differ only in their last bits — that must be reproduced
exactly for the report to be byte-identical. This module owns the `PairedTTest`
result type and `paired_t_test`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cce_stats._checks import constant_sign_flip_p, finite_floats, is_constant, rescaled
from cce_stats.distributions import (
    reference_seq_sum,
    reference_t_two_sided_critical,
    reference_t_two_sided_p,
)

__all__ = ["PairedTTest", "paired_t_test"]

_CONFIDENCE_ALPHA = 0.05


def _ieee_divide(numerator: float, denominator: float) -> float:
    """Divide like IEEE-754 (and Rust): x/0 is ±inf and 0/0 is NaN instead of raising.

    Deltas that are distinct yet tiny (subnormal) pass the constant check while
    their squared deviations underflow to a zero variance, where the reference
    reports t = ±inf (p 0) or NaN. Such deltas are rescaled before they get here,
    so this only guards the unscaled path's division.
    """
    if denominator != 0.0:
        return numerator / denominator
    if numerator == 0.0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


@dataclass(frozen=True, slots=True)
class PairedTTest:
    """Outcome of a two-sided paired t-test on per-query deltas (B minus A).

    `t` is None when it is undefined (fewer than two deltas, or constant deltas);
    `p` and `ci95` are None only for fewer than two deltas. For constant deltas
    `mean_delta` is the first delta and `ci95` collapses onto it.
    """

    n: int
    mean_delta: float
    t: float | None
    p: float | None
    ci95: tuple[float, float] | None

    @property
    def constant(self) -> bool:
        """True for constant deltas (at least two), where t is undefined and p a convention."""
        return self.t is None and self.p is not None

    @property
    def constant_p(self) -> float | None:
        """The exact sign-flip p of constant deltas; None unless `constant`.

        Constant deltas have no spread, so t carries no evidence and the reference's
        p = 0.0 ("significant") is a convention. Their exact permutation p is known in
        closed form: all n deltas share one sign and one magnitude, so of the 2^n sign
        assignments only the observed one and its mirror reach the observed |mean|,
        p = 2 / 2^n = 2^(1 - n) (0.5 for two queries that both lost 0.2, 1/16 for
        five). All-zero deltas keep p = 1.0. This is the p a gate acts on
        (docs/statistics.md#constant-deltas).
        """
        if not self.constant:
            return None
        return constant_sign_flip_p(self.n, all_zero=self.p == 1.0)

    @property
    def decision_p(self) -> float | None:
        """`constant_p` for constant deltas, otherwise `p`: the p to compare with alpha."""
        constant_p = self.constant_p
        return self.p if constant_p is None else constant_p


def paired_t_test(deltas: Sequence[float]) -> PairedTTest:
    """Run the reference's two-sided paired t-test with a 95% confidence interval.

    Deltas whose spread is within 16 machine epsilons of their largest magnitude
    count as constant: the variance would be rounding noise and t would explode to
    ~1e16, so instead t is undefined, p is 1.0 when the mean is exactly 0.0 and
    0.0 otherwise, and the interval collapses onto the first delta. That p is the
    reference's convention, kept for its report's bytes; it is no evidence, and
    `PairedTTest.decision_p` gives the exact sign-flip p (2^(1 - n)) that a decision
    must use instead.

    Every delta is converted to a Python float (double) first, so numpy float32
    input gives the double-precision answer.

    Deltas all smaller than 2^-400 (about 4e-121) are scaled by a power of two before
    their deviations are squared, which changes no bit of t but keeps the variance
    from underflowing to zero (t = ±inf, p = 0.0, "significant").

    Raises ValueError when any delta is NaN or infinite: IEEE arithmetic would turn
    it into p = 0.0, "significant" (docs/statistics.md#non-finite-input); and when the
    deltas are so large (near 1e308) that their sums overflow.
    """
    deltas = finite_floats("deltas", deltas)
    n = len(deltas)
    mean = 0.0 if n == 0 else reference_seq_sum(deltas) / n
    if n < 2:
        return PairedTTest(n=n, mean_delta=mean, t=None, p=None, ci95=None)

    first = deltas[0]
    if is_constant(deltas):
        p_constant = 1.0 if mean == 0.0 else 0.0
        return PairedTTest(n=n, mean_delta=first, t=None, p=p_constant, ci95=(first, first))

    scaled, exponent = rescaled(deltas)
    if exponent < 0:
        # Deltas below 2^-400: squared deviations would underflow to a zero variance
        # and t to ±inf ("p = 0") or NaN. Scaled by a power of two they keep t exact.
        return _scaled_t_test(scaled, exponent, mean)
    variance = reference_seq_sum((delta - mean) * (delta - mean) for delta in deltas) / (n - 1)
    if not (math.isfinite(mean) and math.isfinite(variance)):
        # Deltas near the float maximum overflow the sums; the "answer" would be t = 0,
        # p = 1 with an infinite interval, confidently wrong. Scores never get there.
        raise ValueError("deltas are too large to sum in floating point")
    sd = math.sqrt(variance)
    df = float(n - 1)
    standard_error = sd / math.sqrt(float(n))
    t = _ieee_divide(mean, standard_error)
    p = reference_t_two_sided_p(t, df)
    half_width = reference_t_two_sided_critical(_CONFIDENCE_ALPHA, df) * standard_error
    return PairedTTest(n=n, mean_delta=mean, t=t, p=p, ci95=(mean - half_width, mean + half_width))


def _scaled_t_test(scaled: Sequence[float], exponent: int, mean: float) -> PairedTTest:
    """The t-test on deltas pre-multiplied by 2^-`exponent`, its interval scaled back."""
    n = len(scaled)
    scaled_mean = reference_seq_sum(scaled) / n
    variance = reference_seq_sum((delta - scaled_mean) ** 2 for delta in scaled) / (n - 1)
    df = float(n - 1)
    standard_error = math.sqrt(variance) / math.sqrt(float(n))
    t = scaled_mean / standard_error
    p = reference_t_two_sided_p(t, df)
    half_width = math.ldexp(
        reference_t_two_sided_critical(_CONFIDENCE_ALPHA, df) * standard_error, exponent
    )
    return PairedTTest(n=n, mean_delta=mean, t=t, p=p, ci95=(mean - half_width, mean + half_width))
