"""Results files: `cce.run/v1` and TREC runs read back as backends, written out, and qrels.

Why it exists: a team with its own retriever scores it by handing `cce relevance` the
results it produced (`--run NAME=FILE`), and every backend's results can be written out
(`--results`) in cce's own `cce.run/v1` format or as a TREC run, with the fixture set as
TREC qrels (`--export-qrels`), so the same data feeds trec_eval, ranx and ir_measures.
This module owns reading both formats (errors name the file, line, cause and fix) into
the `ExternalRun` backend that replays a file's results per case, and the TREC run and
qrels writers (the `cce.run/v1` writer is `cce_cli.formats.results_file`).
See docs/backends.md#external-runs.

Formats (docs/backends.md#external-runs):
- `cce.run/v1`: JSON Lines; a header `{"corpus", "embedder", "schema": "cce.run/v1"}`,
  then one line per (backend, case) with `backend`, `id`, `k`, `query` and `results`
  (`chunk_id`, `end_line`, `file_path`, `kind`, `matches`, `rank`, `score`,
  `start_line`).
- TREC run: `qid Q0 docno rank score tag`; `qid` is the case id, `docno` is `path` (the
  whole file, as far as the index knows it) or `path:start-end`. Results are replayed in
  rank order (the rank column), which keeps a graph-expanded hybrid list intact.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.harness import BackendReport
from cce_cli.evaluation.run_checks import PathNormaliser
from cce_fixtures import Case, FixtureSet
from cce_retrieval import (
    Chunk,
    Index,
    Query,
    SearchResult,
    describe_os_error,
    format6,
    write_atomic,
)

__all__ = [
    "RUN_SCHEMA",
    "ExternalRun",
    "load_run",
    "parse_run_option",
    "qrels_text",
    "trec_run_text",
    "write_text",
]

RUN_SCHEMA = "cce.run/v1"
_DOCNO_RANGE = re.compile(r"^(?P<path>.+):(?P<start>[0-9]+)-(?P<end>[0-9]+)$")


def _dump(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@attrs.frozen(slots=True)
class ExternalRun:
    """A backend whose results come from a file, looked up by the query's case id."""

    name: str
    source: str
    results: Mapping[str, tuple[SearchResult, ...]]

    _spans: dict[int, dict[tuple[str, int, int], Chunk]] = attrs.field(
        factory=dict, eq=False, repr=False
    )

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        found = self.results.get(query.case_id or "", ())
        return [self._complete(index, hit) for hit in found[:k]]

    def with_paths(self, normaliser: PathNormaliser) -> tuple[ExternalRun, int, str]:
        """This run with `./path` and absolute corpus paths read as corpus-relative ones;
        also how many results were rewritten and the first of them as written."""
        repaired = 0
        example = ""
        results: dict[str, tuple[SearchResult, ...]] = {}
        for case_id, hits in self.results.items():
            results[case_id], count = normaliser.normalise_results(hits)
            if count and not example:
                example = next(
                    hit.file_path
                    for hit, new in zip(hits, results[case_id], strict=True)
                    if hit.file_path != new.file_path
                )
            repaired += count
        if not repaired:
            return self, 0, ""
        return ExternalRun(self.name, self.source, results), repaired, example

    def missing(self, cases: Sequence[Case]) -> list[str]:
        """Ids of the cases this run has no line for (they score as empty result lists)."""
        return [case.id for case in cases if case.id not in self.results]

    def _complete(self, index: Index, hit: SearchResult) -> SearchResult:
        """Fill what the file left out from the index chunk of the same span, if any.

        A TREC run names only a path and lines, so the chunk's kind (which `#kind`
        anchors test) comes from the index; a whole-file result spans the lines the
        index holds for that file (else line 1).
        """
        spans = self._spans.get(id(index))
        if spans is None:
            spans = self._spans[id(index)] = {
                (c.file_path, c.start_line, c.end_line): c for c in reversed(index.chunks)
            }
        if hit.start_line == 0:
            lines = [(a, b) for (path, a, b) in spans if path == hit.file_path]
            first = min((a for a, _ in lines), default=1)
            last = max((b for _, b in lines), default=1)
            return attrs.evolve(hit, start_line=first, end_line=last)
        chunk = spans.get((hit.file_path, hit.start_line, hit.end_line))
        if chunk is None or (hit.kind and hit.chunk_id):
            return hit
        return attrs.evolve(
            hit,
            chunk_id=hit.chunk_id or chunk.chunk_id,
            kind=hit.kind or chunk.kind,
            chunk_type=hit.chunk_type or chunk.chunk_type,
        )


def parse_run_option(text: str) -> tuple[str, str, str | None]:
    """`NAME=FILE` or `NAME=FILE#backend` -> (name, file, selected backend or None)."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest:
        raise CliError(f"--run {text!r}: expected NAME=FILE or NAME=FILE#backend")
    if "," in name:
        raise CliError(f"--run {text!r}: a run name may not contain `,`")
    path, hashmark, selected = rest.rpartition("#") if "#" in rest else (rest, "", "")
    if hashmark and not selected:
        raise CliError(f"--run {text!r}: name the backend after `#`, e.g. {name}={path}#bm25")
    return name, path, selected or None


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise CliError(f"could not read run {path}: {describe_os_error(err)}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CliError(
            f"could not read run {path}: not UTF-8 (byte offset {err.start}); save it as UTF-8"
        ) from None


def load_run(name: str, path: str, selected: str | None) -> ExternalRun:
    """Read a `cce.run/v1` or TREC run file as the backend `name`."""
    text = _read_text(path)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        return _parse_jsonl(name, path, text, selected)
    if selected is not None:
        raise CliError(f"{path}: `#{selected}` selects a backend, but this is a TREC run")
    return _parse_trec(name, path, text)


def _need_int(obj: Mapping[str, object], key: str, where: str) -> int:
    value = obj.get(key)
    if type(value) is not int:
        raise CliError(f"{where}: `{key}` must be an integer, found {value!r}")
    return value


def _need_str(obj: Mapping[str, object], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise CliError(f"{where}: `{key}` must be a string, found {value!r}")
    return value


def _parse_result(raw: object, where: str) -> SearchResult:
    if not isinstance(raw, dict):
        raise CliError(f"{where}: every result must be an object")
    score_text = raw.get("score")
    try:
        score = float(score_text) if isinstance(score_text, str | int | float) else math.nan
    except ValueError:
        score = math.nan
    if isinstance(score_text, bool) or not math.isfinite(score):
        raise CliError(f"{where}: `score` must be a finite number, found {score_text!r}")
    kind = raw.get("kind", "")
    return SearchResult(
        rank=_need_int(raw, "rank", where),
        chunk_id=str(raw.get("chunk_id", "")),
        file_path=_need_str(raw, "file_path", where),
        start_line=_need_int(raw, "start_line", where),
        end_line=_need_int(raw, "end_line", where),
        chunk_type=str(raw.get("chunk_type", kind)),
        kind=str(kind),
        score=score,
        content="",
    )


def _parse_jsonl(name: str, path: str, text: str, selected: str | None) -> ExternalRun:
    by_backend: dict[str, dict[str, tuple[SearchResult, ...]]] = {}
    header_seen = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise CliError(f"{where}: invalid JSON ({err.msg}); one JSON object per line") from None
        if not isinstance(obj, dict):
            raise CliError(f"{where}: expected a JSON object")
        if not header_seen:
            header_seen = True
            if obj.get("schema") != RUN_SCHEMA:
                raise CliError(
                    f"{where}: the header's `schema` is {obj.get('schema')!r}, not {RUN_SCHEMA!r}; "
                    "write the cce.run/v1 header first (or a TREC run)"
                )
            continue
        backend = _need_str(obj, "backend", where)
        case_id = _need_str(obj, "id", where)
        raw_results = obj.get("results")
        if not isinstance(raw_results, list):
            raise CliError(f"{where}: `results` must be an array")
        hits = sorted((_parse_result(raw, where) for raw in raw_results), key=lambda hit: hit.rank)
        by_backend.setdefault(backend, {})[case_id] = tuple(hits)
    if selected is None:
        if len(by_backend) > 1:
            raise CliError(
                f"{path} holds results of {', '.join(by_backend)}; select one with "
                f"--run {name}={path}#<backend>"
            )
        results = next(iter(by_backend.values()), {})
    elif selected in by_backend:
        results = by_backend[selected]
    else:
        raise CliError(
            f"{path} has no results of backend {selected!r}; "
            f"valid choices: {', '.join(by_backend) or 'none'}"
        )
    return ExternalRun(name, path, results)


def _parse_trec(name: str, path: str, text: str) -> ExternalRun:
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
        if ranged:
            file_path, start, end = ranged["path"], int(ranged["start"]), int(ranged["end"])
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
    return ExternalRun(name, path, results)


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


def write_text(path: str, text: str, what: str) -> None:
    """Write `text` atomically; a failure is a CliError naming the file."""
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as err:
        raise CliError(f"could not write {what} {path}: {describe_os_error(err)}") from None
