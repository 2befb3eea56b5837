"""The relevance harness: run labeled cases through the real backends and score them.

Why it exists: `cce relevance` is the composition point of the project. The fixture
contract (cce_fixtures) says what was expected, the retrieval pipeline (cce_retrieval)
says what came back, cce_metrics turns the pair into scores and cce_stats compares two
backends. This module owns the glue, and nothing else: how each backend is invoked
(harness spec §3), how anchors become a judgment matrix, the per-backend report (§4.2)
and the paired comparison (§6). It never ranks and never formats; rendering lives in
`cce_cli.render`.

Work is shared across the run: the line-weight table is built once from the index's
chunks (and only when some case has a ranged anchor), and each case's query vector is
embedded once and reused by the vector and hybrid backends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import attrs

from cce_fixtures import Anchor, Case, FixtureSet
from cce_metrics import (
    LineWeights,
    MacroAverages,
    QueryScore,
    Span,
    TokenAverages,
    macro_average,
    score_query,
    score_tokens,
    token_average,
)
from cce_retrieval import Backend, Index, Query, QueryEmbedder, SearchResult, hybrid, rust_trim
from cce_stats import PairedTTest, paired_t_test

__all__ = [
    "BACKEND_NAMES",
    "COMPARED_METRICS",
    "BackendError",
    "BackendReport",
    "CaseReport",
    "Comparison",
    "MetricComparison",
    "Query",
    "compare_reports",
    "evaluate",
    "evaluate_backend",
    "judge",
    "line_weights",
    "parse_backends",
    "run_backend",
]

BACKEND_NAMES: Final = ("bm25", "vector", "hybrid")

MetricAccessor = Callable[[MacroAverages | QueryScore], float]

# (human label, JSON key, accessor) in the fixed order of harness spec §6.1.
COMPARED_METRICS: Final[tuple[tuple[str, str, MetricAccessor], ...]] = (
    ("P@k", "precision_at_k", lambda score: score.precision_at_k),
    ("recall", "recall", lambda score: score.recall),
    ("MRR", "mrr", lambda score: score.mrr),
    ("F1", "f1", lambda score: score.f1),
)


class BackendError(ValueError):
    """A `--backend`/`--compare` list the harness cannot run; `str()` is the message."""


def parse_backends(text: str) -> tuple[str, ...]:
    """Backend names from a comma list: trimmed, blanks skipped, first occurrence kept.

    Raises BackendError for an unknown name or when no name is left (spec §2.5).
    """
    chosen: list[str] = []
    for part in text.split(","):
        name = rust_trim(part)
        if not name:
            continue
        if name not in BACKEND_NAMES:
            raise BackendError(f"unknown backend {name!r}; expected one of bm25, vector, hybrid")
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise BackendError("--backend needs at least one of bm25, vector, hybrid")
    return tuple(chosen)


def run_backend(index: Index, backend: str | Backend, query: Query, k: int) -> list[SearchResult]:
    """Results of one backend for one query, at most `k` of them (harness spec §3).

    A blank query or an empty index returns no results on every backend. Hybrid is the
    exact `cce search` pipeline with graph expansion on; expansion may append chunks
    after the top k, so its list is cut back to `k`. A `Backend` object (a named
    configuration, an external run, a plugin) answers for itself.
    """
    if not isinstance(backend, str):
        return backend.search(index, query, k)[:k]
    if not rust_trim(query.text) or not index.chunks:
        return []
    if backend == "bm25":
        return hybrid.bm25_only_search(index, query.text, k)
    if backend == "vector":
        return hybrid.vector_search(index, query.vector(), k)
    if backend == "hybrid":
        return hybrid.search_with_vector(index, query.vector(), query.text, k, True)[:k]
    raise BackendError(f"unknown backend {backend!r}; expected one of bm25, vector, hybrid")


def judge(results: Sequence[SearchResult], anchors: Sequence[Anchor]) -> list[list[bool]]:
    """The judgment matrix: row i says which anchors result i matches."""
    return [[anchor.matches(result) for anchor in anchors] for result in results]


def line_weights(index: Index) -> LineWeights:
    """The token weight of every indexed line, from the chunks in index order (§5.1)."""
    return LineWeights.from_chunks(
        (chunk.file_path, chunk.start_line, chunk.content) for chunk in index.chunks
    )


def _expected_spans(anchors: Sequence[Anchor]) -> list[Span]:
    spans: list[Span] = []
    for anchor in anchors:
        if anchor.line_range is not None and anchor.file_path is not None:
            first, last = anchor.line_range
            spans.append((anchor.file_path, first, last))
    return spans


def score_case(case: Case, results: Sequence[SearchResult], weights: LineWeights) -> QueryScore:
    """Chunk-level and token-level scores of one case from its results."""
    considered = results[: case.k]
    expected_spans = _expected_spans(case.expected)
    tokens = None
    if expected_spans:
        retrieved = [(hit.file_path, hit.start_line, hit.end_line) for hit in considered]
        tokens = score_tokens(expected_spans, retrieved, case.k, weights)
    return score_query(judge(considered, case.expected), len(case.expected), case.k, tokens)


@attrs.frozen(slots=True)
class CaseReport:
    """One case's outcome on one backend."""

    id: str
    k: int
    score: QueryScore


@attrs.frozen(slots=True)
class BackendReport:
    """Every case's score on one backend, with the macro and token averages."""

    backend: str
    cases: tuple[CaseReport, ...]
    averages: MacroAverages
    tokens: TokenAverages | None


def evaluate_backend(
    index: Index,
    backend: str | Backend,
    cases: Sequence[Case],
    queries: Sequence[Query],
    weights: LineWeights,
) -> BackendReport:
    """Run every case (fixture order) on one backend and aggregate (spec §4.2)."""
    reports = tuple(
        CaseReport(
            case.id, case.k, score_case(case, run_backend(index, backend, query, case.k), weights)
        )
        for case, query in zip(cases, queries, strict=True)
    )
    scores = [report.score for report in reports]
    name = backend if isinstance(backend, str) else backend.name
    return BackendReport(name, reports, macro_average(scores), token_average(scores))


def evaluate(
    index: Index,
    embedder: QueryEmbedder,
    fixture_set: FixtureSet,
    backends: Sequence[str | Backend],
) -> tuple[BackendReport, ...]:
    """Evaluate each backend, in the given order, over all cases of the fixture set."""
    # Only ranged cases read line weights; skip the pass over every chunk without them.
    ranged = any(_expected_spans(case.expected) for case in fixture_set.cases)
    weights = line_weights(index) if ranged else LineWeights.uniform()
    queries = [Query(case.query, embedder, case_id=case.id) for case in fixture_set.cases]
    return tuple(
        evaluate_backend(index, backend, fixture_set.cases, queries, weights)
        for backend in backends
    )


@attrs.frozen(slots=True)
class MetricComparison:
    """One metric of B against A: per-case deltas (B − A), their paired t-test, and the
    difference of the two aggregate means (what the human `mean` row prints)."""

    label: str
    key: str
    deltas: tuple[float, ...]
    aggregate_delta: float
    test: PairedTTest


@attrs.frozen(slots=True)
class Comparison:
    """Backend B against backend A, case by case, one paired t-test per metric (§6.1)."""

    a: str
    b: str
    case_ids: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]


def _compare_metric(
    label: str, key: str, metric: MetricAccessor, a: BackendReport, b: BackendReport
) -> MetricComparison:
    deltas = tuple(
        metric(right.score) - metric(left.score)
        for left, right in zip(a.cases, b.cases, strict=True)
    )
    # The aggregate difference and the mean of the per-case deltas agree to 6 decimals
    # in practice but are computed differently; the reference prints both.
    aggregate = metric(b.averages) - metric(a.averages)
    return MetricComparison(label, key, deltas, aggregate, paired_t_test(deltas))


def compare_reports(a: BackendReport, b: BackendReport) -> Comparison:
    """Pair the two reports case by case and test each metric's deltas B − A."""
    if len(a.cases) != len(b.cases):
        raise ValueError(f"cannot pair {len(a.cases)} cases with {len(b.cases)}")
    return Comparison(
        a.backend,
        b.backend,
        tuple(case.id for case in a.cases),
        tuple(_compare_metric(label, key, metric, a, b) for label, key, metric in COMPARED_METRICS),
    )
