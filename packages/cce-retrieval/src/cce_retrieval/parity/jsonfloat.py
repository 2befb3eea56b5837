"""serde_json's float layout: shortest round-trip digits printed the way ryu prints them.

Why it exists: the store (docs/index-store.md) and the event log print doubles exactly as
the reference's serde_json does. Python's `repr` picks the same digits but lays out very
small and very large magnitudes differently, so every JSON float cce writes goes through
`format_json_float`.
"""

from __future__ import annotations

import math


def format_json_float(value: float) -> str:
    """Print a double like serde_json (ryu): shortest round-trip digits, ryu's layout.

    The digits are the ones `repr` picks; only the layout differs from `repr` for
    magnitudes below 1e-4 and at or above 1e16. Non-finite values print as `null`,
    like serde_json.
    """
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    if "e" not in text:
        # Between 1e-4 and 1e16 (and for zeros) `repr` is already ryu's layout.
        return text
    sign = "-" if value < 0 else ""
    text = repr(abs(value))
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text) if exponent_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    exponent -= len(fraction)
    stripped = digits.lstrip("0")
    trailing = len(stripped) - len(stripped.rstrip("0"))
    digits = stripped.rstrip("0")
    exponent += trailing
    n = len(digits)
    kk = n + exponent
    if exponent >= 0 and kk <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < kk <= 16:
        body = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        body = "0." + "0" * (-kk) + digits
    elif n == 1:
        body = f"{digits}e{kk - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return sign + body
