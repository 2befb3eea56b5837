"""Pooled judging: the union of several backends' top results, and judgments back to anchors.

Why it exists: labeling from one system's results biases a fixture set toward that system;
TREC's answer is pooling, judging the union of the top results of several systems
(docs/labeling.md#pool). This module owns the judging file (`cce.judging/v1`, one JSON line
per case), the candidates' blind order (sorted by location, so the file reveals neither
which backend found a candidate nor at which rank), and `apply_judgments`, which turns
filled-in judgments into `path@a-b` / `path#kind@a-b` anchors merged with the case's own.
It never runs a backend: the caller passes each backend's ranked results.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.formats import json_text
from cce_fixtures import Anchor, AnchorError, Case

__all__ = [
    "JUDGING_SCHEMA",
    "JUDGMENTS",
    "Applied",
    "Candidate",
    "JudgedCase",
    "JudgingError",
    "apply_judgments",
    "parse_judging",
    "pool_candidates",
    "render_judging_line",
]

JUDGING_SCHEMA: Final = "cce.judging/v1"
JUDGMENTS: Final = ("relevant", "secondary", "not")
SNIPPET_LINES: Final = 3
SNIPPET_CHARS: Final = 120


class JudgingError(ValueError):
    """A judging file line that cannot be applied; `str()` names the file and line."""


@attrs.frozen(slots=True)
class Candidate:
    """One pooled result to judge; `judgment` is None until a judge fills it in."""

    file_path: str
    start_line: int
    end_line: int
    kind: str
    snippet: str = ""
    judgment: str | None = None
    use_kind: bool = False

    @property
    def location(self) -> tuple[str, int, int, str]:
        return (self.file_path, self.start_line, self.end_line, self.kind)

    def anchor(self, with_kind: bool = False) -> str:
        """`path@a-b`, or `path#kind@a-b` when the kind is the point (or `with_kind`)."""
        kind = f"#{self.kind}" if (self.use_kind or with_kind) and self.kind else ""
        return f"{self.file_path}{kind}@{self.start_line}-{self.end_line}"

    def touches(self, other: Candidate) -> bool:
        """True when this candidate's `path@a-b` anchor would also match `other`."""
        return (
            self.file_path == other.file_path
            and other.end_line >= self.start_line
            and other.start_line <= self.end_line
        )


_REJECTED_BESIDE: Final[Mapping[str | None, tuple[str | None, ...]]] = {
    "relevant": ("secondary", "not", None),
    "secondary": ("not", None),
}


class _Spans:
    """Line spans, answering "does any of them touch a-b?" in logarithmic time."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [start for start, _ in ordered]
        # The largest end among the spans that start at or before each one.
        self._reach = list(itertools.accumulate((end for _, end in ordered), max))

    def touch(self, start: int, end: int) -> bool:
        before = bisect.bisect_right(self._starts, end)
        return before > 0 and self._reach[before - 1] >= start


class _Rivals:
    """A case's candidates by judgment, path and kind, so that finding which ones an
    anchor would also match costs a lookup, not a pass over the case."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        by_path: dict[tuple[str | None, str], list[tuple[int, int]]] = {}
        by_kind: dict[tuple[str | None, str, str], list[tuple[int, int]]] = {}
        for c in candidates:
            span = (c.start_line, c.end_line)
            by_path.setdefault((c.judgment, c.file_path), []).append(span)
            by_kind.setdefault((c.judgment, c.file_path, c.kind), []).append(span)
        self._by_path = {key: _Spans(spans) for key, spans in by_path.items()}
        self._by_kind = {key: _Spans(spans) for key, spans in by_kind.items()}

    def touched(self, candidate: Candidate, judgments: Sequence[str | None]) -> bool:
        """Whether a candidate judged one of `judgments` shares the path and a line."""
        return any(
            spans.touch(candidate.start_line, candidate.end_line)
            for spans in (self._by_path.get((j, candidate.file_path)) for j in judgments)
            if spans is not None
        )

    def touched_of_kind(self, candidate: Candidate, judgments: Sequence[str | None]) -> bool:
        """Like `touched`, among the candidates of `candidate`'s kind only."""
        path, kind = candidate.file_path, candidate.kind
        return any(
            spans.touch(candidate.start_line, candidate.end_line)
            for spans in (self._by_kind.get((j, path, kind)) for j in judgments)
            if spans is not None
        )


def _anchor_for(
    candidate: Candidate, rivals: _Rivals, rejected: Sequence[str | None]
) -> tuple[str, bool]:
    """The anchor that matches `candidate` and as few candidates judged one of `rejected`
    as it can; True when one of them is still matched (same path, overlapping lines and
    the same kind, or no kind to tell them apart).

    Anchors match any result whose lines touch the range (docs/fixtures.md#matching), so
    a plain `path@a-b` would also credit an overlapping candidate the judge rejected;
    then the kind is added, which tells the two apart unless they share it.
    """
    if not rivals.touched(candidate, rejected):
        return candidate.anchor(), False
    if not candidate.kind:
        return candidate.anchor(), True
    return candidate.anchor(with_kind=True), rivals.touched_of_kind(candidate, rejected)


@attrs.frozen(slots=True)
class JudgedCase:
    """One judging line: the case it belongs to and its candidates."""

    id: str
    query: str
    candidates: tuple[Candidate, ...]
    line: int = 0


def _snippet(content: str) -> str:
    lines = [line.rstrip() for line in content.split("\n")[:SNIPPET_LINES]]
    return "\n".join(line[:SNIPPET_CHARS] for line in lines).strip("\n")


def pool_candidates(
    ranked_lists: Sequence[Sequence[Any]],
    depth: int,
    protect: Callable[[str, str], str] | None = None,
) -> tuple[Candidate, ...]:
    """The deduplicated union of each list's first `depth` results, in location order.

    Each result offers `file_path`, `start_line`, `end_line`, `kind` and `content` (a
    `cce_retrieval` SearchResult fits). Two results at the same location are one
    candidate; the sort by (path, start, end, kind) hides backend and rank. `protect`
    (text, path) -> text, when given, redacts a result's whole text before its snippet
    is cut from it, so a secret spanning the cut is still seen whole.
    """
    pooled: dict[tuple[str, int, int, str], Candidate] = {}
    for ranked in ranked_lists:
        for hit in ranked[:depth]:
            location = (hit.file_path, hit.start_line, hit.end_line, hit.kind)
            if location in pooled:
                continue
            content = hit.content if protect is None else protect(hit.content, hit.file_path)
            pooled[location] = Candidate(*location, _snippet(content))
    return tuple(pooled[key] for key in sorted(pooled))


def render_judging_line(case: Case, candidates: Sequence[Candidate]) -> str:
    """One judging line (no newline): keys sorted, compact, UTF-8 as is."""
    body = {
        "candidates": [
            {
                "end_line": c.end_line,
                "file_path": c.file_path,
                "judgment": c.judgment,
                "kind": c.kind,
                "snippet": c.snippet,
                "start_line": c.start_line,
            }
            for c in candidates
        ],
        "id": case.id,
        "query": case.query,
        "schema": JUDGING_SCHEMA,
    }
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


_TYPE_NAMES: Final[Mapping[type, str]] = {int: "an integer", str: "a string"}
MAX_ANCHOR_LINE: Final = 2**64 - 1
"""The largest line an anchor's range can name (the fixture contract reads a u64)."""
MAX_REPORTED: Final = 20
"""Problems listed one by one before the rest are only counted."""


def _field(raw: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise JudgingError(f"{where}: {key!r} must be {_TYPE_NAMES.get(kind, kind.__name__)}")
    if isinstance(value, str) and _unpaired_surrogate(value):
        raise JudgingError(
            f"{where}: {key!r} holds an unpaired surrogate escape (such as \\ud800), which "
            "no UTF-8 file can hold; write the text as it is"
        )
    return value


def _unpaired_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _anchor_problem(candidate: Candidate) -> str | None:
    """Why `candidate` cannot be written as the anchor that names it, or None.

    The anchor is read back with the fixture contract's own parser: what it names must be
    the candidate's path, kind and lines, or `cce-fixtures validate` would reject (or
    misread) the fixtures written from it.
    """
    path, kind, lines = (
        candidate.file_path,
        candidate.kind,
        (candidate.start_line, candidate.end_line),
    )
    if not path.strip():
        return "'file_path' is empty; put back the corpus-relative path pool wrote"
    for key, line in (("start_line", candidate.start_line), ("end_line", candidate.end_line)):
        if line > MAX_ANCHOR_LINE:
            return (
                f"{key!r} {line} is past the last line an anchor can name ({MAX_ANCHOR_LINE}); "
                "give the candidate's real line"
            )
    try:
        plain = Anchor.parse(candidate.anchor())
    except AnchorError:
        plain = None
    if plain is None or (plain.file_path, plain.line_range) != (path, lines):
        return (
            f"'file_path' {path!r} cannot be written as an anchor (a '#' or leading or "
            "trailing spaces change what it names); judge that file by hand"
        )
    if candidate.use_kind and not kind:
        return "'use_kind' is true but 'kind' is empty; give the kind or set 'use_kind' to false"
    if kind:
        try:
            kinded = Anchor.parse(candidate.anchor(with_kind=True))
        except AnchorError:
            kinded = None
        if kinded is None or kinded.kind != kind:
            return (
                f"'kind' {kind!r} cannot be written as an anchor (leading or trailing spaces "
                "change what it names); give the kind as pool wrote it"
            )
    return None


def _candidate(raw: object, where: str) -> Candidate:
    if not isinstance(raw, dict):
        raise JudgingError(f"{where}: every candidate must be a JSON object")
    judgment = raw.get("judgment")
    if judgment is not None and judgment not in JUDGMENTS:
        raise JudgingError(
            f"{where}: judgment {judgment!r} is not one of relevant, secondary, not (or null)"
        )
    use_kind = raw.get("use_kind", False)
    if not isinstance(use_kind, bool):
        raise JudgingError(f"{where}: 'use_kind' must be true or false")
    start = _field(raw, "start_line", int, where)
    end = _field(raw, "end_line", int, where)
    if not 1 <= start <= end:
        raise JudgingError(f"{where}: lines {start}-{end} are not a range 1 <= a <= b")
    candidate = Candidate(
        _field(raw, "file_path", str, where),
        start,
        end,
        _field(raw, "kind", str, where),
        raw.get("snippet", "") if isinstance(raw.get("snippet", ""), str) else "",
        judgment,
        use_kind,
    )
    if judgment in ("relevant", "secondary"):
        problem = _anchor_problem(candidate)
        if problem is not None:
            raise JudgingError(f"{where}: {problem}")
    return candidate


def _judged_case(raw: object, where: str, number: int, seen: set[str]) -> JudgedCase:
    """One line's case; JudgingError for the line's first problem."""
    if not isinstance(raw, dict) or raw.get("schema") != JUDGING_SCHEMA:
        raise JudgingError(f"{where}: not a {JUDGING_SCHEMA} line")
    case_id = _field(raw, "id", str, where)
    if case_id in seen:
        raise JudgingError(f"{where}: case {case_id!r} is judged twice")
    seen.add(case_id)
    candidates = raw.get("candidates")
    if not isinstance(candidates, list):
        raise JudgingError(f"{where}: 'candidates' must be an array")
    query = _field(raw, "query", str, where)
    parsed = tuple(
        _candidate(c, f"{where}: candidate {position}")
        for position, c in enumerate(candidates, start=1)
    )
    return JudgedCase(case_id, query, parsed, number)


def parse_judging(path: str, text: str) -> tuple[JudgedCase, ...]:
    """Every non-blank line of a judging file.

    A JudgingError lists the first problem of every bad line (at most `MAX_REPORTED`,
    then how many more), each naming the file, the line and, for a candidate, its
    position, one per line after the first behind `error: `; so one run shows every
    judgment to fix. A candidate judged relevant or secondary must be writable as the
    anchor that names it (`_anchor_problem`).
    """
    cases: list[JudgedCase] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json_text.loads(line)
        except (json.JSONDecodeError, RecursionError) as error:
            problems.append(f"{where}: not JSON ({error})")
            continue
        try:
            cases.append(_judged_case(raw, where, number, seen))
        except JudgingError as error:
            problems.append(str(error))
    if problems:
        shown = problems[:MAX_REPORTED]
        if len(problems) > MAX_REPORTED:
            shown.append(f"{path}: {len(problems) - MAX_REPORTED} more lines with problems")
        raise JudgingError("\nerror: ".join(shown))
    return tuple(cases)


@attrs.frozen(slots=True)
class Applied:
    """The merged cases, with what was left unjudged and which cases are still unlabeled."""

    cases: tuple[dict[str, Any], ...]
    unjudged: Mapping[str, int]
    unlabeled: tuple[str, ...]
    added: int
    overlapping: tuple[str, ...] = ()
    """Anchors that still match a candidate judged otherwise (same path, lines and kind)."""


def _merge(existing: Sequence[Anchor], new: Sequence[str]) -> list[str]:
    """`existing` as written, then each of `new` not already there, in order."""
    merged = [str(anchor) for anchor in existing]
    seen = set(merged)
    for anchor in new:
        if anchor not in seen:
            merged.append(anchor)
            seen.add(anchor)
    return merged


def _within_file(candidate: Candidate, line_count: Callable[[str], int | None]) -> Candidate:
    """`candidate` with its end at the file's last line when its chunk claims one more.

    A chunk that runs to the end of a file ending in a newline is numbered one line
    past it (the chunker's convention, which reports keep); an anchor written from it
    would name a line the file does not have, and `cce check` would flag it.
    """
    lines = line_count(candidate.file_path)
    if lines is None or candidate.end_line <= lines or candidate.start_line > lines:
        return candidate
    return attrs.evolve(candidate, end_line=lines)


def apply_judgments(
    cases: Sequence[Case],
    judged: Sequence[JudgedCase],
    raw_cases: Mapping[str, dict[str, Any]],
    line_count: Callable[[str], int | None] = lambda path: None,
) -> Applied:
    """Merge judged-relevant candidates into `expected` and secondary ones into `secondary`.

    `raw_cases` are the fixture lines as JSON objects by id, so fields cce does not know
    (annotations, tags) survive. A case left with no expected anchor is listed in
    `unlabeled` and left out, so the output always passes `cce-fixtures validate`.
    `line_count` gives a corpus file's number of lines (None: unknown); anchors end at
    the file's last line at most.
    """
    by_id = {j.id: j for j in judged}
    out: list[dict[str, Any]] = []
    unjudged: dict[str, int] = {}
    unlabeled: list[str] = []
    overlapping: list[str] = []
    added = 0
    for case in cases:
        row = dict(raw_cases[case.id])
        verdicts = by_id.get(case.id)
        candidates = verdicts.candidates if verdicts else ()
        relevant: list[str] = []
        secondary: list[str] = []
        rivals = _Rivals(candidates)
        for candidate in candidates:
            if candidate.judgment not in ("relevant", "secondary"):
                continue
            # A relevant anchor must not credit anything else; a secondary one only
            # must not credit what was judged not relevant or left open.
            rejected = _REJECTED_BESIDE[candidate.judgment]
            anchor, ambiguous = _anchor_for(_within_file(candidate, line_count), rivals, rejected)
            if ambiguous:
                overlapping.append(f"{case.id}: {anchor}")
            (relevant if candidate.judgment == "relevant" else secondary).append(anchor)
        open_count = sum(1 for c in candidates if c.judgment is None)
        if open_count:
            unjudged[case.id] = open_count
        expected = _merge(case.expected, relevant)
        added += len(expected) - len(case.expected)
        if not expected:
            unlabeled.append(case.id)
            continue
        row["expected"] = expected
        merged_secondary = _merge(case.secondary, secondary)
        credited = set(expected)
        merged_secondary = [a for a in merged_secondary if a not in credited]
        if merged_secondary:
            row["secondary"] = merged_secondary
        added += len(merged_secondary) - len(case.secondary)
        out.append(row)
    return Applied(tuple(out), unjudged, tuple(unlabeled), added, tuple(overlapping))
