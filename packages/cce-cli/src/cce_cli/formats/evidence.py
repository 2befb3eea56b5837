"""What each labeled query retrieved, with a few lines of code per result: a report's evidence.

Why it exists: a score says that a query got worse; a reviewer's next question is what
came back instead. The `cce.run/v1` results files (`cce relevance --results`) hold each
(backend, case)'s ranked results but no code, and the fixtures hold the expected
anchors. This module owns reading those back for the reviewer-facing renderings (the
HTML report, the query text of the pull-request comment): which results file answers
for which side, the anchors of each case, and the first lines of each result's code.
Nothing here changes a score.

The code shown is what the index kept, never more (docs/hostile-input.md#report-code):
the text a run stored for the chunk when the run is in hand, otherwise the file read
back through strict protection, re-chunked, and shown only when the chunk the results
file names (its id covers the path, the lines and the first content bytes) is found in
it, so redaction that moved line numbers cannot put raw lines on the page. A results
file is input: the corpus its header names is read only when it lies inside the
working directory (or `--corpus` names the corpus), and a path into it never climbs
out, follows a symlink, or reaches a file the walk would not index.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.formats.results_file import RunRecord, parse_run
from cce_cli.formats.scores import BackendReport
from cce_cli.output import display_text
from cce_fixtures import FixtureError, FixtureSet, decode_fixture_bytes, parse_fixtures
from cce_retrieval import Chunk, chunk_file, describe_os_error, protect_text, why_not_indexed

__all__ = [
    "CODE_LINES",
    "CODE_WIDTH",
    "Evidence",
    "Hit",
    "RunFile",
    "evidence_from_runs",
    "load_evidence",
    "read_code",
    "read_fixtures",
    "read_results_text",
    "stored_code",
]

CODE_LINES: Final = 4
"""Lines of code shown per result: enough to recognise a chunk, small enough that 400
queries with their top k stay a page of a few hundred kilobytes."""

CODE_WIDTH: Final = 160
"""Characters kept of each code line; longer lines end in an ellipsis."""


@attrs.frozen(slots=True)
class Hit:
    """One retrieved result as a report shows it."""

    rank: int
    path: str
    start_line: int
    end_line: int
    kind: str
    score: str
    matches: tuple[int, ...]


@attrs.frozen(slots=True)
class RunFile:
    """One results file read back: its path, corpus and records by (backend, case id)."""

    path: str
    corpus: str | None
    records: Mapping[tuple[str, str], RunRecord]


@attrs.frozen(slots=True)
class Evidence:
    """Results files, anchors and code, looked up per side and case."""

    runs: tuple[RunFile, ...] = ()
    anchors: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    code: Mapping[tuple[str, int, int], tuple[str, ...]] = attrs.field(factory=dict)
    fixture_queries: Mapping[str, str] = attrs.field(factory=dict)

    def record(self, side: int | None, backend: str, case_id: str) -> RunRecord | None:
        """What `backend` retrieved for `case_id` on side `side` (0 = base, 1 = head).

        With one results file per side, side N reads the Nth file: base and head are
        often the same backend name run twice. Otherwise (or with `side` None) every
        file is searched by backend name, in the order given.
        """
        if side is not None and len(self.runs) >= 2 and side < len(self.runs):
            return self.runs[side].records.get((backend, case_id))
        for run in self.runs:
            found = run.records.get((backend, case_id))
            if found is not None:
                return found
        return None

    def hits(self, side: int | None, backend: str, case_id: str) -> tuple[Hit, ...] | None:
        record = self.record(side, backend, case_id)
        if record is None:
            return None
        return tuple(_hit(result) for result in record.results)

    def queries(self) -> dict[str, str]:
        """Each case's query text: the fixtures' first, else the first results file's."""
        texts = dict(self.fixture_queries)
        for run in self.runs:
            for (_, case_id), record in run.records.items():
                texts.setdefault(case_id, record.query)
        return texts


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _hit(result: Mapping[str, Any]) -> Hit:
    matches = result.get("matches", [])
    return Hit(
        _int(result.get("rank")),
        str(result.get("file_path", "")),
        _int(result.get("start_line")),
        _int(result.get("end_line")),
        str(result.get("kind", "")),
        str(result.get("score", "")),
        tuple(i for i in matches if isinstance(i, int)) if isinstance(matches, list) else (),
    )


def read_fixtures(path: str) -> FixtureSet:
    """The fixture file at `path`, parsed; every problem is a CliError naming it."""
    try:
        text = decode_fixture_bytes(input_files.read_input(path, input_files.FIXTURES))
    except OSError as error:
        raise CliError(f"could not read fixtures {path}: {describe_os_error(error)}") from None
    except UnicodeDecodeError:
        raise CliError(
            f"could not read fixtures {path}: stream did not contain valid UTF-8"
        ) from None
    try:
        return parse_fixtures(text)
    except FixtureError as error:
        raise CliError(str(error)) from None


def read_results_text(path: str) -> str:
    """The text of the results file at `path`; a CliError naming it when it cannot be
    read or is not UTF-8."""
    try:
        data = input_files.read_input(path, input_files.RESULTS)
    except OSError as error:
        raise CliError(f"could not read results {path}: {describe_os_error(error)}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"could not read results {path}: it is not valid UTF-8") from None


def _inside(root: str, relative: str) -> str | None:
    """`root/relative` when `relative` stays inside `root`; a results file is data, so a
    path that climbs out of the corpus (or is absolute) is never read."""
    if not relative or os.path.isabs(relative):
        return None
    normal = os.path.normpath(relative)
    if normal == ".." or normal.startswith(".." + os.sep):
        return None
    return os.path.join(root, normal)


def _shown(lines: Iterable[str]) -> tuple[str, ...]:
    shown = []
    for line in lines:
        text = line.expandtabs(4).rstrip()
        shown.append(text if len(text) <= CODE_WIDTH else text[: CODE_WIDTH - 1] + "…")
    return tuple(shown)


_ProtectedFile = tuple[tuple[str, ...], frozenset[str]]
"""A corpus file as strict protection indexes it: its lines and its chunks' ids."""


def _protected_file(root: str, relative: str) -> _ProtectedFile | None:
    """`relative` under `root` through strict protection, or None when the walk of `root`
    would not index it (a symlink on the way, a sensitive name, a dot-directory, a
    `.gitignore` match, too large, not UTF-8) or it resolves outside `root`."""
    path = _inside(root, relative)
    if path is None or os.path.normpath(relative) != relative:
        return None
    try:
        real_root = os.path.realpath(root)
        if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
            return None
        if why_not_indexed(root, relative) is not None:
            return None
        text = input_files.read_input(path, input_files.CODE).decode("utf-8")
    except (OSError, ValueError):  # ValueError: a NUL in the path, or not UTF-8
        return None
    # Strict protection runs the reference redactor first and only removes more, so the
    # text shown never holds what either protection would have redacted.
    redacted = protect_text(text, "strict", relative)
    ids = frozenset(chunk.chunk_id for chunk in chunk_file(relative, redacted).chunks)
    return tuple(redacted.split("\n")), ids


def read_code(
    root: str,
    relative: str,
    start: int,
    end: int,
    chunk_id: str,
    files: dict[str, _ProtectedFile | None] | None = None,
) -> tuple[str, ...]:
    """The first `CODE_LINES` of lines start..end of `relative` under `root`, as strict
    protection indexes the file, when chunking that text yields the chunk `chunk_id`
    (so the line numbers are the store's); empty otherwise (the report then says the
    code is not available). `files` caches each file's protected text across calls."""
    if start < 1 or end < start or not chunk_id:
        return ()
    cache = {} if files is None else files
    if relative not in cache:
        cache[relative] = _protected_file(root, relative)
    protected = cache[relative]
    if protected is None or chunk_id not in protected[1]:
        return ()
    lines, _ = protected
    return _shown(lines[start - 1 : min(end, start + CODE_LINES - 1, len(lines))])


def stored_code(
    reports: Iterable[BackendReport], chunks: Sequence[Chunk] = ()
) -> dict[tuple[str, int, int], tuple[str, ...]]:
    """The code of each result of `reports` as the store holds it (already protected), by
    (path, start line, end line): what a run in hand shows instead of reading files back.
    A result without text (an external run's) takes the text of the chunk of `chunks`
    (the store searched) at the same path and lines, if there is one."""
    code: dict[tuple[str, int, int], tuple[str, ...]] = {}
    missing: set[tuple[str, int, int]] = set()
    hits = (hit for report in reports for case in report.cases for hit in case.results)
    for hit in hits:
        key = (hit.file_path, hit.start_line, hit.end_line)
        if key in code:
            continue
        if hit.content:
            code[key] = _shown(hit.content.split("\n")[:CODE_LINES])
        else:
            missing.add(key)
    missing -= set(code)
    if missing:
        for chunk in chunks:
            key = (chunk.file_path, chunk.start_line, chunk.end_line)
            if key in missing:
                code[key] = _shown(chunk.content.split("\n")[:CODE_LINES])
                missing.discard(key)
                if not missing:
                    break
    return code


def _code_root(path: str, header_corpus: object, corpus: str | None) -> str | None:
    """Where the code of results file `path` is read: `corpus` when given (the command
    line's, or the run's own); else the header's corpus only when it resolves inside the
    working directory, since the header is as much input as the rest of the file."""
    if corpus is not None:
        return corpus
    if not isinstance(header_corpus, str):
        return None
    try:
        here = os.path.realpath(os.getcwd())
        inside = os.path.commonpath([here, os.path.realpath(header_corpus)]) == here
    except (OSError, ValueError):
        inside = False
    if not inside:
        print(
            f"warning: {display_text(path)}: the corpus its header names, "
            f"{display_text(header_corpus)}, is outside the working directory, so no code "
            "is shown for its results; give --corpus DIR to read the code from there",
            file=sys.stderr,
        )
        return None
    return header_corpus


def load_evidence(
    results: Sequence[str],
    *,
    corpus: str | None = None,
    fixtures: FixtureSet | None = None,
) -> Evidence:
    """Read the results files and the code their results point at.

    `corpus` overrides the corpus directory each file's header names (a report is often
    rendered elsewhere than where it was run); `fixtures` adds the expected anchors.
    """
    texts = [(path, read_results_text(path)) for path in results]
    return evidence_from_runs(texts, corpus=corpus, fixtures=fixtures)


def evidence_from_runs(
    texts: Sequence[tuple[str, str]],
    *,
    corpus: str | None = None,
    fixtures: FixtureSet | None = None,
    stored: Mapping[tuple[str, int, int], tuple[str, ...]] | None = None,
) -> Evidence:
    """`load_evidence` of results files already in memory: (path as shown, text) pairs.

    `stored` is the code of a run in hand (`stored_code`); results it lacks are read
    back from the corpus."""
    runs: list[RunFile] = []
    code: dict[tuple[str, int, int], tuple[str, ...]] = dict(stored or {})
    for path, text in texts:
        header, records = parse_run(text, path)
        header_corpus = header.get("corpus")
        root: str | None = None
        root_decided = False
        files: dict[str, _ProtectedFile | None] = {}
        by_key: dict[tuple[str, str], RunRecord] = {}
        for record in records:
            by_key.setdefault((record.backend, record.id), record)
            for result in record.results:
                hit = _hit(result)
                key = (hit.path, hit.start_line, hit.end_line)
                if key in code:
                    continue
                if not root_decided:  # decided (and warned about) once per file, if needed
                    root, root_decided = _code_root(path, header_corpus, corpus), True
                if root is not None:
                    chunk_id = str(result.get("chunk_id", ""))
                    code[key] = read_code(
                        root, hit.path, hit.start_line, hit.end_line, chunk_id, files
                    )
        runs.append(
            RunFile(path, header_corpus if isinstance(header_corpus, str) else None, by_key)
        )
    anchors: dict[str, tuple[str, ...]] = {}
    queries: dict[str, str] = {}
    if fixtures is not None:
        for case in fixtures.cases:
            anchors[case.id] = tuple(str(anchor) for anchor in case.expected)
            queries[case.id] = case.query
    return Evidence(tuple(runs), anchors, code, queries)
