"""Rust string semantics the fixture contract depends on, written out for Python.

Why it exists: the reference engine reads fixtures with Rust's `str::lines`, trims
with `str::trim` and prints anchors with `{:?}`. Python's `splitlines()`, `strip()`
and `repr()` each differ in small ways (they split on U+2028, strip U+001C-U+001F,
quote with single quotes), so this module owns the three exact equivalents
(docs/harness.md#text-helpers and docs/fixtures.md#parse-errors) and nothing else.
cce-retrieval and cce-metrics hold their own `rust_trim` and `rust_lines`, since this
package imports neither; tests/test_shared_copies.py keeps the copies equal
(docs/architecture.md#copies-kept-on-purpose).
"""

from __future__ import annotations

import unicodedata

# Rust `u64::MAX`: the largest `k`, range bound or JSON integer serde keeps as an integer.
U64_MAX = 2**64 - 1

__all__ = ["U64_MAX", "rust_debug_str", "rust_lines", "rust_trim"]

# Characters with the Unicode White_Space property: what Rust's `str::trim` removes.
_RUST_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# Other_Grapheme_Extend (Unicode PropList): together with categories Mn and Me these
# make up Grapheme_Extend, which Rust's `{:?}` escapes even though they are printable.
_OTHER_GRAPHEME_EXTEND = frozenset(
    [
        0x09BE, 0x09D7, 0x0B3E, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5, 0x0CD6,
        0x0D3E, 0x0D57, 0x0DCF, 0x0DDF, 0x1B35, 0x200C, 0x302E, 0x302F, 0xFF9E,
        0xFF9F, 0x1133E, 0x11357, 0x114B0, 0x114BD, 0x115AF, 0x11930, 0x1D165,
        *range(0x1D16E, 0x1D173),
        *range(0xE0020, 0xE0080),
    ]
)  # fmt: skip

_SIMPLE_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"'}


def rust_trim(text: str) -> str:
    """Strip leading and trailing Unicode White_Space, exactly like Rust's `str::trim`."""
    return text.strip(_RUST_WHITE_SPACE)


def rust_lines(text: str) -> list[str]:
    """Split like Rust's `str::lines`: on "\\n", dropping a "\\r" only right before it.

    A final terminator does not make a trailing empty line, and empty text has no lines.
    """
    pieces = text.split("\n")
    terminated = pieces[:-1]
    lines = [piece[:-1] if piece.endswith("\r") else piece for piece in terminated]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _is_grapheme_extended(char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me") or ord(char) in _OTHER_GRAPHEME_EXTEND


def rust_debug_str(text: str) -> str:
    """Quote `text` the way Rust's `format!("{:?}", text)` does for a `&str`.

    Double quotes; `\\0 \\t \\r \\n \\\\ \\"` escapes; `\\u{hex}` for characters that
    are not printable (Python's `str.isprintable` uses the same categories as Rust:
    Cc, Cf, Cs, Co, Cn, Zl, Zp, Zs except the ASCII space) or that extend a grapheme.
    The single quote stays as is.
    """
    out = ['"']
    for char in text:
        simple = _SIMPLE_ESCAPES.get(char)
        if simple is not None:
            out.append(simple)
        elif _is_grapheme_extended(char) or not char.isprintable():
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)
