"""Rust string semantics (docs/harness.md#text-helpers): lines, trim and `{:?}` quoting."""

from __future__ import annotations

import pytest

from cce_fixtures.rust_text import rust_debug_str, rust_lines, rust_trim


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("a\r\nb\r", ["a", "b\r"]),
        ("a\n", ["a"]),
        ("a\n\nb", ["a", "", "b"]),
        ("", []),
        ("\n", [""]),
        ("x\ry\n", ["x\ry"]),
        ("a\u2028b\x0cc\x1ed\x85e", ["a\u2028b\x0cc\x1ed\x85e"]),
    ],
)
def test_rust_lines_matches_the_spec_examples(text: str, lines: list[str]) -> None:
    assert rust_lines(text) == lines


def test_rust_trim_strips_white_space_but_not_separators_python_strips() -> None:
    assert rust_trim("\u3000\xa0 \t auth.py \u2029\u205f") == "auth.py"
    assert rust_trim("\x1cauth.py\x1f") == "\x1cauth.py\x1f"
    assert rust_trim("\u200b x \u200b") == "\u200b x \u200b"  # zero-width space is not White_Space


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("f.py@0-4", '"f.py@0-4"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("it's", '"it\'s"'),
        ("\0\t\r\n", '"\\0\\t\\r\\n"'),
        ("\x07\x7f", '"\\u{7}\\u{7f}"'),
        ("été 東京 🦀", '"été 東京 🦀"'),
        ("\u200b\u2028\xa0", '"\\u{200b}\\u{2028}\\u{a0}"'),
        ("e\u0301", '"e\\u{301}"'),
        ("", '""'),
    ],
)
def test_rust_debug_str_quotes_like_rust(text: str, quoted: str) -> None:
    assert rust_debug_str(text) == quoted
