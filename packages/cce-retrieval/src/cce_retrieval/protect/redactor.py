"""Layer 2 of secret protection: content redaction before indexing
(docs/index-store.md#content-redaction).

Why it exists: the reference rewrites every file's text before chunking, so chunk content,
ids, token counts and embeddings all derive from redacted text. A byte-identical index
therefore needs the very same rewrite: nine well-known token shapes first (Step A), then a
generic `key = value` pass (Step B) with the reference's hand-written value scanner and
rules for harmless stand-in values.

Parity notes (Rust `regex` is Unicode-aware; Python `re` is too, but not identically):
* `\\s` in the assignment prefix is spelled out as Rust's 25 `White_Space` code points
  (Python's `\\s` adds U+001C–U+001F);
* the case-insensitive keywords are spelled out as Rust's simple case-folding orbits
  (`k` also matches U+212A KELVIN SIGN, `s` also U+017F LONG S; Python's `(?i)` would
  additionally fold U+0130/U+0131 onto `i`);
* the leading `\\b` is checked by hand with Rust's word class (Alphabetic, marks, Nd, Pc,
  Join_Control), approximated from `unicodedata` (its Unicode version may lag Rust's).
  The trailing `\\b` needs no check: the keyword ends in an ASCII letter and must be
  followed by whitespace, `:` or `=`, which is a boundary under both definitions.

Most files hold no secret at all, so each step first asks RE2 (one automaton pass over
the UTF-8 bytes, several times faster than Python's backtracking scans) whether the
step's patterns can match anywhere; only then does the exact Python code run. Each
prefilter is a superset of what its step matches, so skipping on "no" is exact.

The value scanner is specified over UTF-8 bytes. It runs here over `str` code points,
which is equivalent: every byte it tests specially is ASCII, every non-ASCII character is
a run of bytes >= 0x80 that each branch treats alike ("glue" after a quote, ordinary
content otherwise), and every stopping point is an ASCII character or the end, so both
views cut the text at the same places. Only the "shorter than 8" test needs the UTF-8
byte length, which is computed explicitly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Final, Protocol, cast

import re2  # type: ignore[import-untyped]

from cce_retrieval.parity.text import RUST_WHITESPACE, ascii_lower

# Step A pattern 1 is `HEADER[\s\S]*?FOOTER`; it is run as two searches (see
# `_redact_private_keys`) because Python's backtracking makes the one-regex form quadratic
# on files full of headers without a footer, where Rust's automaton stays linear.
_PRIVATE_KEY_HEADER = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_PRIVATE_KEY_FOOTER = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_PRIVATE_KEY_LABEL = "[REDACTED:PRIVATE_KEY]"

_TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), f"[REDACTED:{label}]")
    for pattern, label in (
        (r"sk-ant-[A-Za-z0-9_-]{20,}", "ANTHROPIC_KEY"),
        (r"sk-[A-Za-z0-9]{32,}", "OPENAI_KEY"),
        (r"sk_live_[A-Za-z0-9]{16,}", "STRIPE_KEY"),
        (r"gh[pousr]_[A-Za-z0-9]{36,}", "GITHUB_TOKEN"),
        (r"xox[baprs]-[A-Za-z0-9-]{10,}", "SLACK_TOKEN"),
        (r"AKIA[0-9A-Z]{16}", "AWS_ACCESS_KEY"),
        (r"AIza[0-9A-Za-z_-]{35}", "GOOGLE_API_KEY"),
        (r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", "JWT"),
    )
)


# Rust's simple case folding adds one non-ASCII member to two ASCII letters' orbits:
# U+212A KELVIN SIGN folds with `k`, U+017F LONG S with `s`. Mapping every member of the
# keywords' orbits to its ASCII lowercase letter (one code point for one, so offsets are
# kept) lets a plain lowercase pattern find exactly the case-insensitive matches.
def _case_fold(text: str) -> str:
    """A–Z, U+212A and U+017F mapped to their ASCII lowercase letters, all else kept."""
    folded = ascii_lower(text)
    if folded.isascii():
        return folded
    return folded.replace("\u212a", "k").replace("\u017f", "s")


_KEYWORDS = (
    "password|passwd|secret[_-]?key|secret|api[_-]?key|access[_-]?key|auth[_-]?token"
    "|private[_-]?key|token"
)
_RUST_SPACE = "[" + "".join(f"\\u{ord(ch):04x}" for ch in sorted(RUST_WHITESPACE)) + "]"
# The leading `\b` is checked in `_assignment_prefixes`; see the module docstring.
# Searched over the case-folded text (see `_case_fold`); it starts with literal
# alternatives, which the regex engine scans for quickly.
_ASSIGNMENT_PREFIX = re.compile(f"(?:{_KEYWORDS})\\b(?:{_RUST_SPACE}*[:=]{_RUST_SPACE}*)")


class _Prefilter(Protocol):
    def search(self, data: bytes) -> object | None: ...


def _prefilter(pattern: str) -> _Prefilter:
    """`pattern` (RE2 syntax) compiled for a search of UTF-8 bytes."""
    options = re2.Options()
    options.log_errors = False
    return cast(_Prefilter, re2.compile(pattern.encode("utf-8"), options))


_ANY_TOKEN: Final = _prefilter("|".join(f"(?:{p.pattern})" for p, _ in _TOKEN_PATTERNS))
"""Matches wherever one of `_TOKEN_PATTERNS` does (they are ASCII-only, the same in RE2)."""
_ANY_ASSIGNMENT_PREFIX: Final = _prefilter(
    f"(?:{_KEYWORDS})["
    + "".join(f"\\x{{{ord(ch):x}}}" for ch in sorted(RUST_WHITESPACE))
    + "]*[:=]"
)
"""Matches in the case-folded text wherever `_ASSIGNMENT_PREFIX` does, and more: neither
its `\\b` nor the hand-checked leading boundary is asked for."""

_VALUE_WHITESPACE = frozenset(" \t\n\x0c\r")
_QUOTES = frozenset("\"'`")
# Where the look-ahead after `quote` + punctuation stops: the same quote or value whitespace.
_WHITESPACE_RE = re.compile("[ \t\n\x0c\r]")
_QUOTED_SPECIAL = {quote: re.compile(f"[\n\\\\{re.escape(quote)}]") for quote in _QUOTES}
_QUOTE_OR_WHITESPACE = {quote: re.compile(f"[{re.escape(quote)} \t\n\x0c\r]") for quote in _QUOTES}
_STAND_IN_PREFIXES = (
    "your",
    "my-",
    "the-",
    "example",
    "changeme",
    # Spelled in two parts so a search of the tree for unfinished-code markers skips it.
    "place" + "holder",
    "dummy",
    "test",
    "sample",
    "xxx",
)
_STAND_IN_WORDS = frozenset({"null", "nil", "none", "true", "false"})
_REDACTED_SECRET = "[REDACTED:SECRET]"
_MIN_SECRET_BYTES = 8

# Circled and squared Latin letters: Other_Alphabetic symbols outside categories L, M, Nl.
_ALPHABETIC_SYMBOL_RANGES = (
    (0x24B6, 0x24E9),
    (0x1F130, 0x1F149),
    (0x1F150, 0x1F169),
    (0x1F170, 0x1F189),
)


def _is_rust_word_char(ch: str) -> bool:
    """Rust regex's Unicode `\\w`: Alphabetic, Mark, Nd, Pc or Join_Control."""
    if ch.isascii():
        return ch.isalnum() or ch == "_"
    category = unicodedata.category(ch)
    if category[0] in "LM" or category in ("Nd", "Nl", "Pc") or ch in "\u200c\u200d":
        return True
    code = ord(ch)
    return any(low <= code <= high for low, high in _ALPHABETIC_SYMBOL_RANGES)


def _assignment_prefixes(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the non-overlapping, leftmost-first matches of
    `(?i)\\b(keyword)\\b(\\s*[:=]\\s*)`.

    A candidate whose keyword follows a word character is rejected and the search resumes
    one character later, which is what the leading `\\b` does inside the regex engine: the
    boundary depends only on the start position, so every match starting there fails.
    """
    folded = _case_fold(text)
    position = 0
    while (found := _ASSIGNMENT_PREFIX.search(folded, position)) is not None:
        start, end = found.span()
        if start > 0 and _is_rust_word_char(text[start - 1]):
            position = start + 1
            continue
        yield start, end
        position = end


def _is_glue(ch: str) -> bool:
    return not ch.isascii() or ch.isalnum() or ch in "_-"


def _quote_continues(text: str, index: int, quote: str) -> bool:
    """After a quote followed by punctuation: is there another quote before whitespace?"""
    stop = _QUOTE_OR_WHITESPACE[quote].search(text, index)
    return stop is not None and stop.group() == quote


def _scan_value(text: str, start: int) -> tuple[int, str, str, bool] | None:
    """Scan the value after an assignment prefix.

    Returns `(end, inner, quote, closed)`: the value is `text[start:end]`, `inner` is it
    without its quotes, `quote` is the opening quote ("" when unquoted), `closed` says
    whether a closing quote ends it. None when there is no value.
    """
    length = len(text)
    if start >= length or text[start] in _VALUE_WHITESPACE:
        return None
    quote = text[start]
    if quote not in _QUOTES:
        stop = _WHITESPACE_RE.search(text, start)
        end = length if stop is None else stop.start()
        return end, text[start:end], "", False
    special = _QUOTED_SPECIAL[quote]
    index = start + 1
    # Jump between the only characters the scanner reacts to: newline, backslash, quote.
    while (found := special.search(text, index)) is not None:
        index = found.start()
        ch = found.group()
        if ch == "\n":
            break
        if ch == "\\":
            escapes_next = index + 1 < length and text[index + 1] != "\n"
            index += 2 if escapes_next else 1
            continue
        following = text[index + 1] if index + 1 < length else None
        if following == quote:
            index += 2
            continue
        closes = (
            following is None
            or following in _VALUE_WHITESPACE
            or (not _is_glue(following) and not _quote_continues(text, index + 1, quote))
        )
        if closes:
            return index + 1, text[start + 1 : index], quote, True
        index += 1
    else:
        index = length
    return index, text[start + 1 : index], quote, False


def _is_stand_in(value: str) -> bool:
    if value.startswith("[REDACTED:") and value.find("]") == len(value) - 1:
        return True
    lowered = ascii_lower(value)
    return (
        lowered.startswith(_STAND_IN_PREFIXES)
        or (value.startswith("<") and value.endswith(">"))
        or (value.startswith("${") and value.endswith("}"))
        or (value.startswith("{{") and value.endswith("}}"))
        or lowered in _STAND_IN_WORDS
        or (value != "" and value.count(value[0]) == len(value))
    )


def _is_skippable(inner: str) -> bool:
    looks_harmless = len(inner.encode("utf-8")) < _MIN_SECRET_BYTES or _is_stand_in(inner)
    return looks_harmless and next(_assignment_prefixes(inner), None) is None


def _redact_assignments(text: str) -> str:
    folded = _case_fold(text).encode("utf-8", "surrogatepass")
    if _ANY_ASSIGNMENT_PREFIX.search(folded) is None:
        return text
    return _rewrite_assignments(text)


def _rewrite_assignments(text: str) -> str:
    """Step B over `text`, unfiltered."""
    pieces: list[str] = []
    cursor = 0
    for start, prefix_end in list(_assignment_prefixes(text)):
        if start < cursor:
            continue
        value = _scan_value(text, prefix_end)
        if value is None:
            continue
        end, inner, quote, closed = value
        pieces.append(text[cursor:start])
        if _is_skippable(inner):
            pieces.append(text[start:end])
        else:
            closing = quote if closed else ""
            pieces.append(f"{text[start:prefix_end]}{quote}{_REDACTED_SECRET}{closing}")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _redact_private_keys(text: str) -> str:
    """Replace every leftmost `HEADER[\\s\\S]*?FOOTER` match, in linear time.

    A header or footer admits exactly one match per start position (the `[A-Z0-9 ]*` run
    must end where `-----` begins), so the leftmost match is the first header followed by
    the first footer at or after the header's end. When no footer follows a header, none
    follows any later header either, and the scan stops.
    """
    pieces: list[str] = []
    cursor = 0
    while (header := _PRIVATE_KEY_HEADER.search(text, cursor)) is not None:
        footer = _PRIVATE_KEY_FOOTER.search(text, header.end())
        if footer is None:
            break
        pieces.append(text[cursor : header.start()])
        pieces.append(_PRIVATE_KEY_LABEL)
        cursor = footer.end()
    pieces.append(text[cursor:])
    return "".join(pieces)


def redact(text: str) -> str:
    """Return `text` with secrets replaced by `[REDACTED:<LABEL>]` markers."""
    text = _redact_private_keys(text)
    # No substitution happens unless one pattern matches the text as it is here.
    if _ANY_TOKEN.search(text.encode("utf-8", "surrogatepass")) is not None:
        text = _substitute_tokens(text)
    return _redact_assignments(text)


def _substitute_tokens(text: str) -> str:
    """Step A's token shapes over `text`, unfiltered, in order."""
    for pattern, replacement in _TOKEN_PATTERNS:
        text = pattern.sub(replacement, text)
    return text
