"""What each labeled query retrieved, with a few lines of code per result: a report's evidence.

Why it exists: a score says that a query got worse; a reviewer's next question is what
came back instead. The `cce.run/v1` results files (`cce relevance --results`) hold each
(backend, case)'s ranked results but no code, and the fixtures hold the expected
anchors. This module owns reading those back for the reviewer-facing renderings (the
HTML report, the query text of the pull-request comment): which results file answers
for which side, the anchors of each case, and the first lines of each result's code,
read from the corpus on disk. Nothing here changes a score.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.formats.results_file import RunRecord, parse_run
from cce_fixtures import FixtureError, FixtureSet, decode_fixture_bytes, parse_fixtures
from cce_retrieval import describe_os_error

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


def _read_text(path: str, what: str) -> str:
    try:
        data = input_files.read_input(path, input_files.RESULTS)
    except OSError as error:
        raise CliError(f"could not read {what} {path}: {describe_os_error(error)}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"could not read {what} {path}: it is not valid UTF-8") from None


def _inside(root: str, relative: str) -> str | None:
    """`root/relative` when `relative` stays inside `root`; a results file is data, so a
    path that climbs out of the corpus (or is absolute) is never read."""
    if not relative or os.path.isabs(relative):
        return None
    normal = os.path.normpath(relative)
    if normal == ".." or normal.startswith(".." + os.sep):
        return None
    return os.path.join(root, normal)


def read_code(root: str, relative: str, start: int, end: int) -> tuple[str, ...]:
    """The first `CODE_LINES` lines of `relative`'s lines start..end under `root`; empty
    when the file cannot be read (the report then says the code is not available)."""
    path = _inside(root, relative)
    if path is None or start < 1:
        return ()
    try:
        data = input_files.read_input(path, input_files.CODE)
        lines = data.decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    last = min(end, start + CODE_LINES - 1, len(lines))
    shown = []
    for line in lines[start - 1 : last]:
        text = line.expandtabs(4).rstrip()
        shown.append(text if len(text) <= CODE_WIDTH else text[: CODE_WIDTH - 1] + "…")
    return tuple(shown)


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
    texts = [(path, _read_text(path, "results")) for path in results]
    return evidence_from_runs(texts, corpus=corpus, fixtures=fixtures)


def evidence_from_runs(
    texts: Sequence[tuple[str, str]],
    *,
    corpus: str | None = None,
    fixtures: FixtureSet | None = None,
) -> Evidence:
    """`load_evidence` of results files already in memory: (path as shown, text) pairs."""
    runs: list[RunFile] = []
    code: dict[tuple[str, int, int], tuple[str, ...]] = {}
    for path, text in texts:
        header, records = parse_run(text, path)
        header_corpus = header.get("corpus")
        root = corpus if corpus is not None else header_corpus
        by_key: dict[tuple[str, str], RunRecord] = {}
        for record in records:
            by_key.setdefault((record.backend, record.id), record)
            for result in record.results:
                hit = _hit(result)
                key = (hit.path, hit.start_line, hit.end_line)
                if key not in code and isinstance(root, str):
                    code[key] = read_code(root, hit.path, hit.start_line, hit.end_line)
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
