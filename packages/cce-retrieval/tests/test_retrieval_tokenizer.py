"""Anchor and property tests of the word tokenizer (docs/retrieval.md#word-tokenizer)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_retrieval.parity.tokenizer import tokenize, unique_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hashPassword(user_id)", ["hashpassword", "user_id"]),
        ("SELECT * FROM users;", ["select", "from", "users"]),
        ("", []),
        ("getUserById", ["getuserbyid"]),
        ("cafébar", ["caf", "bar"]),
        ("_a1_b2", ["_a1_b2"]),
        ("user login user", ["user", "login", "user"]),
        ("ÀBC_déf9", ["bc_d", "f9"]),
        ("x-y.z", ["x", "y", "z"]),
        ("fn main() { let __x = 0xFF; }", ["fn", "main", "let", "__x", "0xff"]),
        ("  \t\n ;;; ", []),
        ("İstanbul K", ["stanbul", "k"]),
    ],
)
def test_tokenize_anchors(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_unique_tokens_keeps_first_occurrence_order() -> None:
    assert unique_tokens("b a B c a") == ["b", "a", "c"]


_BYTE_TOKEN = re.compile(rb"[A-Za-z0-9_]+")


@given(st.text())
def test_tokenize_follows_the_byte_rule(text: str) -> None:
    # The spec's definition, literally: maximal word-byte runs of the UTF-8 bytes,
    # A-Z lowercased by adding 0x20.
    expected = [
        bytes(byte + 0x20 if 0x41 <= byte <= 0x5A else byte for byte in run).decode("ascii")
        for run in _BYTE_TOKEN.findall(text.encode("utf-8"))
    ]
    assert tokenize(text) == expected
