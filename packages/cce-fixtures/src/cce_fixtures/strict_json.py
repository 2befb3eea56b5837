"""One JSON value per fixture line, accepted or rejected as serde_json would.

Why it exists: the reference reads each line with `serde_json::from_str`, and Python's
`json.loads` is more lenient in ways that change which fixtures are valid (harness
docs/fixtures.md#classifying-lines). This module owns the differences and nothing else:

- `NaN`, `Infinity` and `-Infinity` are not JSON;
- numbers that overflow a double (`1e400`, a 400-digit integer) are errors;
- integers outside the 64-bit range become floats, as serde stores them, so a `k` of
  `2**64` is a float and is rejected by the caller;
- a string holding an unpaired surrogate escape (`"\\ud800"`) is an error;
- nesting 128 arrays/objects deep exceeds serde's recursion limit;
- anything but whitespace after the value is an error (`json.loads` agrees).

Integer literals are never handed to `int()` when long, so Python's digit limit for
`int(str)` never turns into an unexpected exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cce_fixtures.rust_text import U64_MAX

__all__ = ["JsonError", "load_json_value"]

_I64_MIN = -(2**63)
# serde_json starts with 128 levels and fails when an array/object takes the last one.
_MAX_NESTING = 127
# Longer digit runs cannot be in the 64-bit range; they go straight to float().
_MAX_INTEGER_DIGITS = 20


class JsonError(ValueError):
    """The text is not exactly one JSON value; `detail` says where or why."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _reject_constant(name: str) -> Any:
    raise JsonError(f"{name} is not a JSON value")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise JsonError(f"number out of range: {literal[:40]}")
    return value


def _integer(literal: str) -> int | float:
    digit_count = len(literal) - literal.startswith("-")
    if digit_count <= _MAX_INTEGER_DIGITS:
        value = int(literal)
        if _I64_MIN <= value <= U64_MAX:
            return value
    return _finite_float(literal)


def _has_lone_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def _check_value(value: Any) -> None:
    """Reject lone surrogates and serde's recursion limit, walking without recursion."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _has_lone_surrogate(item):
                raise JsonError("lone surrogate in string escape")
        elif isinstance(item, (list, dict)):
            if depth + 1 > _MAX_NESTING:
                raise JsonError("recursion limit exceeded")
            if isinstance(item, dict):
                pending.extend((key, depth + 1) for key in item)
                pending.extend((child, depth + 1) for child in item.values())
            else:
                pending.extend((child, depth + 1) for child in item)


def load_json_value(text: str) -> Any:
    """Parse exactly one JSON value (JSON whitespace around it allowed); raise JsonError."""
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_integer,
        )
    except json.JSONDecodeError as error:
        raise JsonError(f"{error.msg} at column {error.colno}") from None
    except RecursionError:
        raise JsonError("recursion limit exceeded") from None
    _check_value(value)
    return value
