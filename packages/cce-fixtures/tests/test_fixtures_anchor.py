"""Anchor grammar, display form and matching (docs/fixtures.md#parsing-an-anchor,
docs/fixtures.md#matching, docs/fixtures.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cce_fixtures import Anchor, AnchorError, SearchHit

HitFactory = Callable[[str, str, int, int], SearchHit]


@pytest.mark.parametrize(
    ("text", "file_path", "kind", "line_range"),
    [
        ("auth.py", "auth.py", None, None),
        ("auth.py#function_definition", "auth.py", "function_definition", None),
        ("#interface_declaration", None, "interface_declaration", None),
        ("src/auth.py@10-42", "src/auth.py", None, (10, 42)),
        ("auth.py#function_definition@3-4", "auth.py", "function_definition", (3, 4)),
        ("f.py@7-7", "f.py", None, (7, 7)),
        ("user@host.py", "user@host.py", None, None),
        ("v2@latest.md#section", "v2@latest.md", "section", None),
        ("f.py@3-4#kind", "f.py@3-4", "kind", None),
        ("a@1-2@3-4", "a@1-2", None, (3, 4)),
        ("f.py@ 3-4 ", "f.py", None, (3, 4)),
        ("f.py@", "f.py@", None, None),
        ("a#b#c", "a", "b#c", None),
        ("  auth.py  ", "auth.py", None, None),
        ("007-010", "007-010", None, None),
        ("f.py@007-010", "f.py", None, (7, 10)),
        ("f.py@18446744073709551615-18446744073709551615", "f.py", None, (2**64 - 1, 2**64 - 1)),
        (" f.py # kind @ 1-2", "f.py", "kind", (1, 2)),
    ],
)
def test_parse_accepts(
    text: str, file_path: str | None, kind: str | None, line_range: tuple[int, int] | None
) -> None:
    assert Anchor.parse(text) == Anchor(file_path, kind, line_range)


_RANGE_MESSAGE = "has an invalid line range after '@'; expected a-b with 1 <= a <= b"


@pytest.mark.parametrize(
    "text",
    [
        "f.py@10-",
        "f.py@-42",
        "f.py@42",
        "f.py@42-10",
        "f.py@0-4",
        "f.py@1-2-3",
        "f.py@-",
        "f.py@18446744073709551616-18446744073709551617",
    ],
)
def test_parse_rejects_malformed_ranges(text: str) -> None:
    with pytest.raises(AnchorError) as caught:
        Anchor.parse(text)
    assert str(caught.value) == f'anchor "{text}" {_RANGE_MESSAGE}'


def test_range_error_quotes_the_untrimmed_text_rust_style() -> None:
    with pytest.raises(AnchorError) as caught:
        Anchor.parse(' "q".py\t@9-1 ')
    assert caught.value.message == f'anchor " \\"q\\".py\\t@9-1 " {_RANGE_MESSAGE}'


def test_range_without_path_is_rejected() -> None:
    with pytest.raises(AnchorError) as caught:
        Anchor.parse("#function_definition@1-5")
    assert str(caught.value) == (
        'anchor "#function_definition@1-5" has a line range but no file path; '
        "a range needs path@a-b or path#kind@a-b"
    )


_EMPTY_MESSAGE = (
    "anchor is empty; expected one of path, path#kind, #kind, path@a-b or path#kind@a-b"
)


@pytest.mark.parametrize("text", ["@1-5", "", "   ", "\u3000"])
def test_empty_anchor_is_rejected(text: str) -> None:
    with pytest.raises(AnchorError) as caught:
        Anchor.parse(text)
    assert str(caught.value) == _EMPTY_MESSAGE


@pytest.mark.parametrize("text", ["auth.py#", "#", "auth.py# \t", "#@1-2"])
def test_empty_kind_is_rejected_before_the_empty_check(text: str) -> None:
    with pytest.raises(AnchorError) as caught:
        Anchor.parse(text)
    assert str(caught.value).endswith("has an empty kind after '#'")
    assert str(caught.value).startswith('anchor "')


def test_anchor_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="anchor is empty"):
        Anchor.parse("")


@pytest.mark.parametrize(
    "canonical",
    [
        "auth.py",
        "auth.py#function_definition",
        "#interface_declaration",
        "src/auth.py@10-42",
        "auth.py#function_definition@3-4",
    ],
)
def test_display_form_round_trips_canonical_anchors(canonical: str) -> None:
    assert str(Anchor.parse(canonical)) == canonical


def test_display_form_normalises_whitespace_and_leading_zeros() -> None:
    assert str(Anchor.parse("  f.py # k @ 007-010 ")) == "f.py#k@7-10"


@pytest.mark.parametrize(
    "text",
    [
        "auth.py",
        "auth.py#function_definition",
        "#function_definition",
        "auth.py@1-2",
        "auth.py@2-10",
        "auth.py@1-1",
    ],
)
def test_matches_hit_auth_py_function_lines_1_2(text: str, make_hit: HitFactory) -> None:
    assert Anchor.parse(text).matches(make_hit("auth.py", "function_definition", 1, 2))


@pytest.mark.parametrize(
    "text",
    [
        "payments.py",
        "auth.py#class_definition",
        "#class_definition",
        "auth.py@3-10",
        "payments.py@1-2",
        "auth.py#class_definition@1-2",
    ],
)
def test_does_not_match_hit_auth_py_function_lines_1_2(text: str, make_hit: HitFactory) -> None:
    assert not Anchor.parse(text).matches(make_hit("auth.py", "function_definition", 1, 2))


@pytest.mark.parametrize(
    ("start", "end", "touches"),
    [(1, 9, False), (1, 10, True), (15, 24, True), (20, 20, True), (30, 40, True), (31, 40, False)],
)
def test_range_matches_when_spans_touch(
    start: int, end: int, touches: bool, make_hit: HitFactory
) -> None:
    anchor = Anchor.parse("f.py@10-30")
    assert anchor.matches(make_hit("f.py", "module", start, end)) is touches


def test_path_match_is_exact_string_equality(make_hit: HitFactory) -> None:
    anchor = Anchor.parse("src/auth.py")
    assert not anchor.matches(make_hit("./src/auth.py", "module", 1, 1))
    assert not anchor.matches(make_hit("auth.py", "module", 1, 1))
    assert not anchor.matches(make_hit("src/Auth.py", "module", 1, 1))
