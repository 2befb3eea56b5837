"""Rust-compatible string primitives: ASCII lowercasing, Unicode White_Space trim and split.

Why it exists: the reference lowercases with `to_ascii_lowercase` and trims/splits on
Rust's `White_Space` set. Python's `str.lower()`, `str.strip()` and `str.split()` differ
(non-ASCII case mapping; U+001C–U+001F count as whitespace), and those differences were
observed to change rankings. Every module that lowercases, trims or splits user text
goes through here. cce-fixtures keeps its own `White_Space` set and `rust_trim`;
tests/test_shared_copies.py keeps the two equal.
"""

from __future__ import annotations

# Rust's char::is_whitespace: the Unicode White_Space property, exactly these 25 code points.
RUST_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_RUST_WHITESPACE_CHARS = "".join(sorted(RUST_WHITESPACE))


def ascii_lower(text: str) -> str:
    """Map A–Z to a–z and leave every other character alone (Rust `to_ascii_lowercase`).

    `str.lower` does exactly that to an ASCII string; any other text goes through its
    UTF-8 bytes, where `bytes.lower` touches only A–Z (every byte of a non-ASCII
    character is >= 0x80). Both run in C, many times faster than `str.translate`.
    """
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def rust_trim(text: str) -> str:
    """Strip Rust `White_Space` characters from both ends (Rust `str::trim`)."""
    return text.strip(_RUST_WHITESPACE_CHARS)


def rust_trim_start(text: str) -> str:
    """Strip Rust `White_Space` characters from the start (Rust `str::trim_start`)."""
    return text.lstrip(_RUST_WHITESPACE_CHARS)


def rust_trim_end(text: str) -> str:
    """Strip Rust `White_Space` characters from the end (Rust `str::trim_end`)."""
    return text.rstrip(_RUST_WHITESPACE_CHARS)


def rust_split_whitespace(text: str) -> list[str]:
    """Split on runs of Rust `White_Space`, dropping empty pieces (`split_whitespace`)."""
    pieces: list[str] = []
    start = -1
    for i, ch in enumerate(text):
        if ch in RUST_WHITESPACE:
            if start >= 0:
                pieces.append(text[start:i])
                start = -1
        elif start < 0:
            start = i
    if start >= 0:
        pieces.append(text[start:])
    return pieces
