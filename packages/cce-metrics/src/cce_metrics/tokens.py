"""The `cce.tokens/v1` token estimator and Rust's line splitting.

Why it exists: token counts and line numbers must agree byte for byte with the Rust
reference engine, and both are easy to get subtly wrong in Python (`len(str)` counts
code points, `str.splitlines()` splits on a dozen separators). The token estimate of
every package and the span metrics' line splitting are defined here. cce-fixtures, which
depends on no other cce package, keeps its own `rust_lines`; tests/test_shared_copies.py
keeps the two equal.
"""

from __future__ import annotations

from typing import Final, Protocol, runtime_checkable

import attrs

TOKENIZER_ID: Final = "cce.tokens/v1"
"""Provenance id of the estimator below; recorded next to every token count."""


def estimate_tokens(text: str) -> int:
    """Estimate tokens as a quarter of the UTF-8 byte length, at least 1 (`cce.tokens/v1`).

    Every byte counts the same (ASCII, whitespace and multi-byte characters alike), and
    the empty string still costs one token.
    """
    byte_length = len(text) if text.isascii() else len(text.encode("utf-8"))
    return max(1, byte_length // 4)


@runtime_checkable
class Tokenizer(Protocol):
    """What the cost metrics need of a tokenizer: an id to record and a count per text.

    `cce.tokens/v1` (`ESTIMATOR`) is the default. A user who has a real tokenizer
    loaded plugs it in with any object of this shape, for example around tiktoken::

        class Cl100k:
            id = "tiktoken/cl100k_base"
            def __init__(self, encoding): self._encoding = encoding
            def count(self, text): return len(self._encoding.encode(text, disallowed_special=()))

    cce never downloads a tokenizer; `count` must be deterministic and never negative.
    """

    @property
    def id(self) -> str:
        """Provenance id recorded next to every count (`cce.tokens/v1`, ...)."""
        ...

    def count(self, text: str) -> int:
        """Tokens of `text`."""
        ...


@attrs.frozen(slots=True)
class Estimator:
    """`estimate_tokens` as a `Tokenizer`."""

    id: str = TOKENIZER_ID

    def count(self, text: str) -> int:
        return estimate_tokens(text)


ESTIMATOR: Final = Estimator()
"""The default tokenizer of the cost metrics: `cce.tokens/v1`."""


def rust_lines(text: str) -> list[str]:
    """Split `text` into lines exactly like Rust's `str::lines`.

    Lines end at `"\\n"`; a `"\\r"` is dropped only when it sits right before that
    `"\\n"`; a final terminator does not start an extra empty line; empty text has no
    lines. Unlike `str.splitlines()`, no other character (lone `"\\r"`, U+2028, form
    feed, ...) ends a line.
    """
    if not text:
        return []
    pieces = text.split("\n")
    if pieces[-1] == "":
        # The text ended with "\n": that terminator closes the last line, it does not
        # open a new empty one.
        pieces.pop()
        terminated = len(pieces)
    else:
        terminated = len(pieces) - 1
    for index in range(terminated):
        piece = pieces[index]
        if piece.endswith("\r"):
            pieces[index] = piece[:-1]
    return pieces


def line_token_estimates(text: str) -> list[int]:
    """`estimate_tokens` of each of `rust_lines(text)`, encoding the text only once.

    The line-weight table calls this for every chunk of a large index, so it splits the
    UTF-8 bytes instead of encoding each line separately.
    """
    if not text:
        return []
    encoded = text.encode("utf-8")
    pieces = encoded.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
        terminated = len(pieces)
    else:
        terminated = len(pieces) - 1
    # `n >> 2 or 1` is max(1, n // 4) for byte counts, without a call per line.
    estimates = [byte_count >> 2 or 1 for byte_count in map(len, pieces)]
    if b"\r" not in encoded:
        return estimates
    for index in range(terminated):
        if pieces[index].endswith(b"\r"):
            estimates[index] = max(1, (len(pieces[index]) - 1) // 4)
    return estimates
