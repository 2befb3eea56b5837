"""Effect size and wins/ties/losses for paired per-query deltas.

Why it exists: a p-value says whether a difference is distinguishable from noise,
not whether it matters; the standardized mean difference d_z and the count of
queries that got better, stayed equal or got worse say how large and how broad
it is. This module owns `effect_size_dz`, `wins_ties_losses` and `sample_sd`, the
spread the sizing functions take (docs/statistics.md#effect-size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cce_stats._checks import finite_floats, is_constant, rescaled
from cce_stats.distributions import reference_seq_sum as seq_sum

__all__ = ["effect_size_dz", "sample_sd", "wins_ties_losses"]


def effect_size_dz(deltas: Sequence[float]) -> float | None:
    """Return d_z = mean(deltas) / sd(deltas), the sample sd with n - 1.

    None when it is undefined: fewer than two deltas, or deltas that are constant
    (sd 0, or a spread within 16 machine epsilons of the largest magnitude — the
    paired t-test's rule, under which t is undefined too). d_z equals t / sqrt(n).
    Deltas beyond [2^-400, 2^400] in magnitude are scaled by a power of two first,
    which changes no bit of the ratio but keeps the squares from overflowing or
    underflowing. Raises ValueError when any delta is not finite.
    """
    deltas = finite_floats("deltas", deltas)
    n = len(deltas)
    if n < 2:
        return None
    if is_constant(deltas):
        return None
    deltas, _ = rescaled(deltas)
    mean = seq_sum(deltas) / n
    variance = seq_sum((delta - mean) * (delta - mean) for delta in deltas) / (n - 1)
    sd = math.sqrt(variance)
    if sd == 0.0:
        return None
    return mean / sd


def sample_sd(deltas: Sequence[float]) -> float | None:
    """Return the sample standard deviation (n - 1) of `deltas`; None for fewer than two.

    This is the sd the sizing functions take (docs/statistics.md#sizing). Deltas
    beyond [2^-400, 2^400] in magnitude are scaled by a power of two and the sd
    scaled back, so neither the squares nor the sum overflow. Raises ValueError
    when any delta is not finite, or when the sd itself exceeds the float range.
    """
    deltas = finite_floats("deltas", deltas)
    n = len(deltas)
    if n < 2:
        return None
    scaled, exponent = rescaled(deltas)
    mean = seq_sum(scaled) / n
    sd = math.sqrt(seq_sum((delta - mean) * (delta - mean) for delta in scaled) / (n - 1))
    try:
        return math.ldexp(sd, exponent)
    except OverflowError:
        raise ValueError("the sd of deltas this large exceeds the float range") from None


def wins_ties_losses(deltas: Sequence[float]) -> tuple[int, int, int]:
    """Return how many deltas are > 0 (B won), exactly 0 (tie) and < 0 (B lost).

    Raises ValueError when any delta is not finite.
    """
    deltas = finite_floats("deltas", deltas)
    wins = sum(1 for delta in deltas if delta > 0.0)
    losses = sum(1 for delta in deltas if delta < 0.0)
    return wins, len(deltas) - wins - losses, losses
