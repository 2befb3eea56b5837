"""The word tokenizer shared by the hash embedder, BM25 and intent detection
(docs/retrieval.md#word-tokenizer).

Why it exists: one definition of "a token" for indexing and querying. A token is a
maximal run of ASCII `[A-Za-z0-9_]` bytes of the UTF-8 text, with A–Z lowercased; every
other byte, including every byte of a non-ASCII character, separates tokens. No
stemming, no stopwords, no camelCase splitting, duplicates kept.

The implementation is the byte rule itself: one 256-entry translation maps word bytes
to themselves (A–Z lowered) and every other byte to a space, after which the text is
pure ASCII and `str.split()` cuts it at the spaces. It is about 3.5x faster than a
regex `findall` and is what keeps indexing and BM25 set-up fast on large corpora.
"""

from __future__ import annotations


def _word_byte_table() -> bytes:
    table = bytearray(b" " * 256)
    for byte in b"abcdefghijklmnopqrstuvwxyz0123456789_":
        table[byte] = byte
    for byte in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        table[byte] = byte + 0x20
    return bytes(table)


_WORD_BYTES = _word_byte_table()


def tokenize_bytes(data: bytes) -> list[bytes]:
    """Tokens of UTF-8 `data` as ASCII bytes (the hash embedder hashes these directly)."""
    return data.translate(_WORD_BYTES).split()


def tokenize(text: str) -> list[str]:
    """Tokens of `text` left to right, ASCII-lowercased, duplicates kept."""
    return text.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).decode("ascii").split()


def unique_tokens(text: str) -> list[str]:
    """`tokenize` with later duplicates dropped, first-occurrence order kept (BM25 query terms)."""
    return list(dict.fromkeys(tokenize(text)))
