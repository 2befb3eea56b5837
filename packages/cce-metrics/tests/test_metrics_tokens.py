"""cce.tokens/v1, Rust line splitting and left-to-right summation (docs/harness.md#text-helpers,
docs/metrics.md#token-metrics)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import TOKENIZER_ID, estimate_tokens, rust_lines, seq_sum
from cce_metrics.tokens import line_token_estimates

GOLDEN_TOKEN_CORPUS_SHA256 = "d7716035af7021fdc122a7783ffcd4ddadcd38d200cb06f7fd77731d4b503052"
GOLDEN_TOKEN_CORPUS_COUNTS = [1, 1, 1, 2, 6, 11, 8, 11, 3, 6, 5, 5, 4, 5, 9, 7, 7, 7, 6, 8]


def token_corpus_digest(counts: list[int]) -> str:
    """The cross-language gate: SHA-256 over the lines f"{i}\\t{count}\\n"."""
    text = "".join(f"{index}\t{count}\n" for index, count in enumerate(counts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_tokenizer_id() -> None:
    assert TOKENIZER_ID == "cce.tokens/v1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 1),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 1),
        ("abcdefgh", 2),
        ("你好世界", 3),
        ("a\u00a0b", 1),
    ],
)
def test_estimate_tokens_anchors(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_tokens_counts_bytes_not_code_points() -> None:
    # 4 code points but 16 UTF-8 bytes.
    assert estimate_tokens("😀😀😀😀") == 4
    assert estimate_tokens("é" * 4) == 2


def test_golden_digest_formula_over_listed_counts() -> None:
    assert token_corpus_digest(GOLDEN_TOKEN_CORPUS_COUNTS) == GOLDEN_TOKEN_CORPUS_SHA256
    # One count off changes the digest, so the gate is sensitive to every entry.
    altered = [*GOLDEN_TOKEN_CORPUS_COUNTS[:-1], 9]
    assert token_corpus_digest(altered) != GOLDEN_TOKEN_CORPUS_SHA256


def test_golden_digest_over_token_corpus_when_available(reference_dir: Path) -> None:
    corpus = reference_dir / "test" / "fixture" / "savings" / "token_corpus.json"
    if not corpus.is_file():
        pytest.skip("token_corpus.json is not part of the available reference data")
    strings = json.loads(corpus.read_text(encoding="utf-8"))
    counts = [estimate_tokens(text) for text in strings]
    assert counts == GOLDEN_TOKEN_CORPUS_COUNTS
    assert token_corpus_digest(counts) == GOLDEN_TOKEN_CORPUS_SHA256


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\r\nb\r", ["a", "b\r"]),
        ("a\n", ["a"]),
        ("a\n\nb", ["a", "", "b"]),
        ("", []),
        ("\n", [""]),
        ("x\ry\n", ["x\ry"]),
        ("a\u2028b\x0cc\x1ed", ["a\u2028b\x0cc\x1ed"]),
        ("a\r\n", ["a"]),
        ("\r\n\r\n", ["", ""]),
        ("a\r\r\nb", ["a\r", "b"]),
    ],
)
def test_rust_lines(text: str, expected: list[str]) -> None:
    assert rust_lines(text) == expected


TEXT_WITH_LINE_BREAKS = st.text(
    alphabet=st.sampled_from(["a", "é", "你", "😀", " ", "\t", "\n", "\r", "\u2028", "\x0c"]),
    max_size=40,
)


@given(TEXT_WITH_LINE_BREAKS)
def test_line_token_estimates_agree_with_rust_lines(text: str) -> None:
    assert line_token_estimates(text) == [estimate_tokens(line) for line in rust_lines(text)]


@given(TEXT_WITH_LINE_BREAKS)
def test_rust_lines_rejoin_to_the_text_without_terminators(text: str) -> None:
    lines = rust_lines(text)
    assert all("\n" not in line for line in lines)
    normalised = text.replace("\r\n", "\n")
    if normalised.endswith("\n"):
        normalised = normalised[:-1]
    assert "\n".join(lines) == normalised


def test_seq_sum_is_strictly_left_to_right() -> None:
    values = [1e16, 1.0, -1e16]
    # Left to right, 1e16 + 1.0 rounds back to 1e16, so the 1.0 is lost.
    assert seq_sum(values) == 0.0
    assert seq_sum([0.1] * 10) == 0.9999999999999999
    assert seq_sum([]) == 0.0
    assert seq_sum(iter([0.5, 0.25])) == 0.75
