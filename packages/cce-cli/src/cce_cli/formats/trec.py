"""TREC runs and qrels as cce reads and writes them: run files replayed in rank order,
results and anchors exported for trec_eval, ranx and ir_measures.

Why it exists: `--run NAME=FILE` accepts a TREC run (`qid Q0 docno rank score tag`),
`--results-format trec` writes one and `--export-qrels` writes the fixture set's file
anchors as qrels, so the same data feeds the standard tools. cce-metrics' `trec` module
reads and writes TREC for metric evaluation, where a run is scores by document and
ranks are re-derived from scores. Here the rank column is the ranking: a graph-expanded
hybrid list is not in score order, so it is replayed by rank (ties in file order) and
written with cce's own ranks and six-decimal scores, queries in fixture order. A test
(tests of this package) reads what this module writes with `cce_metrics.trec` and gets
the same queries, documents and scores. The docnos are `path:start-end` for a chunk and
`path` for a whole file (docs/backends.md#external-runs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import attrs

from cce_cli.errors import CliError
from cce_cli.formats.scores import BackendReport
from cce_fixtures import FixtureSet
from cce_retrieval import SearchResult, format6

__all__ = ["document_id", "qrels_text", "read_trec_results", "trec_run_text"]

_MAX_LINE_DIGITS = 20
"""Longer line numbers are past any file (and past what `int()` reads by default)."""
_DOCNO_RANGE = re.compile(r"^(?P<path>.+):(?P<start>[0-9]+)-(?P<end>[0-9]+)$")


def document_id(hit: SearchResult) -> str:
    """The docno a result read from a run had: `path:start-end`, or a bare `path` for a
    whole file (read as `start_line` 0)."""
    if hit.start_line == 0:
        return hit.file_path
    return f"{hit.file_path}:{hit.start_line}-{hit.end_line}"


def read_trec_results(path: str, text: str) -> dict[str, tuple[SearchResult, ...]]:
    """A TREC run's results by query id, each list in rank order (ties in file order); a
    `path:start-end` docno is that span, a bare `path` the whole file (`start_line` 0, for
    the reader to widen); CliError naming the file, the line and the cause."""
    rows: dict[str, list[tuple[int, int, SearchResult]]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path} line {number}"
        if len(fields) != 6:
            raise CliError(
                f"{where}: expected 6 fields `qid Q0 docno rank score tag`, found {len(fields)}"
            )
        qid, _, docno, rank_text, score_text, _ = fields
        try:
            rank = int(rank_text)
            score = float(score_text)
        except ValueError:
            raise CliError(f"{where}: rank must be an integer and score a number") from None
        if not math.isfinite(score):
            raise CliError(f"{where}: score {score_text!r} is not a finite number")
        ranged = _DOCNO_RANGE.match(docno)
        if ranged and max(len(ranged["start"]), len(ranged["end"])) > _MAX_LINE_DIGITS:
            raise CliError(f"{where}: docno {docno!r} names a line past any file's")
        if ranged:
            file_path, start, end = ranged["path"], int(ranged["start"]), int(ranged["end"])
            if end < start:
                raise CliError(
                    f"{where}: docno {docno!r} ends before it starts; a chunk's docno is "
                    "path:start-end with start <= end (a bare path for a whole file)"
                )
        else:
            file_path, start, end = docno, 0, 0  # the whole file: widened at search time
        hit = SearchResult(0, "", file_path, start, end, "", "", score, "")
        rows.setdefault(qid, []).append((rank, number, hit))
    results = {
        qid: tuple(
            attrs.evolve(hit, rank=i)
            for i, (_, _, hit) in enumerate(sorted(entries, key=lambda e: (e[0], e[1])), 1)
        )
        for qid, entries in rows.items()
    }
    return results


def trec_run_text(
    fixture_set: FixtureSet, reports: Iterable[BackendReport], *, granularity: str = "chunk"
) -> str:
    """A TREC run of every report's results: `qid Q0 path:start-end rank score tag`, or
    at `file` granularity `qid Q0 path rank score tag`, the docnos `qrels_text` writes."""
    lines: list[str] = []
    for report in reports:
        for case, case_report in zip(fixture_set.cases, report.cases, strict=True):
            seen_docs: set[str] = set()
            for hit in case_report.results:
                docno = (
                    hit.file_path
                    if granularity == "file"
                    else f"{hit.file_path}:{hit.start_line}-{hit.end_line}"
                )
                if docno in seen_docs:  # a run holds each document once per query
                    continue
                seen_docs.add(docno)
                lines.append(
                    f"{case.id} Q0 {docno} {hit.rank} {format6(hit.score)} {report.backend}"
                )
    return "".join(line + "\n" for line in lines)


def qrels_text(fixture_set: FixtureSet) -> str:
    """TREC qrels of the file-level anchors: `qid 0 path 1` per expected file, in order."""
    lines: list[str] = []
    for case in fixture_set.cases:
        files = dict.fromkeys(a.file_path for a in case.expected if a.file_path is not None)
        lines.extend(f"{case.id} 0 {path} 1" for path in files)
    return "".join(line + "\n" for line in lines)
