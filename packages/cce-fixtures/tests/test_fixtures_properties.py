"""Property tests: any text or bytes yields a FixtureSet or the contract's error, nothing else."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cce_fixtures import (
    Anchor,
    AnchorError,
    FixtureError,
    FixtureSet,
    decode_fixture_bytes,
    find_problems,
    lint_fixtures,
    parse_fixtures,
)


def _check_contract(text: str) -> None:
    """parse_fixtures and find_problems agree, and only FixtureError ever escapes.

    The lint pass never raises either, and only reports lines that exist.
    """
    line_count = len(text.split("\n"))
    for finding in lint_fixtures(text):
        assert finding.severity in ("error", "warning")
        assert finding.line is None or 1 <= finding.line <= line_count
    problems = find_problems(text)
    assert all(isinstance(problem, FixtureError) for problem in problems)
    try:
        fixtures = parse_fixtures(text)
    except FixtureError as error:
        assert problems, "parse failed but find_problems found nothing"
        assert str(error) == str(problems[0])
        assert error.line == problems[0].line
        if error.line is None:
            assert str(error) == "the fixture set contains no query cases"
        else:
            assert str(error).startswith(f"fixture line {error.line}: ")
        return
    assert problems == []
    assert isinstance(fixtures, FixtureSet)
    assert fixtures.cases
    for case in fixtures.cases:
        assert case.query and case.expected and case.k >= 1


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
_anchor_texts = st.text(alphabet="ab.#@-0123 \t", max_size=12) | st.sampled_from(
    ["auth.py", "#kind", "f.py@3-4", "f.py@0-1", "#", ""]
)
_fixture_objects = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.sampled_from(["cce.relevance/v1", "cce.relevance/v2"]) | _json_values,
        "corpus": st.text(max_size=5) | _json_values,
        "query": st.text(max_size=6) | _json_values,
        "expected": st.lists(_anchor_texts | _json_values, max_size=3) | _json_values,
        "id": st.text(max_size=4) | _json_values,
        "k": st.integers(min_value=-2, max_value=2**65) | _json_values,
        "tags": st.lists(st.text(max_size=3) | _json_values, max_size=2) | _json_values,
        "secondary": st.lists(_anchor_texts | _json_values, max_size=2) | _json_values,
        "K": _json_values,
        "Query": _json_values,
    },
)
_fixture_lines = st.one_of(
    _fixture_objects.map(json.dumps),
    _json_values.map(json.dumps),
    st.text(max_size=30),
    st.sampled_from(["", " ", "\r", "NaN", "[" * 200]),
)


@given(st.text())
def test_any_text_gives_fixtures_or_the_contract_error(text: str) -> None:
    _check_contract(text)


@given(st.binary())
def test_any_bytes_decode_strictly_then_parse(data: bytes) -> None:
    try:
        text = decode_fixture_bytes(data)
    except UnicodeDecodeError:
        return
    assert text.encode("utf-8") == data
    _check_contract(text)


@given(st.lists(_fixture_lines, max_size=6), st.sampled_from(["\n", "\r\n"]))
def test_any_fixture_like_lines_give_fixtures_or_the_contract_error(
    lines: list[str], newline: str
) -> None:
    _check_contract(newline.join(lines))


@given(_fixture_objects)
def test_well_typed_case_objects_parse_to_their_own_values(fields: dict[str, Any]) -> None:
    fields = {**fields, "query": "q", "expected": ["a.py", "#k", "b.py@2-3"]}
    for key in ("schema", "k", "tags", "secondary"):
        fields.pop(key, None)
    fixtures = parse_fixtures(json.dumps(fields))
    case = fixtures.cases[0]
    assert case.query == "q"
    assert case.k == 10
    assert case.id == (fields["id"] if isinstance(fields.get("id"), str) else "q1")
    assert [str(anchor) for anchor in case.expected] == ["a.py", "#k", "b.py@2-3"]


@given(st.text() | st.text(alphabet="ab.#@-0123 \t\u3000", max_size=16))
def test_anchor_parse_gives_an_anchor_or_anchor_error_and_round_trips(text: str) -> None:
    try:
        anchor = Anchor.parse(text)
    except AnchorError as error:
        assert str(error).startswith("anchor ")
        return
    assert anchor.file_path is not None or anchor.kind is not None
    if anchor.line_range is not None:
        assert anchor.file_path is not None
        first, last = anchor.line_range
        assert 1 <= first <= last <= 2**64 - 1
    assert Anchor.parse(str(anchor)) == anchor
