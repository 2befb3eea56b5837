"""Fixture anchors checked against an index: which can never match, and why.

Why it exists: an anchor that matches no chunk scores 0 without a word - a typo'd
path, a kind from another language, a range past the end of the file, a file the
walker never indexes. Fixture sets are hand-written and the code under them moves,
so `cce check` and `cce relevance` both need to say when a label no longer points at
anything, with what to write instead. This module owns that analysis (the facts of an
index it needs, the diagnosis of one dead anchor, the case-level checks); it prints
nothing. Why a file on disk is not indexed comes from the walker's own rules
(`cce_retrieval.walk.exclusion`); it is not re-derived here.

Problems are errors (the anchor can never match; the case can only score 0) or
warnings (it matches, but not as its author probably meant: a range that runs past the
end of the file, or a range only satisfied by chunks many times larger than it).
"""

from __future__ import annotations

import difflib
import json
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import attrs

from cce_cli.formats import input_files
from cce_cli.output import display_text, visible_controls
from cce_fixtures import Anchor, Case, FixtureSet, normalised_anchor_path
from cce_retrieval import Chunk, Exclusion, Index, why_not_indexed

__all__ = [
    "LARGE_CHUNK_FACTOR",
    "UNDIAGNOSED",
    "CorpusFacts",
    "Problem",
    "diagnose",
    "file_line_count",
    "fixture_problems",
]

Severity = Literal["error", "warning"]

LARGE_CHUNK_FACTOR: Final = 5
"""A ranged anchor whose smallest matching chunk is at least this many times longer than
the range is flagged: the chunk-level hit hides the miss that tok-IoU shows."""
_LARGE_CHUNK_MIN_LINES: Final = 20  # below this, a chunk is small whatever the range
_MAX_LISTED: Final = 8  # kinds or spans listed in one message
_MAX_NAMES: Final = 5  # file names close to a missing one whose paths are compared in full


@attrs.frozen(slots=True)
class Problem:
    """One finding of a fixture file: where, how bad, about what, and what to do.

    `case_id` and `anchor` (its text as written) are None for problems of a whole file
    or case; `hint` is the suggestion, when there is one.
    """

    file: str
    line: int | None
    severity: Severity
    message: str
    case_id: str | None = None
    anchor: str | None = None
    hint: str | None = None

    def text(self, label: bool = True) -> str:
        """`FILE:LINE: [warning: ]case ID: anchor "...": message; hint`.

        Without `label` there is no `warning: ` (for callers that prefix every line).
        """
        shown = display_text(self.file)
        where = shown if self.line is None else f"{shown}:{self.line}"
        parts = [where]
        body = "warning: " if label and self.severity == "warning" else ""
        if self.case_id is not None:
            body += f"case {display_text(self.case_id)}: "
        if self.anchor is not None:
            body += f"anchor {_quote(self.anchor)}: "
        # Messages and hints quote corpus file names; none may reach the terminal raw.
        body += visible_controls(self.message)
        if self.hint:
            body += f"; {visible_controls(self.hint)}"
        parts.append(body)
        return ": ".join(parts)


def _quote(text: str) -> str:
    # JSON quoting: the anchor as it would be written in the fixture line. JSON escapes
    # C0 controls itself; DEL, C1 and bidi controls are spelled the same way.
    return visible_controls(json.dumps(text, ensure_ascii=False))


def _quoted_list(items: Iterable[str]) -> str:
    listed = list(items)
    shown = ", ".join(listed[:_MAX_LISTED])
    more = len(listed) - _MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def file_line_count(text: str) -> int:
    """Lines as the chunker numbers them: a final newline does not open a new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


@attrs.frozen
class CorpusFacts:
    """What anchor checks need to know about one index, computed once.

    `root` is the corpus directory on disk when it is reachable (always for `--dir`
    and header corpora; for a store, when its directory can be found), so that the
    walker can say why a file is absent and line counts come from the files.
    """

    chunks_by_path: dict[str, list[Chunk]]
    kinds: frozenset[str]
    root: str | None
    _line_counts: dict[str, tuple[int, bool]] = attrs.field(factory=dict, eq=False)
    _by_name: dict[str, list[str]] = attrs.field(factory=dict, eq=False)

    @classmethod
    def of(cls, index: Index, root: str | None) -> CorpusFacts:
        by_path: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in index.chunks:
            by_path[chunk.file_path].append(chunk)
        kinds = frozenset(chunk.kind for chunk in index.chunks)
        # Sorted once, so suggestions list paths in a stable order without re-sorting.
        return cls({path: by_path[path] for path in sorted(by_path)}, kinds, root)

    @property
    def paths(self) -> list[str]:
        """Every indexed path, sorted."""
        return list(self.chunks_by_path)

    def line_count(self, path: str) -> tuple[int, bool]:
        """The file's line count and whether it was read from disk (else: last chunk line)."""
        if path not in self._line_counts:
            self._line_counts[path] = self._count_lines(path)
        return self._line_counts[path]

    def _count_lines(self, path: str) -> tuple[int, bool]:
        if self.root is not None:
            try:
                data = input_files.read_input(f"{self.root}/{path}", input_files.CODE)
                text = data.decode("utf-8")
                return file_line_count(text), True
            except (OSError, UnicodeDecodeError):
                pass
        return max(chunk.end_line for chunk in self.chunks_by_path[path]), False

    def similar_named(self, path: str) -> list[str]:
        """Indexed paths whose file name is close to `path`'s (difflib over the distinct
        names, which are far fewer and shorter than the paths), in path order."""
        if not self._by_name:
            for indexed in self.chunks_by_path:
                self._by_name.setdefault(_file_name(indexed), []).append(indexed)
        names = difflib.get_close_matches(
            _file_name(path), list(self._by_name), n=_MAX_NAMES, cutoff=0.6
        )
        return sorted(indexed for name in names for indexed in self._by_name[name])

    def matching(self, anchor: Anchor) -> list[Chunk]:
        """Every chunk of the index the anchor matches."""
        if anchor.file_path is not None:
            candidates: Iterable[Chunk] = self.chunks_by_path.get(anchor.file_path, ())
        else:
            candidates = (chunk for chunks in self.chunks_by_path.values() for chunk in chunks)
        return [chunk for chunk in candidates if anchor.matches(chunk)]


def _folded(path: str) -> str:
    return unicodedata.normalize("NFC", path).casefold()


def _closest(text: str, candidates: Sequence[str]) -> list[str]:
    """The difflib-closest candidates: the best, and any as close as it (within 0.05)."""
    close = difflib.get_close_matches(text, candidates, n=3, cutoff=0.6)
    if not close:
        return []

    def ratio(candidate: str) -> float:
        return difflib.SequenceMatcher(None, candidate, text).ratio()

    best = ratio(close[0])
    return [candidate for candidate in close if ratio(candidate) >= best - 0.05]


def _path_suggestions(path: str, facts: CorpusFacts) -> list[str]:
    """Indexed paths the author may have meant, most likely first."""
    paths = facts.paths
    indexed = set(paths)
    found: list[str] = []

    def add(candidates: Iterable[str]) -> None:
        for candidate in candidates:
            if candidate not in found:
                found.append(candidate)

    normal = normalised_anchor_path(path)
    if normal is not None and normal in indexed:
        add([normal])
    folded = _folded(normal or path)
    add(candidate for candidate in paths if _folded(candidate) == folded)
    # The corpus is a subdirectory of the anchors' root, or the other way round.
    add(candidate for candidate in paths if path.endswith("/" + candidate))
    add(candidate for candidate in paths if candidate.endswith("/" + path))
    add(_closest(path, facts.similar_named(path)))
    base = _file_name(path)
    add(candidate for candidate in paths if _file_name(candidate) == base)
    return found[:3]


def _did_you_mean(anchor: Anchor, paths: Sequence[str]) -> str | None:
    if not paths:
        return None
    shown = ", ".join(_quote(str(attrs.evolve(anchor, file_path=path))) for path in paths)
    return f"did you mean {shown}?"


_REASON_HINTS: Final = {
    Exclusion.PRUNED_DIRECTORY: "the walker never indexes it; label a file outside it",
    Exclusion.DOT_DIRECTORY: "the walker never indexes it; label a file outside it",
    Exclusion.GITIGNORE: "the walker honours .gitignore; label another file or unignore it",
    Exclusion.SENSITIVE: "files with secret-like names are never read",
    Exclusion.UNSUPPORTED_EXTENSION: "label another file",
    Exclusion.SIZE_LIMIT: "split the file or label another one",
    Exclusion.NOT_UTF8: "save it as UTF-8 or label another file",
    Exclusion.SYMLINK: "label the file the link points to",
}


def _missing_path(anchor: Anchor, path: str, facts: CorpusFacts) -> tuple[str, str | None]:
    """Message and hint for an anchor whose path is not in the index."""
    reason = why_not_indexed(facts.root, path) if facts.root is not None else None
    if facts.root is not None and reason is None:
        # On disk and walkable, yet absent: only a store can be that far behind.
        return (
            f"path {path} is not in the store, but the file is on disk and would be indexed",
            "the store is older than the corpus; run cce index again",
        )
    if reason is not None and reason.rule is not Exclusion.MISSING:
        return f"path {path} is not indexed: {reason.message}", _REASON_HINTS.get(reason.rule)
    suggestions = _path_suggestions(path, facts)
    hint = _did_you_mean(anchor, suggestions)
    if suggestions and _folded(suggestions[0]) == _folded(path):
        # The two may look identical on screen; say what differs.
        best = suggestions[0]
        if unicodedata.normalize("NFC", best) == unicodedata.normalize("NFC", path):
            differs = "Unicode normalisation (NFC/NFD)"
        elif best.casefold() == path.casefold():
            differs = "letter case"
        else:
            differs = "letter case and Unicode normalisation"
        hint = f"{hint} (the names differ only in {differs})"
    return f"path {path} is not in the index", hint


def _kind_hint(anchor: Anchor, kind: str, kinds: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(kind, kinds, n=1, cutoff=0.5)
    if not close:
        return None
    return f"did you mean {_quote(str(attrs.evolve(anchor, kind=close[0])))}?"


def _spans(chunks: Sequence[Chunk]) -> str:
    return _quoted_list(
        f"{chunk.start_line}-{chunk.end_line} {chunk.kind}"
        for chunk in sorted(chunks, key=lambda chunk: (chunk.start_line, chunk.end_line))
    )


def diagnose(anchor: Anchor, facts: CorpusFacts) -> tuple[str, str | None]:
    """Why an anchor that matches no chunk is dead: the problem and a suggestion."""
    path, kind = anchor.file_path, anchor.kind
    if path is None:
        kinds = sorted(facts.kinds)
        assert kind is not None  # the grammar gives every anchor a path or a kind
        return (
            f"kind {kind} occurs nowhere in the corpus; kinds that do: {_quoted_list(kinds)}",
            _kind_hint(anchor, kind, kinds),
        )
    chunks = facts.chunks_by_path.get(path)
    if not chunks:
        return _missing_path(anchor, path, facts)
    kinds_here = sorted({chunk.kind for chunk in chunks})
    if kind is not None and kind not in kinds_here:
        return (
            f"kind {kind} never occurs in {path}; kinds there: {_quoted_list(kinds_here)}",
            _kind_hint(anchor, kind, kinds_here),
        )
    assert anchor.line_range is not None  # path (and kind) alone would have matched
    first, last = anchor.line_range
    lines, from_disk = facts.line_count(path)
    if first > lines:
        counted = f"{lines} lines" if from_disk else f"its chunks end at line {lines}"
        return f"lines {first}-{last} lie past the end of {path} ({counted})", None
    of_kind = [chunk for chunk in chunks if kind is None or chunk.kind == kind]
    what = f"{kind} chunk" if kind is not None else "chunk"
    return (
        f"no {what} of {path} touches lines {first}-{last}; they span {_spans(of_kind)}",
        None,
    )


def _live_range_warnings(
    anchor: Anchor, matched: Sequence[Chunk], facts: CorpusFacts
) -> str | None:
    """A warning for a ranged anchor that matches, but not as meant; None when fine."""
    assert anchor.line_range is not None and anchor.file_path is not None
    first, last = anchor.line_range
    lines, from_disk = facts.line_count(anchor.file_path)
    if from_disk and last > lines:
        return (
            f"lines {first}-{last} run past the end of {anchor.file_path} ({lines} lines), "
            "so token recall can never reach 1"
        )
    width = last - first + 1
    smallest = min(chunk.end_line - chunk.start_line + 1 for chunk in matched)
    if smallest >= max(LARGE_CHUNK_FACTOR * width, _LARGE_CHUNK_MIN_LINES):
        kinds = _quoted_list(sorted({chunk.kind for chunk in matched}))
        return (
            f"only chunks of {smallest}+ lines touch this {width}-line range (kinds: {kinds}), "
            "so any of them counts as a hit while tok-IoU shows the miss; consider "
            "path#kind@a-b to say which chunk is meant"
        )
    return None


def _anchor_texts(case: Case) -> list[tuple[str, Anchor, bool]]:
    """(display text, anchor, is_expected) for every anchor of a case."""
    return [(str(anchor), anchor, True) for anchor in case.expected] + [
        (str(anchor), anchor, False) for anchor in case.secondary
    ]


UNDIAGNOSED: Final = "matches no chunk of the index"
"""The message of a dead anchor past `fixture_problems`' diagnosis limit."""


def fixture_problems(
    file: str, fixture_set: FixtureSet, facts: CorpusFacts, diagnose_limit: int | None = None
) -> list[Problem]:
    """Every anchor problem of a parsed fixture set against one index, in line order.

    Per anchor (expected, then secondary): an error when it is dead, with the reason;
    a warning when it matches only in a way its author is unlikely to mean. Per case:
    an error when every expected anchor is dead. Finding the closest paths costs a
    fuzzy search over the index, so a caller that shows only the first few dead
    anchors can stop diagnosing after `diagnose_limit`; later ones say `UNDIAGNOSED`.
    """
    problems: list[Problem] = []
    diagnosed = 0
    for case in fixture_set.cases:
        dead_expected = 0
        for text, anchor, is_expected in _anchor_texts(case):
            matched = facts.matching(anchor)
            if not matched:
                dead_expected += is_expected
                message, hint = UNDIAGNOSED, None
                if diagnose_limit is None or diagnosed < diagnose_limit:
                    message, hint = diagnose(anchor, facts)
                    diagnosed += 1
                problems.append(Problem(file, case.line, "error", message, case.id, text, hint))
            elif anchor.line_range is not None:
                warning = _live_range_warnings(anchor, matched, facts)
                if warning is not None:
                    problems.append(Problem(file, case.line, "warning", warning, case.id, text))
        # With one expected anchor its own line already says everything.
        if dead_expected == len(case.expected) > 1:
            problems.append(
                Problem(
                    file,
                    case.line,
                    "error",
                    "every expected anchor is dead, so the case scores 0 whatever the backend",
                    case.id,
                )
            )
    problems.extend(_wrong_corpus(file, fixture_set, facts))
    return problems


def _wrong_corpus(file: str, fixture_set: FixtureSet, facts: CorpusFacts) -> list[Problem]:
    """A file-level warning when no anchor path at all is in the index (two or more)."""
    paths = {
        anchor.file_path
        for case in fixture_set.cases
        for anchor in (*case.expected, *case.secondary)
        if anchor.file_path is not None
    }
    if len(paths) < 2 or paths & facts.chunks_by_path.keys():
        return []
    return [
        Problem(
            file,
            None,
            "warning",
            f"none of the {len(paths)} anchor paths is in the index; anchors are relative "
            "to the corpus directory, so check that it is the right one (--dir, --store or "
            'the header\'s "corpus")',
        )
    ]
