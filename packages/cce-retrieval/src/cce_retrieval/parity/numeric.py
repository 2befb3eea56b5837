"""The reference's numeric conventions: exact half-away rounding, `score_key`, `format6`.

Why it exists: the reference compares and sorts scores by their 6-decimal rounded key
and prints them with a fixed 6-decimal formatter built from an integer. Python's
`round()` (banker's) and `'%.6f'` (rounds the exact binary value) both disagree with it
on ties, which flips ranks and changes output bytes. Every comparison and every printed
score in cce goes through these functions (docs/retrieval.md#numeric-conventions).
"""

from __future__ import annotations

import math

_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


def round_half_away(x: float) -> float:
    """Round half away from zero, exactly (Rust `f64::round`); no `x + 0.5` shortcut."""
    if not math.isfinite(x):
        return x
    a = abs(x)
    f = math.floor(a)
    r = f + 1.0 if (a - f) >= 0.5 else float(f)
    return math.copysign(r, x)


def _saturating_i64(x: float) -> int:
    """Rust `as i64`: NaN → 0, clamp to the i64 range."""
    if math.isnan(x):
        return 0
    if x >= 9.223372036854775807e18:
        return _I64_MAX
    if x <= -9.223372036854775808e18:
        return _I64_MIN
    return int(x)


def score_key(x: float) -> int:
    """The integer key every ranking comparison uses: `round_half_away(x * 1e6)`, as a
    saturating i64."""
    return _saturating_i64(round_half_away(x * 1_000_000.0))


def format6(x: float) -> str:
    """Fixed 6 decimals, half away from zero; never prints `-0.000000`."""
    scaled = _saturating_i64(round_half_away(abs(x) * 1_000_000.0))
    sign = "-" if (x < 0.0 and scaled != 0) else ""
    return f"{sign}{scaled // 1_000_000}.{scaled % 1_000_000:06d}"


def format6_signed(x: float) -> str:
    """`format6` with an explicit `+` on non-negative values
    (docs/report-formats.md#number-formatting)."""
    text = format6(x)
    if text.startswith("-"):
        rest = text[1:]
        return "+" + rest if set(rest) <= {"0", "."} else text
    return "+" + text
