"""JSON from files the user hands to a command, parsed without tracebacks.

Why it exists: `json.loads` turns two kinds of hostile input into exceptions that are
not `json.JSONDecodeError`: an integer of more than 4,300 digits (Python's limit for
`int(str)`, a `ValueError`) and arrays or objects nested thousands deep (a
`RecursionError`). Every reader of reports, run files, judgments and event-log lines
already turns a `JSONDecodeError` into an `error:` naming the file and line, or skips the
line where the docs say so; this module's `loads` raises only that, so each reader keeps
its own message and needs no second handler.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["loads"]

_MAX_DIGITS = 4300
"""Python's default `int(str)` limit; `sys.get_int_max_str_digits()` when it is set."""


def _integer(literal: str) -> int:
    limit = sys.get_int_max_str_digits() or _MAX_DIGITS
    digits = len(literal.lstrip("-"))
    if digits > limit:
        raise _TooLong(literal, digits, limit)
    return int(literal)


class _TooLong(ValueError):
    def __init__(self, literal: str, digits: int, limit: int) -> None:
        super().__init__(f"an integer of {digits} digits; at most {limit} are read")
        self.literal = literal


def loads(text: str | bytes) -> Any:
    """`json.loads(text)`, with a too-long integer or too-deep nesting raised as the
    `json.JSONDecodeError` a malformed document gets."""
    try:
        return json.loads(text, parse_int=_integer)
    except _TooLong as error:
        document = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        # The first literal of that length is the one: every earlier one was read.
        raise json.JSONDecodeError(
            str(error), document, max(document.find(error.literal), 0)
        ) from None
    except RecursionError:
        document = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise json.JSONDecodeError(
            "arrays and objects nested too deeply to read", document, 0
        ) from None
