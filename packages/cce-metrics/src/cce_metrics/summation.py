"""Float aggregation with the reference engine's exact rounding.

Why it exists: the Rust reference adds doubles strictly left to right. Python's `sum()`
uses compensated summation for floats from 3.12 on and `math.fsum` is exact, so both can
differ from the reference in the last bit, which shows up in printed averages. Every
mean in cce-metrics goes through `seq_sum`.
"""

from __future__ import annotations

from collections.abc import Iterable


def seq_sum(values: Iterable[float]) -> float:
    """Add `values` strictly left to right in IEEE-754 doubles, starting from 0.0."""
    total = 0.0
    for value in values:
        total += value
    return total


def ratio(numerator: int, denominator: int) -> float:
    """`numerator / denominator` as a double, or 0.0 when the denominator is zero."""
    if denominator == 0:
        return 0.0
    return numerator / denominator
