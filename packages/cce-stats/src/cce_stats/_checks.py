"""Input checks every public function of the package shares.

Why it exists: a NaN or an infinity among per-query deltas is always an upstream
bug (a score that divided by zero, a parse that went wrong), and every statistic
built on it is meaningless — yet IEEE arithmetic happily turns it into p = 0.0,
"significant". So every public entry point refuses non-finite input with a
`ValueError` naming the argument and the offending position, before computing
anything (docs/statistics.md#non-finite-input). Finite deltas so large (near
1e308) that their sum overflows are refused the same way: a mean of inf is no
more an answer than one computed from inf.

The same functions convert at that boundary: every number a caller passes (a numpy
float32 or float16 scalar, an int, a Fraction) becomes a Python float (IEEE double)
before any arithmetic, so a statistic is computed in double precision whatever the
input's type, and every float the package returns is a Python float. Without it
numpy's promotion rules keep `0.0 + float32` in float32, and a randomization p on
float32 deltas came out 0.34375 where the same values as doubles give 0.375.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = [
    "constant_sign_flip_p",
    "finite_float",
    "finite_floats",
    "finite_mean",
    "is_constant",
    "rescaled",
]

# Between these magnitudes the squares of deviations neither overflow nor underflow
# (the constant-delta rule keeps any spread above ~1e-15 of the largest delta), so
# deltas inside are used as they are and every bit of the reference is kept.
_SAFE_LOW = 2.0**-400
_SAFE_HIGH = 2.0**400

# f64 machine epsilon (2^-52); deltas whose spread is within 16 of these relative to
# the largest magnitude are "constant" (the reference t-test's rule).
_MACHINE_EPSILON = 2.220446049250313e-16
_CONSTANT_TOLERANCE_ULPS = 16.0


def _as_float(name: str, value: object) -> float:
    """`value` as a Python float; TypeError for text, ValueError beyond the float range."""
    if isinstance(value, str | bytes | bytearray):
        raise TypeError(f"{name} must be a number, got the text {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        raise ValueError(f"{name} is {value!r}, beyond the float range") from None
    except TypeError:
        raise TypeError(f"{name} must be a real number, got {value!r}") from None


def finite_float(name: str, value: float) -> float:
    """Return `value` as a finite Python float; ValueError unless it is finite.

    A numpy scalar of any precision, an int or a Fraction is converted to a double
    first, so the arithmetic that follows is double precision.
    """
    converted = _as_float(name, value)
    if not math.isfinite(converted):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return converted


def finite_floats(name: str, values: Iterable[float]) -> list[float]:
    """Return `values` as a list of Python floats, refusing the first non-finite one.

    Each entry is converted to a double (`finite_float`'s rule) before anything is
    computed from it; the ValueError names the argument and the entry's position.
    """
    converted: list[float] = []
    append = converted.append
    for index, value in enumerate(values):
        # Python floats, the common case, skip the conversion's checks.
        number = value if type(value) is float else _as_float(f"{name}[{index}]", value)
        if not math.isfinite(number):
            raise ValueError(
                f"{name}[{index}] is {value!r}; every value must be a finite number "
                "(NaN and infinities usually mean a score was computed from bad input)"
            )
        append(number)
    return converted


def finite_mean(deltas: Sequence[float]) -> float:
    """Return the strictly left-to-right mean of `deltas` (0.0 for none).

    Raises ValueError when the sum overflows: every test reports this mean, and an
    infinite one would only hide that the input was out of range.
    """
    total = 0.0
    for delta in deltas:
        total += delta
    if not math.isfinite(total):
        raise ValueError("deltas are too large to sum in floating point")
    return total / len(deltas) if deltas else 0.0


def is_constant(deltas: Sequence[float]) -> bool:
    """True when the spread of `deltas` (at least one) is rounding noise.

    The paired t-test's rule: a spread within 16 machine epsilons of the largest
    magnitude would give a variance of rounding noise and a t near 1e16, so t, d_z
    and their kin are undefined there.
    """
    lo, hi = min(deltas), max(deltas)
    return hi - lo <= _CONSTANT_TOLERANCE_ULPS * _MACHINE_EPSILON * max(abs(lo), abs(hi))


def constant_sign_flip_p(n: int, all_zero: bool) -> float:
    """The exact sign-flip p of n constant deltas: 2^(1 - n), or 1.0 when all are zero.

    All n deltas share one sign and one magnitude, so of the 2^n sign assignments only
    the observed one and its mirror reach the observed |mean|.
    """
    return 1.0 if all_zero else math.ldexp(1.0, 1 - n)


def rescaled(deltas: Sequence[float]) -> tuple[list[float], int]:
    """Return `deltas` times 2^-e, and e, so the largest magnitude is safe to square.

    Deltas whose largest magnitude lies within [2^-400, 2^400] come back unchanged
    with e = 0. Outside it, e is chosen so the largest magnitude lands in [0.5, 1):
    a power of two scales without rounding, so a mean, sd or t computed from the
    scaled deltas is the unscaled one, minus the underflow or overflow that would
    otherwise turn a spread of 1e-200 into a zero variance (t = inf, "p = 0") or a
    spread of 1e200 into an infinite one.
    """
    largest = max((abs(delta) for delta in deltas), default=0.0)
    if largest == 0.0 or _SAFE_LOW <= largest <= _SAFE_HIGH:
        return list(deltas), 0
    exponent = math.frexp(largest)[1]
    return [math.ldexp(delta, -exponent) for delta in deltas], exponent
