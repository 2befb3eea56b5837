"""The fast tokenizer equals the spec's byte-level definition on any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cce_retrieval.parity.tokenizer import tokenize, unique_tokens

_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def spec_tokenize(text: str) -> list[str]:
    """The word tokenizer (docs/retrieval.md#word-tokenizer) read literally: maximal runs of word
    bytes, A-Z lowered."""
    tokens: list[str] = []
    current = bytearray()
    for byte in text.encode("utf-8"):
        if byte in _WORD:
            current.append(byte + 0x20 if 0x41 <= byte <= 0x5A else byte)
        elif current:
            tokens.append(current.decode("ascii"))
            current = bytearray()
    if current:
        tokens.append(current.decode("ascii"))
    return tokens


@given(st.text())
def test_tokenize_matches_the_byte_definition(text: str) -> None:
    assert tokenize(text) == spec_tokenize(text)


@given(st.text(alphabet=st.sampled_from("aB_9 .\x1c\x1f\u212a\u0130é\t\n")))
def test_tokenize_ignores_unicode_case_mappings_and_separators(text: str) -> None:
    # U+212A KELVIN SIGN and U+0130 lower to ASCII under str.lower(); they must separate.
    assert tokenize(text) == spec_tokenize(text)


def test_unique_tokens_keeps_first_occurrence_order() -> None:
    assert unique_tokens("user login USER admin login") == ["user", "login", "admin"]
