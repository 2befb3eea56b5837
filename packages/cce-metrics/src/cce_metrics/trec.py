"""TREC run and qrels files: read them into the dictionaries `evaluate` takes, write them back.

Why it exists: trec_eval's two whitespace-separated text formats are how judgments and
rankings travel between IR tools. This module owns reading them strictly (every problem
is a `TrecFormatError` naming the file, the line, the cause and the fix) and writing them
deterministically and atomically. The formats are described in docs/metrics.md#trec-files.
The atomic writer is a copy of cce-retrieval's plain case, kept so this package needs
nothing but attrs; tests/test_shared_copies.py checks the two leave the same files.

- run line: `query_id Q0 doc_id rank score run_tag` (six fields; the second is ignored,
  the rank must be an integer but the order comes from the scores, as in trec_eval);
- qrels line: `query_id iteration doc_id relevance` (four fields; the iteration is
  ignored, the relevance is an integer).

Blank lines are skipped; a repeated (query, document) pair is an error, as in trec_eval.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

from cce_metrics.evaluation import rank_documents

_INTEGER = re.compile(r"^[+-]?[0-9]+$")


class TrecFormatError(ValueError):
    """A run or qrels file that breaks its format: where (`source`, `line`), why and the fix."""

    def __init__(self, source: str, line: int | None, cause: str, fix: str) -> None:
        where = source if line is None else f"{source} line {line}"
        message = f"{where}: {cause}; {fix}"
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.cause = cause
        self.fix = fix

    def __str__(self) -> str:
        return self.message


def parse_run(text: str, source: str = "<run>") -> dict[str, dict[str, float]]:
    """Parse the text of a run file into `{query_id: {doc_id: score}}`."""
    run: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in _records(text):
        if len(fields) != 6:
            raise TrecFormatError(
                source,
                number,
                f"expected 6 fields, found {len(fields)}",
                "write `query_id Q0 doc_id rank score run_tag`, separated by spaces",
            )
        query_id, _, doc, rank_text, score_text, _ = fields
        if not _INTEGER.match(rank_text):
            raise TrecFormatError(
                source, number, f"rank {rank_text!r} is not an integer", "use 1, 2, 3, ..."
            )
        score = _finite_float(score_text)
        if score is None:
            raise TrecFormatError(
                source,
                number,
                f"score {score_text!r} is not a finite number",
                "write a decimal score such as 12.5 (no nan or inf)",
            )
        key = (query_id, doc)
        if key in first_line:
            raise TrecFormatError(
                source,
                number,
                f"document {doc!r} is ranked twice for query {query_id!r} "
                f"(first on line {first_line[key]})",
                "keep one line per query and document",
            )
        first_line[key] = number
        run.setdefault(query_id, {})[doc] = score
    return run


def parse_qrels(text: str, source: str = "<qrels>") -> dict[str, dict[str, int]]:
    """Parse the text of a qrels file into `{query_id: {doc_id: relevance}}`."""
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, fields in _records(text):
        if len(fields) != 4:
            raise TrecFormatError(
                source,
                number,
                f"expected 4 fields, found {len(fields)}",
                "write `query_id 0 doc_id relevance`, separated by spaces",
            )
        query_id, _, doc, rel_text = fields
        if not _INTEGER.match(rel_text):
            raise TrecFormatError(
                source,
                number,
                f"relevance {rel_text!r} is not an integer",
                "use 0 for not relevant and 1 or more for relevant",
            )
        key = (query_id, doc)
        if key in first_line:
            raise TrecFormatError(
                source,
                number,
                f"document {doc!r} is judged twice for query {query_id!r} "
                f"(first on line {first_line[key]})",
                "keep one judgment per query and document",
            )
        first_line[key] = number
        qrels.setdefault(query_id, {})[doc] = int(rel_text)
    return qrels


def read_run(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """Read a run file (UTF-8); raises TrecFormatError, or OSError when it cannot be read."""
    return parse_run(_read_text(path), os.fspath(path))


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """Read a qrels file (UTF-8); raises TrecFormatError, or OSError when it cannot be read."""
    return parse_qrels(_read_text(path), os.fspath(path))


def format_run(run: Mapping[str, Mapping[str, float]], tag: str = "cce") -> str:
    """The run as TREC text: queries in sorted order, each in rank order (`rank_documents`).

    Ranks are written 1, 2, ... in that order and scores in Python's shortest round-trip
    form, so `parse_run(format_run(run))` gives back the same floats and the same ranking.
    """
    _check_token(tag, "run tag")
    lines: list[str] = []
    for query_id in sorted(run):
        _check_token(query_id, "query id")
        scores = run[query_id]
        for rank, doc in enumerate(rank_documents(scores), start=1):
            _check_token(doc, "document id")
            score = float(scores[doc])
            if not math.isfinite(score):
                raise ValueError(f"run[{query_id!r}][{doc!r}]: a score must be a finite number")
            lines.append(f"{query_id} Q0 {doc} {rank} {score!r} {tag}\n")
    return "".join(lines)


def format_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """The judgments as TREC text: queries, then documents, in sorted order; iteration 0."""
    lines: list[str] = []
    for query_id in sorted(qrels):
        _check_token(query_id, "query id")
        judgments = qrels[query_id]
        for doc in sorted(judgments):
            _check_token(doc, "document id")
            rel = judgments[doc]
            if isinstance(rel, bool) or not isinstance(rel, int):
                raise ValueError(f"qrels[{query_id!r}][{doc!r}]: a relevance must be an integer")
            lines.append(f"{query_id} 0 {doc} {rel}\n")
    return "".join(lines)


def write_run(
    path: str | os.PathLike[str], run: Mapping[str, Mapping[str, float]], tag: str = "cce"
) -> None:
    """Write `format_run(run, tag)` to `path` atomically (a reader never sees half a file)."""
    _write_atomic(Path(path), format_run(run, tag))


def write_qrels(path: str | os.PathLike[str], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write `format_qrels(qrels)` to `path` atomically."""
    _write_atomic(Path(path), format_qrels(qrels))


def _records(text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank line; fields split on whitespace."""
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if fields:
            records.append((number, fields))
    return records


def _finite_float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _read_text(path: str | os.PathLike[str]) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise TrecFormatError(
            os.fspath(path), line, "the file is not valid UTF-8", "save it as UTF-8"
        ) from None


def _check_token(value: str, what: str) -> None:
    if not value or any(char.isspace() for char in value):
        raise ValueError(f"{what} {value!r} must be non-empty and contain no whitespace")


def _write_atomic(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
