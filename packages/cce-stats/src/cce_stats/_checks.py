"""Input checks every public function of the package shares.

Why it exists: a NaN or an infinity among per-query deltas is always an upstream
bug (a score that divided by zero, a parse that went wrong), and every statistic
built on it is meaningless — yet IEEE arithmetic happily turns it into p = 0.0,
"significant". So every public entry point refuses non-finite input with a
`ValueError` naming the argument and the offending position, before computing
anything (docs/statistics.md#non-finite-input).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["require_finite", "require_finite_values"]


def require_finite(name: str, value: float) -> None:
    """Raise ValueError unless `value` is a finite real number."""
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def require_finite_values(name: str, values: Iterable[float]) -> None:
    """Raise ValueError naming the first non-finite entry of `values`, if any."""
    for index, value in enumerate(values):
        if not math.isfinite(value):
            raise ValueError(
                f"{name}[{index}] is {value!r}; every value must be a finite number "
                "(NaN and infinities usually mean a score was computed from bad input)"
            )
