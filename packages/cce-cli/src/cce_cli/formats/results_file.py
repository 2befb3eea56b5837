"""The `cce.run/v1` results file: what every labeled query retrieved, one JSON line each.

Why it exists: a score says that a query failed, not why; the ranked results say what
came back instead. `cce relevance --results FILE` writes them, and the same format is
how a run produced elsewhere is read back in (docs/gating.md#results-file). This module
owns the layout: a header line `{"corpus", "embedder", "schema"}`, then one line per
(backend, case), backends in run order and cases in fixture order, each result with
its rank, location, kind, chunk id, 6-decimal score and the indexes of the case's
expected anchors it matched. A run that asked for a cost metric adds to each line a
`cost` object: the tokenizer's id and, down to the cost metrics' depth, each result's
location and token count (docs/report-formats.md#cost). Lines are
`json.dumps(sort_keys=True, ensure_ascii=False, separators=(",", ":"))`, so the bytes
are deterministic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import json_text
from cce_cli.formats.cost_scores import CaseCost
from cce_cli.formats.scores import BackendReport
from cce_cli.output import write_output
from cce_fixtures import Anchor, Case
from cce_retrieval import SearchResult, describe_os_error, format6

__all__ = [
    "RUN_SCHEMA",
    "RunRecord",
    "parse_run",
    "read_run_results",
    "render_run",
    "write_run",
]

RUN_SCHEMA: Final = "cce.run/v1"


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def _matches(anchor: Anchor, hit: SearchResult, granularity: str) -> bool:
    if granularity == "file":
        return anchor.file_path is not None and anchor.file_path == hit.file_path
    return anchor.matches(hit)


def render_run(
    corpus: str,
    embedder: str,
    cases: Sequence[Case],
    reports: Sequence[BackendReport],
    *,
    granularity: str = "chunk",
) -> str:
    """The whole file as text; `reports` list the cases in `cases` order. At `file`
    granularity `matches` lists the expected anchors whose path is the result's."""
    lines = [_line({"corpus": corpus, "embedder": embedder, "schema": RUN_SCHEMA})]
    for report in reports:
        for case, case_report in zip(cases, report.cases, strict=True):
            results = [
                {
                    "chunk_id": hit.chunk_id,
                    "end_line": hit.end_line,
                    "file_path": hit.file_path,
                    "kind": hit.kind,
                    "matches": [
                        index
                        for index, anchor in enumerate(case.expected)
                        if _matches(anchor, hit, granularity)
                    ],
                    "rank": hit.rank,
                    "score": format6(hit.score),
                    "start_line": hit.start_line,
                }
                for hit in case_report.results
            ]
            record: dict[str, Any] = {
                "backend": report.backend,
                "id": case.id,
                "k": case.k,
                "query": case.query,
                "results": results,
            }
            if case_report.cost is not None:
                record["cost"] = _cost_record(case_report.cost)
            lines.append(_line(record))
    return "".join(lines)


def _cost_record(cost: CaseCost) -> dict[str, Any]:
    """What the cost metrics read for one case, so a reader can recompute them: the
    tokenizer and, down to the depth, each result's location and token count."""
    return {
        "results": [
            {
                "end_line": hit.end_line,
                "file_path": hit.file_path,
                "kind": hit.kind,
                "rank": rank,
                "start_line": hit.start_line,
                "tokens": tokens,
            }
            for rank, (hit, tokens) in enumerate(
                zip(cost.results, cost.reading.tokens, strict=True), start=1
            )
        ],
        "tokenizer": cost.reading.tokenizer,
    }


def write_run(path: str, text: str) -> None:
    """Replace `path` with the run file atomically; a failure is a CliError."""
    try:
        write_output(path, text.encode("utf-8"))
    except OSError as error:
        raise CliError(f"could not write results {path}: {describe_os_error(error)}") from None


@attrs.frozen(slots=True)
class RunRecord:
    """One (backend, case) line read back: per result, the expected anchors it matched."""

    backend: str
    id: str
    k: int
    query: str
    matches: tuple[tuple[int, ...], ...]
    results: tuple[dict[str, Any], ...]


def parse_run(text: str, path: str = "results") -> tuple[dict[str, Any], tuple[RunRecord, ...]]:
    """The header and the records of a run file; CliError naming the line otherwise."""
    lines = text.splitlines()
    if not lines:
        raise CliError(f"{path}: empty; a {RUN_SCHEMA} file starts with its header line")
    parsed: list[Any] = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed.append(json_text.loads(line))
        except json.JSONDecodeError as error:
            raise CliError(f"{path}: line {number}: invalid JSON ({error.msg})") from None
    header = parsed[0]
    if not isinstance(header, dict) or header.get("schema") != RUN_SCHEMA:
        raise CliError(f'{path}: line 1: expected a header with "schema": "{RUN_SCHEMA}"')
    records: list[RunRecord] = []
    for number, body in enumerate(parsed[1:], start=2):
        try:
            results = tuple(body["results"])
            records.append(
                RunRecord(
                    str(body["backend"]),
                    str(body["id"]),
                    int(body["k"]),
                    str(body["query"]),
                    tuple(tuple(int(i) for i in hit["matches"]) for hit in results),
                    results,
                )
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CliError(f"{path}: line {number}: not a {RUN_SCHEMA} record ({error})") from None
    return header, tuple(records)


def _need_int(obj: Mapping[str, object], key: str, where: str) -> int:
    value = obj.get(key)
    if type(value) is not int:
        raise CliError(f"{where}: `{key}` must be an integer, found {value!r}")
    return value


def _need_str(obj: Mapping[str, object], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise CliError(f"{where}: `{key}` must be a string, found {value!r}")
    return _text(value, key, where)


def _text(value: str, key: str, where: str) -> str:
    """`value`, unless it holds an unpaired surrogate (a `\\udc80` escape), which no
    report, judging file or fixture written from it could encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CliError(
            f"{where}: `{key}` holds an unpaired surrogate escape (such as \\udc80), which "
            "is not text; write the path or name as UTF-8"
        ) from None
    return value


def _check_span(start: int, end: int, where: str, shown: str) -> None:
    """A CliError naming `where` when a result's lines end before they start."""
    if end < start or start < 0:
        raise CliError(
            f"{where}: {shown} ends before it starts; a result spans lines start-end with "
            "1 <= start <= end (0-0 for a whole file)"
        )


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
    kind = _text(str(raw.get("kind", "")), "kind", where)
    file_path = _need_str(raw, "file_path", where)
    start, end = _need_int(raw, "start_line", where), _need_int(raw, "end_line", where)
    _check_span(start, end, where, f"result {file_path}:{start}-{end}")
    return SearchResult(
        rank=_need_int(raw, "rank", where),
        chunk_id=_text(str(raw.get("chunk_id", "")), "chunk_id", where),
        file_path=file_path,
        start_line=start,
        end_line=end,
        chunk_type=_text(str(raw.get("chunk_type", kind)), "chunk_type", where),
        kind=kind,
        score=score,
        content="",
    )


def read_run_results(path: str, text: str) -> dict[str, dict[str, tuple[SearchResult, ...]]]:
    """Every backend's results in a run file's text, by case id, each list in rank order;
    CliError naming the file, the line, the cause and the fix."""
    by_backend: dict[str, dict[str, tuple[SearchResult, ...]]] = {}
    header_seen = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            obj = json_text.loads(line)
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
    return by_backend
