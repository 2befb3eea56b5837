"""Results that come from outside cce, checked against the corpus and the fixtures.

Why it exists: an external run (`--run`) or a plugin backend is somebody else's output,
and every way it fails to fit the fixture set scores as a silent zero: a path that is not
in the corpus, a result that lacks the kind or line span its case's anchors test, a case
id the fixtures do not have, a case the run never answers. This module owns finding
those problems, counting them with a few examples, the one unambiguous repair (a `./path`
or a path under the corpus's absolute root is read as the store-relative path it names)
and the wording on stderr. It never changes a score: a problem is reported, and
`--strict` refuses to score (docs/backends.md#checks-on-external-results).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

import attrs

from cce_cli.errors import CliError
from cce_cli.evaluation.configurations import BackendConfig, all_names
from cce_cli.formats.external_runs import ExternalRun, load_run, parse_run_option
from cce_cli.formats.result_paths import PathNormaliser
from cce_cli.output import visible_controls
from cce_fixtures import Anchor, Case, FixtureSet
from cce_retrieval import Backend, Index, Query, SearchResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_cli.evaluation.harness import BackendReport

__all__ = [
    "EXAMPLES",
    "Finding",
    "PathNormaliser",
    "RepairedBackend",
    "case_findings",
    "corpus_paths",
    "normalised_note",
    "refuse",
    "report",
    "result_findings",
]

EXAMPLES: Final = 3
"""Examples shown per finding; the count says how many there are in all."""


@attrs.frozen(slots=True)
class Finding:
    """One kind of problem of one backend's results: how many, a few examples, what to do."""

    count: int
    message: str
    examples: tuple[str, ...]
    hint: str = ""

    def text(self, backend: str, source: str) -> str:
        shown = ", ".join(self.examples)
        more = f" (e.g. {shown})" if shown else ""
        hint = f"; {self.hint}" if self.hint else ""
        return f"backend {backend} ({source}): {self.count} {self.message}{more}{hint}"


def _finding(items: Sequence[str], message: str, hint: str = "") -> list[Finding]:
    if not items:
        return []
    return [Finding(len(items), message, tuple(items[:EXAMPLES]), hint)]


def _plural(count: int, noun: str) -> str:
    return noun if count == 1 else f"{noun}s"


def corpus_paths(index: Index) -> frozenset[str]:
    """Every store-relative path the index holds."""
    return frozenset(chunk.file_path for chunk in index.chunks) | frozenset(index.file_tokens)


def case_findings(
    run_cases: Collection[str], cases: Sequence[Case], *, answered: str = "results"
) -> list[Finding]:
    """Case ids a run names that the fixtures lack, and fixture cases the run lacks."""
    known = {case.id for case in cases}
    unknown = sorted(case_id for case_id in run_cases if case_id not in known)
    missing = [case.id for case in cases if case.id not in run_cases]
    findings = _finding(
        unknown,
        f"case {_plural(len(unknown), 'id')} not in the fixture set",
        "their results are never scored; check the run's query ids",
    )
    findings += _finding(
        missing,
        f"{_plural(len(missing), 'case')} without {answered}",
        "they score as empty result lists",
    )
    return findings


def _lacks_span(hit: SearchResult) -> bool:
    return hit.start_line < 1 or hit.end_line < hit.start_line


def _missing_facet(hit: SearchResult, anchors: Sequence[Anchor]) -> str | None:
    """What `hit` lacks to match an anchor whose other facets it meets, if that is all.

    None when it matches an anchor, or when it misses them for other reasons (another
    file, another kind, other lines): that is a ranking miss, not a result that cannot
    be judged.
    """
    if any(anchor.matches(hit) for anchor in anchors):
        return None
    for anchor in anchors:
        no_kind = anchor.kind is not None and not hit.kind
        no_span = anchor.line_range is not None and _lacks_span(hit)
        if not (no_kind or no_span):
            continue
        # The hit as it would be with the facets it lacks: does the anchor then match?
        completed = attrs.evolve(
            hit,
            kind=(anchor.kind or "") if no_kind else hit.kind,
            start_line=anchor.line_range[0] if no_span and anchor.line_range else hit.start_line,
            end_line=anchor.line_range[0] if no_span and anchor.line_range else hit.end_line,
        )
        if anchor.matches(completed):
            return " and ".join(
                lacking
                for lacking, missing in (("no kind", no_kind), ("no line span", no_span))
                if missing
            )
    return None


def _where(case_id: str, hit: SearchResult) -> str:
    if _lacks_span(hit):
        return f"{case_id} #{hit.rank} {hit.file_path}"
    return f"{case_id} #{hit.rank} {hit.file_path}:{hit.start_line}-{hit.end_line}"


def result_findings(
    cases: Sequence[Case],
    rankings: Iterable[Sequence[SearchResult]],
    paths: frozenset[str],
    *,
    anchors_checked: bool = True,
) -> list[Finding]:
    """Scored results outside the corpus, and results their anchors can never match.

    `anchors_checked` is False when kinds and spans are not compared (file granularity).
    """
    outside: list[str] = []
    unmatchable: list[str] = []
    for case, ranking in zip(cases, rankings, strict=True):
        anchors = (*case.expected, *case.secondary)
        for hit in ranking:
            if hit.file_path not in paths:
                outside.append(_where(case.id, hit))
                continue
            lacking = _missing_facet(hit, anchors) if anchors_checked else None
            if lacking:
                unmatchable.append(f"{_where(case.id, hit)} has {lacking}")
    findings = _finding(
        outside,
        f"{_plural(len(outside), 'result')} whose path is not in the corpus",
        "paths must be relative to the corpus root, as the index stores them",
    )
    findings += _finding(
        unmatchable,
        f"{_plural(len(unmatchable), 'result')} that can never match an anchor of their case, "
        "which needs a kind or line span the result lacks",
        "a retriever that returns whole files is judged by path with --granularity file",
    )
    return findings


def report(backend: str, source: str, findings: Sequence[Finding]) -> None:
    """Every finding as one `warning:` line on stderr."""
    for finding in findings:
        print(f"warning: {visible_controls(finding.text(backend, source))}", file=sys.stderr)


def refuse(problems: Mapping[str, int]) -> None:
    """With `--strict`: a CliError when any backend has a problem (warnings already shown)."""
    named = [f"{backend} ({count})" for backend, count in problems.items() if count]
    if named:
        raise CliError(
            f"the results of {', '.join(named)} do not fit the corpus or the fixtures; "
            "refusing to score with --strict (see the warnings above)"
        )


def normalised_note(backend: str, source: str, repaired: int, example: str) -> str:
    """The one stderr line saying that paths were repaired."""
    return (
        f"note: backend {backend} ({source}): read {repaired} {_plural(repaired, 'path')} "
        f"written as ./path or under the corpus root as corpus-relative (e.g. {example})"
    )


@attrs.define(eq=False)
class RepairedBackend:
    """A plugin backend whose result paths go through a `PathNormaliser`, counting repairs."""

    inner: Backend
    normaliser: PathNormaliser
    repaired: int = 0
    example: str = ""

    @property
    def name(self) -> str:
        return self.inner.name

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        raw = self.inner.search(index, query, k)
        results, count = self.normaliser.normalise_results(raw)
        if count and not self.example:
            self.example = next(
                old.file_path
                for old, new in zip(raw, results, strict=True)
                if old.file_path != new.file_path
            )
        self.repaired += count
        return list(results)


def check_results(
    fixture_set: FixtureSet,
    index: Index,
    names: Sequence[str],
    chosen: Sequence[str | Backend],
    reports: Sequence[BackendReport],
    outside: Mapping[int, str],
    problems: dict[str, int],
    *,
    granularity: str,
    strict: bool,
) -> None:
    """Report what the external backends returned that does not fit; `strict` refuses."""
    paths = corpus_paths(index)
    for position, source in outside.items():
        name, backend = names[position], chosen[position]
        if isinstance(backend, RepairedBackend) and backend.repaired:
            note = normalised_note(name, source, backend.repaired, backend.example)
            print(note, file=sys.stderr)
        rankings = [case.results for case in reports[position].cases]
        findings = result_findings(
            fixture_set.cases, rankings, paths, anchors_checked=granularity == "chunk"
        )
        report(name, source, findings)
        problems[name] = problems.get(name, 0) + sum(finding.count for finding in findings)
    if strict:
        refuse(problems)


def check_file_granularity(fixtures: str, fixture_set: FixtureSet, strict: bool) -> None:
    """At `--granularity file` a case whose anchors name no path has nothing to match."""
    from cce_cli.evaluation import harness

    pathless = [case.id for case in fixture_set.cases if not harness.file_case(case).expected]
    if not pathless:
        return
    shown = ", ".join(pathless[:EXAMPLES])
    message = (
        f"{len(pathless)} case{'' if len(pathless) == 1 else 's'} in {fixtures} without an "
        f"expected anchor that names a path (e.g. {shown}): matched by file they score 0, "
        "and TREC qrels leave them out"
    )
    if strict:
        raise CliError(f"{message}; refusing to score with --strict")
    print(f"warning: {visible_controls(message)}", file=sys.stderr)


def load_external_runs(
    options: Sequence[str],
    fixture_set: FixtureSet,
    config: BackendConfig,
    normaliser: PathNormaliser,
    member_prefix: str | None = None,
) -> tuple[dict[str, ExternalRun], dict[str, int]]:
    """The `--run NAME=FILE` backends (`options`) by name, their paths repaired, and the
    number of problems each has with the fixtures' case ids (reported on stderr). A
    suite member's `member_prefix` is taken off the case ids of a suite-wide run."""
    loaded: dict[str, ExternalRun] = {}
    problems: dict[str, int] = {}
    registered = set(all_names(config))
    for option in options:
        name, path, selected = parse_run_option(str(option))
        if name in loaded or name in registered:
            raise CliError(f"--run {option!r}: backend name {name!r} is already taken")
        run = load_run(name, path, selected)
        if member_prefix is not None:
            # A suite member sees the lines of its own cases, ids as its fixtures spell them.
            run = attrs.evolve(
                run,
                results={
                    case_id[len(member_prefix) :]: hits
                    for case_id, hits in run.results.items()
                    if case_id.startswith(member_prefix)
                },
            )
        run, repaired, example = run.with_paths(normaliser)
        if repaired:
            print(normalised_note(name, path, repaired, example), file=sys.stderr)
        reordered = order_note(name, path, run.results)
        if reordered is not None:
            print(reordered, file=sys.stderr)
        findings = case_findings(tuple(run.results), fixture_set.cases)
        report(name, path, findings)
        problems[name] = sum(finding.count for finding in findings)
        loaded[name] = run
    return loaded, problems


def order_note(
    backend: str, source: str, results: Mapping[str, Sequence[SearchResult]]
) -> str | None:
    """The one stderr line when a run's rank column orders results otherwise than the
    tools that sort by score would: a lower score ranked above a higher one, or tied
    scores not in trec_eval's tie order (document id descending). `--run` keeps the rank
    column (a graph-expanded hybrid list is not in score order); `cce_metrics.evaluate`,
    trec_eval and ir_measures re-rank by score, so their numbers for such a run differ."""
    reordered = [case_id for case_id, hits in results.items() if _rank_order_differs(hits)]
    if not reordered:
        return None
    shown = ", ".join(reordered[:EXAMPLES])
    return (
        f"note: backend {backend} ({source}): {len(reordered)} "
        f"{_plural(len(reordered), 'case')} rank results otherwise than by score, ties as "
        f"trec_eval breaks them (e.g. {shown}); scored in the file's rank order, while "
        "tools that sort by score (trec_eval, ir_measures, cce_metrics.evaluate) re-rank them"
    )


def _rank_order_differs(hits: Sequence[SearchResult]) -> bool:
    from cce_cli.formats.trec import document_id

    for above, below in itertools.pairwise(hits):
        if below.score > above.score:
            return True
        if below.score == above.score and document_id(below) > document_id(above):
            return True
    return False
