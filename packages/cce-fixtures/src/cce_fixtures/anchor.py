"""Expected-result anchors: their grammar, their display form, and how they match hits.

Why it exists: an anchor is the unit of relevance in a `cce.relevance/v1` fixture
(docs/fixtures.md). Parsing decides which strings are anchors and with which
exact error; matching decides whether a search result counts as relevant. Both live
here so the fixture parser and the metric code agree on one definition.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from cce_fixtures.rust_text import U64_MAX, rust_debug_str, rust_trim

__all__ = ["Anchor", "AnchorError", "SearchHit"]

_ASCII_DIGITS = frozenset("0123456789")
_RANGE_CHARS = _ASCII_DIGITS | {"-"}


class SearchHit(Protocol):
    """What a search result must offer to be matched: its file, node kind and lines.

    Lines are 1-based and inclusive. Read-only properties and plain attributes both fit.
    """

    @property
    def file_path(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def start_line(self) -> int: ...

    @property
    def end_line(self) -> int: ...


class AnchorError(ValueError):
    """An anchor string that the grammar rejects; `message` is the contract's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _empty_kind(text: str) -> AnchorError:
    return AnchorError(f"anchor {rust_debug_str(text)} has an empty kind after '#'")


def _empty_anchor() -> AnchorError:
    return AnchorError(
        "anchor is empty; expected one of path, path#kind, #kind, path@a-b or path#kind@a-b"
    )


def _range_without_path(text: str) -> AnchorError:
    return AnchorError(
        f"anchor {rust_debug_str(text)} has a line range but no file path; "
        "a range needs path@a-b or path#kind@a-b"
    )


def _invalid_range(text: str) -> AnchorError:
    return AnchorError(
        f"anchor {rust_debug_str(text)} has an invalid line range after '@'; "
        "expected a-b with 1 <= a <= b"
    )


def _parse_unsigned(digits: str) -> int | None:
    """A u64 from a non-empty run of ASCII digits (leading zeros allowed), else None."""
    if not digits or not set(digits) <= _ASCII_DIGITS:
        return None
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(U64_MAX)):  # also keeps int() under its 4,300-digit limit
        return None
    value = int(significant)
    return value if value <= U64_MAX else None


def _parse_range_tail(tail: str, anchor_text: str) -> tuple[int, int] | None:
    """The `a-b` range after the last '@', None when the tail is literal path text."""
    trimmed = rust_trim(tail)
    if not trimmed or not set(trimmed) <= _RANGE_CHARS:
        return None
    first_text, separator, last_text = trimmed.partition("-")
    if not separator:
        raise _invalid_range(anchor_text)
    first = _parse_unsigned(first_text)
    last = _parse_unsigned(last_text)
    if first is None or last is None or first == 0 or last < first:
        raise _invalid_range(anchor_text)
    return first, last


@attrs.frozen
class Anchor:
    """One expected result: any present facet (path, node kind, line range) must hold."""

    file_path: str | None
    kind: str | None
    line_range: tuple[int, int] | None

    @classmethod
    def parse(cls, text: str) -> Anchor:
        """Parse `path`, `path#kind`, `#kind`, `path@a-b` or `path#kind@a-b`
        (docs/fixtures.md#parsing-an-anchor).

        The range facet is split off at the last '@' only when the trimmed tail is made of
        digits and '-'; otherwise the '@' is literal path text. Raises AnchorError.
        """
        body, line_range = text, None
        head, at_sign, tail = text.rpartition("@")
        if at_sign:
            line_range = _parse_range_tail(tail, text)
            if line_range is not None:
                body = head
        path_text, hash_sign, kind_text = body.partition("#")
        path = rust_trim(path_text)
        kind = rust_trim(kind_text) if hash_sign else None
        file_path = path or None
        # The order of these checks is the contract: "#" reports an empty kind, "@1-5" an
        # empty anchor, and only then does a range without a path count.
        if kind == "":
            raise _empty_kind(text)
        if file_path is None and kind is None:
            raise _empty_anchor()
        if line_range is not None and file_path is None:
            raise _range_without_path(text)
        return cls(file_path, kind, line_range)

    def matches(self, hit: SearchHit) -> bool:
        """True when every facet this anchor has holds for `hit` (spans need only touch)."""
        if self.file_path is not None and hit.file_path != self.file_path:
            return False
        if self.kind is not None and hit.kind != self.kind:
            return False
        if self.line_range is not None:
            first, last = self.line_range
            if hit.end_line < first or hit.start_line > last:
                return False
        return True

    def __str__(self) -> str:
        """The display form: `path#kind`, `path` or `#kind`, then `@a-b` when ranged."""
        text = self.file_path or ""
        if self.kind is not None:
            text += f"#{self.kind}"
        if self.line_range is not None:
            first, last = self.line_range
            text += f"@{first}-{last}"
        return text
