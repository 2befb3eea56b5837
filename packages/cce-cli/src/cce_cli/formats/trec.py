"""TREC runs and qrels as cce reads and writes them: run files replayed in rank order,
results and judgments exported for trec_eval, ranx and ir_measures.

Why it exists: `--run NAME=FILE` accepts a TREC run (`qid Q0 docno rank score tag`),
`--results-format trec` writes one and `--export-qrels` writes what cce judges as qrels,
so the same data feeds the standard tools. cce-metrics' `trec` module reads and writes
TREC for metric evaluation, where a run is scores by document and ranks are re-derived
from scores. Here the rank column is the ranking: a graph-expanded hybrid list is not in
score order, so it is replayed by rank (ties in file order) and written with cce's own
ranks and six-decimal scores, queries in fixture order. A test (tests of this package)
reads what this module writes with `cce_metrics.trec` and gets the same queries,
documents and scores. The docnos are `path:start-end` for a chunk and `path` for a whole
file (docs/backends.md#external-runs).

This module also owns the export that reproduces cce's ranked metrics in those tools
(docs/metrics.md#reproducing-cces-numbers-with-trec_eval): the qrels list every anchor
cce judges at the report's granularity (expected and secondary) with the gain cce gives
it, one docno per anchor, and the judged run (`--results-format trec-judged`) names at
each considered rank the anchor that rank finds first, so that nDCG@k, AP, success and
R-precision computed from the pair by trec_eval are cce's, query for query. (The
plain `--results-format trec` run stays the retriever's own output, for replay.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import attrs

from cce_cli.errors import CliError
from cce_cli.formats.judging import file_case, judge
from cce_cli.formats.scores import BackendReport
from cce_fixtures import Anchor, Case, FixtureSet
from cce_metrics import anchor_gains
from cce_retrieval import SearchResult, format6

__all__ = [
    "RUN_FORMATS",
    "document_id",
    "judged_anchors",
    "judged_run_text",
    "qrels_text",
    "read_trec_results",
    "run_text",
    "trec_run_text",
]

RUN_FORMATS = ("trec", "trec-judged")
"""The TREC values of `--results-format`: the retriever's run, or the judged run that
reproduces cce's ranked metrics with the exported qrels."""

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
    fixture_set: FixtureSet,
    reports: Iterable[BackendReport],
    *,
    granularity: str = "chunk",
    prefix: str = "",
) -> str:
    """A TREC run of every report's results: `qid Q0 path:start-end rank score tag`, or
    at `file` granularity `qid Q0 path rank score tag`, the docnos `qrels_text` writes;
    `prefix` qualifies the query ids (a suite's `member/`)."""
    lines: list[str] = []
    for report in reports:
        for case, case_report in zip(fixture_set.cases, report.cases, strict=True):
            seen_docs: set[str] = set()
            for hit in case_report.results:
                docno = _result_docno(hit, granularity)
                if docno in seen_docs:  # a run holds each document once per query
                    continue
                seen_docs.add(docno)
                lines.append(
                    f"{prefix}{case.id} Q0 {docno} {hit.rank} {format6(hit.score)} {report.backend}"
                )
    return "".join(line + "\n" for line in lines)


def judged_anchors(case: Case, granularity: str) -> tuple[Anchor, ...]:
    """The anchors cce judges `case` by at `granularity`, in judgment-column order:
    expected, then secondary; at `file`, their distinct paths (harness.file_case)."""
    judged = file_case(case) if granularity == "file" else case
    return (*judged.expected, *judged.secondary)


def _unique(docno: str, taken: set[str]) -> str:
    """`docno`, or `docno~2`, `docno~3`, ... when it is taken (a TREC query holds each
    document once, and cce counts a repeated anchor twice)."""
    candidate, copy = docno, 1
    while candidate in taken:
        copy += 1
        candidate = f"{docno}~{copy}"
    taken.add(candidate)
    return candidate


def _anchor_docnos(case: Case, anchors: Sequence[Anchor], qid: str) -> list[str]:
    """One distinct docno per anchor: its display form (`path`, `path#kind@a-b`, ...)."""
    taken: set[str] = set()
    docnos: list[str] = []
    for anchor in anchors:
        text = str(anchor)
        if not text or any(char.isspace() for char in text):
            raise CliError(
                f"fixture case {case.id!r} (query {qid}): anchor {text!r} holds whitespace, "
                "which a TREC docno cannot; rename the path or export without --export-qrels"
            )
        docnos.append(_unique(text, taken))
    return docnos


def qrels_text(
    fixture_set: FixtureSet,
    *,
    granularity: str = "chunk",
    graded: bool = False,
    prefix: str = "",
) -> str:
    """TREC qrels of what cce judges: `qid 0 docno gain` per anchor, in fixture and
    judgment-column order, the docno the anchor's display form (a distinct path at
    `file`) and the gain cce's ranked metrics give it: 1, or 2 for an expected anchor
    when `graded`; a secondary anchor 1. `prefix` qualifies the query ids (a suite's
    `member/`)."""
    lines: list[str] = []
    for case in fixture_set.cases:
        qid = prefix + case.id
        judged = file_case(case) if granularity == "file" else case
        anchors = (*judged.expected, *judged.secondary)
        gains = anchor_gains(len(judged.expected), len(judged.secondary), graded=graded)
        docnos = _anchor_docnos(case, anchors, qid)
        lines.extend(
            f"{qid} 0 {docno} {int(gain)}" for docno, gain in zip(docnos, gains, strict=True)
        )
    return "".join(line + "\n" for line in lines)


def judged_run_text(
    fixture_set: FixtureSet,
    reports: Iterable[BackendReport],
    *,
    granularity: str = "chunk",
    prefix: str = "",
) -> str:
    """The judged TREC run: for each considered rank (the first `k` results, the files
    at `file`), the docno (as in the qrels) of the first anchor, in judgment-column
    order, that this rank is the first to match; else the result's own docno
    (`path:start-end`, `path` at `file`) made distinct from every judged one. The score
    is the rank counted from the bottom, so every tool that sorts by score keeps cce's
    order. With `qrels_text`, trec_eval gives each query cce's
    nDCG@k, AP, success and R-precision
    (docs/metrics.md#reproducing-cces-numbers-with-trec_eval)."""
    lines: list[str] = []
    for report in reports:
        for case, case_report in zip(fixture_set.cases, report.cases, strict=True):
            qid = prefix + case.id
            anchors = judged_anchors(case, granularity)
            docnos = _anchor_docnos(case, anchors, qid)
            taken = set(docnos)
            found = [False] * len(anchors)
            considered = case_report.results[: case.k]
            judgments = judge(considered, anchors)
            for rank, (hit, row) in enumerate(zip(considered, judgments, strict=True), 1):
                first = None
                for column, matched in enumerate(row):
                    if matched and not found[column]:
                        found[column] = True
                        first = column if first is None else first
                if first is not None:
                    docno = docnos[first]
                else:
                    docno = _unique(_result_docno(hit, granularity), taken)
                score = len(considered) - rank + 1
                lines.append(f"{qid} Q0 {docno} {rank} {score} {report.backend}")
    return "".join(line + "\n" for line in lines)


def run_text(
    results_format: str,
    fixture_set: FixtureSet,
    reports: Iterable[BackendReport],
    *,
    granularity: str = "chunk",
    prefix: str = "",
) -> str:
    """What `--results --results-format FORMAT` holds for one of `RUN_FORMATS`, query ids
    qualified by `prefix`."""
    if results_format == "trec-judged":
        return judged_run_text(fixture_set, reports, granularity=granularity, prefix=prefix)
    return trec_run_text(fixture_set, reports, granularity=granularity, prefix=prefix)


def _result_docno(hit: SearchResult, granularity: str) -> str:
    """A result's own docno: `path:start-end`, or `path` at `file` granularity."""
    if granularity == "file":
        return hit.file_path
    return f"{hit.file_path}:{hit.start_line}-{hit.end_line}"
