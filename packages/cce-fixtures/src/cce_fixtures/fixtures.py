"""The `cce.relevance/v1` fixture contract: cases, fixture sets and line-numbered errors.

Why it exists: a fixture set is NDJSON (one optional header line, then query cases),
and every tool that reads one must accept and reject exactly what the reference does,
with the same messages (docs/fixtures.md). This module owns that contract:
the value types, the cattrs converter that turns a parsed line into a `Case` (its
structure hooks run the contract's checks in the contract's order), and two entry
points over one scanner - `parse_fixtures` (stop at the first problem, like the
reference) and `find_problems` (keep going, for the pre-commit validator).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import cattrs

from cce_fixtures.anchor import Anchor, AnchorError
from cce_fixtures.rust_text import U64_MAX, rust_debug_str, rust_lines, rust_trim
from cce_fixtures.strict_json import JsonError, load_json_value

__all__ = [
    "DEFAULT_K",
    "MAX_K",
    "SCHEMA_ID",
    "Case",
    "FixtureError",
    "FixtureSet",
    "decode_fixture_bytes",
    "find_problems",
    "fixture_converter",
    "parse_fixtures",
]

SCHEMA_ID = "cce.relevance/v1"
# The reference's search default (`DEFAULT_TOP_K`), used when a case gives no "k".
DEFAULT_K = 10
# The largest "k" a case may give: the reference reads it as a u64.
MAX_K = U64_MAX


@attrs.frozen
class Case:
    """One labelled query: search `query`, judge the top `k` against `expected`.

    `line` is the case's 1-based line in its file; an absent id defaults to `q<line>`.
    `tags` label the case for per-tag aggregates; `secondary` anchors are relevant but
    not expected (graded metrics give them a lower gain). Both are optional fields
    beyond the reference contract and default to empty.
    """

    id: str
    query: str
    expected: tuple[Anchor, ...]
    k: int
    line: int
    tags: tuple[str, ...] = ()
    secondary: tuple[Anchor, ...] = ()


@attrs.frozen
class FixtureSet:
    """A parsed fixture file: the header's corpus (None when absent) and its cases."""

    corpus: str | None
    cases: tuple[Case, ...]


class FixtureError(ValueError):
    """A fixture set that breaks the contract.

    `message` is the full text (`fixture line N: ...` for a line, or a file-level text);
    `line` is N, or None for a problem of the whole set; `detail` is the message
    without its `fixture line N: ` prefix, for tools that print the line themselves.
    """

    def __init__(self, detail: str, line: int | None) -> None:
        message = detail if line is None else f"fixture line {line}: {detail}"
        super().__init__(message)
        self.message = message
        self.line = line
        self.detail = detail

    def __str__(self) -> str:
        return self.message


class _LineProblem(ValueError):
    """A case-field check failed; the scanner adds the line number."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@attrs.frozen
class _CaseLine:
    """What the converter structures a `Case` from: the line number and its JSON object."""

    number: int
    fields: Mapping[str, Any]


# Marker types so the converter can route "expected" and "k" to their own hooks.
_Expected = tuple[Anchor, ...]
# "secondary" anchors go through their own hook so its messages name that field.
_SECONDARY_ELEMENT = '"secondary" must be an array of anchor strings'


class _CaseK(int):
    """The validated `k` of a case (only a type for converter dispatch)."""


def _structure_query(value: Any) -> str:
    query = rust_trim(value) if isinstance(value, str) else ""
    if not query:
        raise _LineProblem('"query" must be a string that is not blank')
    return query


def _structure_anchor(value: Any, _: type) -> Anchor:
    if not isinstance(value, str):
        raise _LineProblem('every anchor in "expected" must be a JSON string')
    try:
        return Anchor.parse(value)
    except AnchorError as error:
        raise _LineProblem(error.message) from None


def _structure_expected(value: Any, _: Any) -> _Expected:
    if not isinstance(value, list) or not value:
        raise _LineProblem('"expected" must be a non-empty array of anchors')
    return tuple(fixture_converter.structure(element, Anchor) for element in value)


def _structure_secondary(value: Any) -> tuple[Anchor, ...]:
    if not isinstance(value, list):
        raise _LineProblem(_SECONDARY_ELEMENT)
    anchors = []
    for element in value:
        if not isinstance(element, str):
            raise _LineProblem(_SECONDARY_ELEMENT)
        try:
            anchors.append(Anchor.parse(element))
        except AnchorError as error:
            raise _LineProblem(f'"secondary": {error.message}') from None
    return tuple(anchors)


def _structure_tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise _LineProblem('"tags" must be an array of strings')
    return tuple(value)


def _structure_k(value: Any, _: type) -> _CaseK:
    # bool is an int subclass in Python but not a JSON integer; floats (even 5.0) and
    # integers past u64 (which strict_json hands over as floats) are not integers either.
    if type(value) is not int or not 1 <= value <= MAX_K:
        raise _LineProblem('"k" must be a positive integer')
    return _CaseK(value)


def _structure_case(source: _CaseLine, _: type) -> Case:
    """Build a Case, checking query, expected (array, then each anchor), id, k in order.

    The optional fields come last (tags, then secondary), so a line the reference
    rejects gets the reference's message first.
    """
    fields = source.fields
    query = _structure_query(fields.get("query"))
    expected = fixture_converter.structure(fields.get("expected"), _Expected)
    case_id = fields.get("id")
    if not isinstance(case_id, str):
        case_id = f"q{source.number}"
    k = fixture_converter.structure(fields["k"], _CaseK) if "k" in fields else DEFAULT_K
    tags = _structure_tags(fields["tags"]) if "tags" in fields else ()
    secondary = _structure_secondary(fields["secondary"]) if "secondary" in fields else ()
    return Case(
        id=case_id,
        query=query,
        expected=expected,
        k=int(k),
        line=source.number,
        tags=tags,
        secondary=secondary,
    )


def _unstructure_case(case: Case) -> dict[str, Any]:
    """A case as the contract's JSON object (its line number is not part of the line).

    The optional fields appear only when set, so a plain case keeps its four keys.
    """
    fields: dict[str, Any] = {
        "id": case.id,
        "query": case.query,
        "expected": [str(anchor) for anchor in case.expected],
        "k": case.k,
    }
    if case.tags:
        fields["tags"] = list(case.tags)
    if case.secondary:
        fields["secondary"] = [str(anchor) for anchor in case.secondary]
    return fields


fixture_converter = cattrs.Converter()
"""Structures `Case` from `_CaseLine` with the contract's checks; unstructures a `Case`
to its JSON object and an `Anchor` to its display string (which parses back to it)."""
fixture_converter.register_structure_hook(Anchor, _structure_anchor)
fixture_converter.register_structure_hook_func(lambda cl: cl == _Expected, _structure_expected)
fixture_converter.register_structure_hook(_CaseK, _structure_k)
fixture_converter.register_structure_hook(Case, _structure_case)
fixture_converter.register_unstructure_hook(Anchor, str)
fixture_converter.register_unstructure_hook(Case, _unstructure_case)


def decode_fixture_bytes(data: bytes) -> str:
    """Decode a fixture file strictly as UTF-8 (no BOM stripping); UnicodeDecodeError else."""
    return data.decode("utf-8", errors="strict")


@attrs.define
class _ScanState:
    """What the scanner has seen so far; the header rule depends on it."""

    header_seen: bool = False
    case_lines_seen: bool = False
    corpus: str | None = None
    cases: list[Case] = attrs.Factory(list)


def _scan_header(fields: Mapping[str, Any], number: int, state: _ScanState) -> None:
    if state.header_seen or state.case_lines_seen:
        state.header_seen = True
        raise FixtureError('the "schema" header must be the first non-blank line', number)
    state.header_seen = True
    schema = fields["schema"]
    if not isinstance(schema, str):
        schema = ""
    if schema != SCHEMA_ID:
        raise FixtureError(
            f"unsupported schema {rust_debug_str(schema)}; expected {rust_debug_str(SCHEMA_ID)}",
            number,
        )
    corpus = fields.get("corpus")
    state.corpus = corpus if isinstance(corpus, str) and corpus else None


def _scan_line(line: str, number: int, state: _ScanState) -> None:
    """Classify one line (docs/fixtures.md#classifying-lines) and apply it to `state`; raise
    FixtureError."""
    if not rust_trim(line):
        return
    try:
        value = load_json_value(line)
    except JsonError as error:
        raise FixtureError(f"invalid JSON: {error.detail}", number) from None
    if not isinstance(value, dict):
        raise FixtureError("must be a JSON object", number)
    if "schema" in value and "query" not in value:
        _scan_header(value, number, state)
        return
    # A broken case line still counts as a case for the header rule: once it is fixed,
    # a header after it would be out of place too.
    state.case_lines_seen = True
    try:
        case = fixture_converter.structure(_CaseLine(number, value), Case)
    except _LineProblem as problem:
        raise FixtureError(problem.detail, number) from None
    state.cases.append(case)


_BOM = "\ufeff"


def _bom_problem(number: int) -> FixtureError:
    # serde rejects a byte-order mark as invalid JSON; say what to do about it.
    if number == 1:
        detail = "file starts with a UTF-8 byte-order mark; save it without BOM"
    else:
        detail = "line starts with a byte-order mark (U+FEFF); delete it"
    return FixtureError(f"invalid JSON: {detail}", number)


def _scan(text: str, state: _ScanState) -> Iterator[FixtureError]:
    """Yield every problem in line order, then the set-level one; fill `state`.

    A line that starts with a byte-order mark is reported, then judged without it,
    so the validator also lists what would be wrong once the mark is gone.
    """
    for number, line in enumerate(rust_lines(text), start=1):
        if line.startswith(_BOM):
            yield _bom_problem(number)
            line = line[len(_BOM) :]
        try:
            _scan_line(line, number, state)
        except FixtureError as problem:
            yield problem
    if not state.case_lines_seen:
        yield FixtureError("the fixture set contains no query cases", None)


def parse_fixtures(text: str) -> FixtureSet:
    """Parse a whole fixture file's text; the first problem raises FixtureError
    (docs/fixtures.md#cases)."""
    state = _ScanState()
    for problem in _scan(text, state):
        raise problem
    return FixtureSet(corpus=state.corpus, cases=tuple(state.cases))


def find_problems(text: str) -> list[FixtureError]:
    """Every problem of a fixture file's text, in line order; empty when it parses.

    The first problem is the one `parse_fixtures` raises. Later ones are found by
    carrying on after a bad line: a bad header still counts as the header, a bad case
    line still counts as a case, and "no query cases" is reported only when no line
    looked like a case at all.
    """
    return list(_scan(text, _ScanState()))
