"""Problems the fixture contract allows but a fixture author almost never means.

Why it exists: the reference parser ignores unknown keys, accepts any header
`corpus` value and never compares ids, so a fixture with `"Query"`, `"expect"`,
`"corpus": 5`, two cases called `login` or an anchor `./src/auth.py` parses cleanly
and then scores 0 or reports a confusing "no corpus" much later. This module owns
those checks, kept apart from `cce_fixtures.fixtures` so that `parse_fixtures` keeps
accepting and rejecting exactly what the reference does. Its findings are for tools
that talk to fixture authors: `cce-fixtures validate` and `cce check`.

Severity: a duplicate id and a header `corpus` that is not a non-empty string are
errors (the set cannot mean what it says); near-miss keys and paths the index never
records are warnings (the set is valid, but probably not what was written).
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import attrs

from cce_fixtures.anchor import Anchor, AnchorError
from cce_fixtures.rust_text import rust_debug_str, rust_lines, rust_trim
from cce_fixtures.strict_json import JsonError, load_json_value

__all__ = [
    "CASE_FIELDS",
    "HEADER_FIELDS",
    "Finding",
    "Rule",
    "Severity",
    "is_absolute_anchor_path",
    "lint_fixtures",
    "normalised_anchor_path",
]

Severity = Literal["error", "warning"]

CASE_FIELDS = ("query", "expected", "id", "k", "tags", "secondary")
"""The keys a case line may carry with a meaning (every other key is an annotation)."""
HEADER_FIELDS = ("schema", "corpus")
"""The keys a header line may carry with a meaning."""

# How similar (difflib ratio, after lower-casing) a key must be to a field to look
# like a typo of it: "expect"/"expected" 0.86, "querry"/"query" 0.91, "ids"/"id" 0.8,
# while annotations such as "note", "kind" or "title" stay well below.
_TYPO_CUTOFF = 0.8
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


Rule = Literal["contract", "duplicate-id", "corpus-value", "near-miss-key", "anchor-path"]


@attrs.frozen
class Finding:
    """One finding: its 1-based line (None for the whole file), severity and message.

    `rule` names the check, so a tool with more context (`cce check` knows the index)
    can leave out the findings it reports more precisely itself.
    """

    line: int | None
    severity: Severity
    message: str
    rule: Rule = "contract"


def _resembled_field(key: str, fields: tuple[str, ...]) -> str | None:
    """The field `key` looks like a misspelling of, or None."""
    if key in fields:
        return None
    lowered = {field.lower(): field for field in fields}
    if key.lower() in lowered:
        return lowered[key.lower()]
    close = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=_TYPO_CUTOFF)
    return lowered[close[0]] if close else None


def _key_findings(
    fields: Mapping[str, Any], known: tuple[str, ...], number: int
) -> Iterator[Finding]:
    for key in fields:
        field = _resembled_field(key, known)
        # Both spellings present: the odd one is an annotation, not a typo.
        if field is None or field in fields:
            continue
        yield Finding(
            number,
            "warning",
            f"key {rust_debug_str(key)} is ignored; did you mean {rust_debug_str(field)}? "
            "(keys are case-sensitive)",
            "near-miss-key",
        )


def normalised_anchor_path(path: str) -> str | None:
    """The form of a relative `path` the index would record, or None when it is that.

    Backslashes become `/`; `.` components, `x/..` pairs, repeated and trailing
    separators go. Absolute paths need the corpus root; see `is_absolute_anchor_path`.
    """
    normal = posixpath.normpath(path.replace("\\", "/"))
    return None if normal == path else normal


def is_absolute_anchor_path(path: str) -> bool:
    """True for `/x`, `\\x` and `C:\\x` / `C:/x` paths (never recorded by the index)."""
    return path.startswith(("/", "\\")) or bool(_WINDOWS_DRIVE.match(path))


def _path_finding(anchor_text: str, anchor: Anchor, number: int) -> Finding | None:
    path = anchor.file_path
    if path is None:
        return None
    quoted = rust_debug_str(anchor_text)
    if is_absolute_anchor_path(path):
        return Finding(
            number,
            "warning",
            f"anchor {quoted}: an absolute path never matches; write it relative to the "
            "corpus directory, with '/' separators",
            "anchor-path",
        )
    normal = normalised_anchor_path(path)
    if (normal or path) == ".." or (normal or path).startswith("../"):
        return Finding(
            number,
            "warning",
            f"anchor {quoted}: a path outside the corpus never matches",
            "anchor-path",
        )
    if normal is None:
        return None
    rule = (
        "paths with '/' separators"
        if "\\" in path
        else "normalised paths, without './', '.', '..' or empty parts"
    )
    suggestion = str(attrs.evolve(anchor, file_path=normal))
    return Finding(
        number,
        "warning",
        f"anchor {quoted}: the index records {rule}; write {rust_debug_str(suggestion)}",
        "anchor-path",
    )


def _anchor_findings(fields: Mapping[str, Any], number: int) -> Iterator[Finding]:
    for field in ("expected", "secondary"):
        anchors = fields.get(field)
        if not isinstance(anchors, list):
            continue
        for text in anchors:
            if not isinstance(text, str):
                continue
            try:
                anchor = Anchor.parse(text)
            except AnchorError:
                continue
            finding = _path_finding(text, anchor, number)
            if finding is not None:
                yield finding


def _corpus_finding(fields: Mapping[str, Any], number: int) -> Finding | None:
    if "corpus" not in fields:
        return None
    corpus = fields["corpus"]
    if isinstance(corpus, str) and corpus:
        return None
    if corpus is None or corpus == "":
        shown = "null" if corpus is None else "an empty string"
    else:
        shown = f"{_json_type(corpus)} {_short(corpus)}"
    return Finding(
        number,
        "error",
        f'the header\'s "corpus" is {shown}, so it names no corpus; give the directory '
        'to index as a string relative to this file, e.g. "corpus":"../src"',
        "corpus-value",
    )


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def lint_fixtures(text: str) -> list[Finding]:
    """Every finding of a fixture file's text, in line order (errors before warnings).

    Lines that are not JSON objects are skipped here; `find_problems` reports them.
    A leading byte-order mark is ignored, for the same reason.
    """
    findings: list[Finding] = []
    first_line_of_id: dict[str, int] = {}
    for number, line in enumerate(rust_lines(text), start=1):
        line = line.removeprefix("\ufeff")
        if not rust_trim(line):
            continue
        try:
            value = load_json_value(line)
        except JsonError:
            continue
        if not isinstance(value, dict):
            continue
        if "schema" in value and "query" not in value:
            corpus = _corpus_finding(value, number)
            if corpus is not None:
                findings.append(corpus)
            findings.extend(_key_findings(value, HEADER_FIELDS, number))
            continue
        case_id = value.get("id")
        if not isinstance(case_id, str):
            case_id = f"q{number}"
        first = first_line_of_id.setdefault(case_id, number)
        if first != number:
            findings.append(
                Finding(
                    number,
                    "error",
                    f"duplicate case id {rust_debug_str(case_id)} (first used on line "
                    f"{first}); give every case its own id",
                    "duplicate-id",
                )
            )
        findings.extend(_key_findings(value, CASE_FIELDS, number))
        findings.extend(_anchor_findings(value, number))
    return findings
