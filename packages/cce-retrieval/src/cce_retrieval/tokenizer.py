"""The word tokenizer shared by the hash embedder, BM25 and intent detection (spec §3).

Why it exists: one definition of "a token" for indexing and querying. A token is a
maximal run of ASCII `[A-Za-z0-9_]` bytes of the UTF-8 text, with A–Z lowercased; every
other byte, including every byte of a non-ASCII character, separates tokens. No
stemming, no stopwords, no camelCase splitting, duplicates kept.
"""

from __future__ import annotations

import re

# Over str, [A-Za-z0-9_] with re.ASCII is exactly the byte rule: a non-ASCII character
# (all of whose UTF-8 bytes are >= 0x80) can never be part of a token.
_WORD_RUN = re.compile(r"[A-Za-z0-9_]+", re.ASCII)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def tokenize(text: str) -> list[str]:
    """Tokens of `text` left to right, ASCII-lowercased, duplicates kept."""
    return _WORD_RUN.findall(text.translate(_ASCII_LOWER))


def unique_tokens(text: str) -> list[str]:
    """`tokenize` with later duplicates dropped, first-occurrence order kept (BM25 query terms)."""
    return list(dict.fromkeys(tokenize(text)))
