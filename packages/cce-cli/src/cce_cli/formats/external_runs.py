"""External runs: results produced elsewhere, replayed as a backend (`--run NAME=FILE`).

Why it exists: a team with its own retriever scores it by handing `cce relevance` the
results it produced. A run file is a `cce.run/v1` results file
(`cce_cli.formats.results_file`, `FILE#backend` picks one of its backends) or a TREC run
(`cce_cli.formats.trec`); this module reads either into the `ExternalRun` backend, which
replays a case's results in rank order and fills in what the file left out (a TREC
docno's kind, a whole file's lines) from the index. Errors name the file, the line, the
cause and the fix. See docs/backends.md#external-runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.formats.result_paths import PathNormaliser
from cce_cli.formats.results_file import read_run_results
from cce_cli.formats.trec import read_trec_results
from cce_cli.output import write_output
from cce_fixtures import Case
from cce_retrieval import (
    Chunk,
    Index,
    Query,
    SearchResult,
    describe_os_error,
)

__all__ = [
    "ExternalRun",
    "load_run",
    "parse_run_option",
    "write_text",
]


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
        data = input_files.read_input(path, input_files.RUN)
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
        return ExternalRun(
            name, path, _selected(name, path, read_run_results(path, text), selected)
        )
    if selected is not None:
        raise CliError(f"{path}: `#{selected}` selects a backend, but this is a TREC run")
    return ExternalRun(name, path, read_trec_results(path, text))


def _selected(
    name: str,
    path: str,
    by_backend: Mapping[str, Mapping[str, tuple[SearchResult, ...]]],
    selected: str | None,
) -> Mapping[str, tuple[SearchResult, ...]]:
    """The results of the backend `#selected` names, or of the file's only backend."""
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
    return results


def write_text(path: str, text: str, what: str) -> None:
    """Write `text` atomically; a failure is a CliError naming the file."""
    try:
        write_output(path, text.encode("utf-8"))
    except OSError as err:
        raise CliError(f"could not write {what} {path}: {describe_os_error(err)}") from None
