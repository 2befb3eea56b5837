"""Multiple-testing corrections for a family of p-values.

Why it exists: a comparison report tests every metric at once, and four
uncorrected tests at level 0.05 flag a spurious difference far more often than
one in twenty. This module owns `adjust_p_values` and the names of the
corrections it knows (`CORRECTIONS`): Holm's step-down, Bonferroni, and
Benjamini–Hochberg's false-discovery-rate step-up, each computed with the same
operations as statsmodels' `multipletests` (holm, bonferroni, fdr_bh) so the
adjusted values agree with it to the last bit (docs/statistics.md#corrections).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["CORRECTIONS", "adjust_p_values"]

CORRECTIONS: tuple[str, ...] = ("holm", "bonferroni", "bh", "none")
"""Correction names `adjust_p_values` accepts; "none" returns the p-values unchanged."""


def _require_p_values(p_values: Sequence[float | None]) -> list[tuple[int, float]]:
    present: list[tuple[int, float]] = []
    for index, given in enumerate(p_values):
        if given is None:
            continue
        p = float(given)  # a numpy scalar becomes a double, and so does every result
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(
                f"p_values[{index}] is {given!r}; a p-value must be a number in [0, 1]"
            )
        present.append((index, p))
    return present


def _holm(sorted_p: list[float]) -> list[float]:
    # p_(i) * (m - i), then a running maximum from the smallest p up, then capped at 1.
    m = len(sorted_p)
    adjusted: list[float] = []
    running = -math.inf
    for rank, p in enumerate(sorted_p):
        running = max(running, p * float(m - rank))
        adjusted.append(running)
    return [min(value, 1.0) for value in adjusted]


def _benjamini_hochberg(sorted_p: list[float]) -> list[float]:
    # p_(i) / (i / m), then a running minimum from the largest p down, then capped at 1.
    # Dividing by the fraction i/m (not multiplying by m/i) is statsmodels' rounding.
    m = len(sorted_p)
    adjusted = [0.0] * m
    running = math.inf
    for rank in range(m - 1, -1, -1):
        running = min(running, sorted_p[rank] / (float(rank + 1) / float(m)))
        adjusted[rank] = running
    return [min(value, 1.0) for value in adjusted]


def adjust_p_values(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Return `p_values` adjusted for multiple testing by `method`, in input order.

    `method` is one of `CORRECTIONS`. None entries (tests that had no p-value) pass
    through as None and do not count towards the family size. Raises ValueError
    for an unknown method or a p-value that is not a finite number in [0, 1].
    """
    if method not in CORRECTIONS:
        valid = ", ".join(CORRECTIONS)
        raise ValueError(f"unknown correction {method!r}; expected one of: {valid}")
    present = _require_p_values(p_values)
    result: list[float | None] = [None] * len(p_values)
    for index, p in present:
        result[index] = p
    if method == "none" or not present:
        return result
    m = len(present)
    if method == "bonferroni":
        for index, p in present:
            result[index] = min(p * float(m), 1.0)
        return result
    # A stable sort: tied p-values get the same adjusted value either way, and the
    # order of the output never depends on it.
    order = sorted(present, key=lambda item: item[1])
    sorted_p = [p for _, p in order]
    adjusted = _holm(sorted_p) if method == "holm" else _benjamini_hochberg(sorted_p)
    for (index, _), value in zip(order, adjusted, strict=True):
        result[index] = value
    return result
