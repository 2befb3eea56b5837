"""The relevance harness: run labeled cases through the real backends and score them.

Why it exists: `cce relevance` is the composition point of the project. The fixture
contract (cce_fixtures) says what was expected, the retrieval pipeline (cce_retrieval)
says what came back, cce_metrics turns the pair into scores and cce_stats compares two
backends. This module owns the glue, and nothing else: how each backend is invoked
(docs/harness.md#backends), how anchors become a judgment matrix, the per-backend report
(docs/metrics.md#macro-averages) and the paired comparison (docs/statistics.md#paired-tests). It
never ranks and never formats; rendering lives in
`cce_cli.render.relevance`.

Work is shared across the run: the line-weight table is built once from the index's
chunks (and only when some case has a ranged anchor), and each case's query vector is
embedded once and reused by the vector and hybrid backends.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Sequence
from typing import Final

import attrs

from cce_cli.formats.cost_scores import CaseCost, cost_depth, summarise_cost
from cce_cli.formats.judging import file_case, judge
from cce_cli.formats.scores import BackendReport, CaseReport
from cce_fixtures import Anchor, Case, FixtureSet
from cce_metrics import (
    COST,
    COST_METRICS,
    ESTIMATOR,
    METRICS,
    LineWeights,
    Metric,
    QueryScore,
    Span,
    anchor_gains,
    judgment,
    macro_average,
    reading_of_texts,
    score_reading,
    score_tokens,
    token_average,
)
from cce_retrieval import (
    Backend,
    BackendConfigError,
    Index,
    Query,
    QueryEmbedder,
    SearchResult,
    backend_names,
    create_backend,
    rust_trim,
)
from cce_stats import PairedTest, PairedTestResult, paired_test

__all__ = [
    "BACKEND_NAMES",
    "COMPARED_METRICS",
    "GRANULARITIES",
    "BackendError",
    "BackendReport",
    "CaseReport",
    "Comparison",
    "MetricComparison",
    "Query",
    "UnknownBackendError",
    "compare_reports",
    "evaluate",
    "evaluate_backend",
    "file_case",
    "file_ranking",
    "judge",
    "line_weights",
    "parse_backends",
    "parse_cost_metrics",
    "parse_metrics",
    "run_backend",
    "score_cost",
]

BACKEND_NAMES: Final = ("bm25", "vector", "hybrid")
"""The reference's backends: what runs when no backend is chosen
(docs/harness.md#backend-selection). Every name `cce_retrieval.backend_names()` lists can be
chosen."""

COMPARED_METRICS: Final[tuple[Metric, ...]] = METRICS.defaults()
"""The metrics `--compare` tests, in the fixed report order (docs/harness.md#compare-mode)."""


class BackendError(ValueError):
    """A `--backend`/`--compare` list the harness cannot run; `str()` is the message."""


class UnknownBackendError(BackendError):
    """A backend name that is not registered, configured or an external run: a usage
    error, with the nearest valid name when one is close."""


def parse_metrics(text: str | None) -> tuple[Metric, ...]:
    """The chunk metrics a run reports: the reference four, then the ones `text` adds.

    `text` is a comma list of registry names (`ndcg,map,hit,rprec`; blanks skipped,
    repeats and reference names allowed). The result is in registry order whatever the
    order of the list, so the reference columns never move. None gives the reference
    four. Cost metric names (`first-hit-tokens`, `recall@500t`) are skipped here:
    `parse_cost_metrics` reads them. Raises ValueError naming the unknown name and the
    valid ones.
    """
    chosen = set(COMPARED_METRICS)
    for part in (text or "").split(","):
        name = rust_trim(part)
        if not name or _is_cost_name(name):
            continue
        if name not in METRICS.names():
            valid = ", ".join(METRICS.names())
            raise ValueError(
                f"unknown metric {name!r} for --metrics; expected one of {valid}, or a cost "
                "metric: first-hit-tokens, recall@NNNNt (docs/metrics.md#cost-metrics)"
            )
        chosen.add(METRICS.get(name))
    return tuple(item for item in METRICS if item in chosen)


def _is_cost_name(name: str) -> bool:
    return name not in METRICS.names() and COST_METRICS.resolve(name) is not None


def parse_cost_metrics(text: str | None, budgets: str | None = None) -> tuple[Metric, ...]:
    """The cost metrics a run reports (docs/metrics.md#cost-metrics): the cost names of
    the `--metrics` list `text`, then `recall@Nt` for each budget of the comma list
    `budgets` (`--budgets 500,4000`), each once, in the order first named.

    Empty when neither names one: the run then reads no deeper than k and its reports
    carry no cost key. Raises ValueError for a budget that is not a positive integer.
    """
    chosen: list[Metric] = []
    for part in (text or "").split(","):
        name = rust_trim(part)
        if name and _is_cost_name(name):
            chosen.append(COST_METRICS.get(name))
    for part in (budgets or "").split(","):
        budget = rust_trim(part)
        if not budget:
            continue
        if not budget.isascii() or not budget.isdigit() or int(budget) < 1:
            raise ValueError(
                f"--budgets takes positive token counts such as 500,4000; got {budget!r}"
            )
        chosen.append(COST_METRICS.get(f"recall@{int(budget)}t"))
    return tuple(dict.fromkeys(chosen))


def parse_backends(
    text: str, known: Sequence[str] | None = None, flag: str = "--backend"
) -> tuple[str, ...]:
    """Backend names from a comma list: trimmed, blanks skipped, first occurrence kept.

    Raises BackendError for an unknown name or when no name is left
    (docs/harness.md#backend-selection); the valid names are `known`, by default the
    backend registry's (`flag` names the option in that message).
    """
    if known is None:
        known = backend_names()
    chosen: list[str] = []
    for part in text.split(","):
        name = rust_trim(part)
        if not name:
            continue
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            if not near:  # a different case is the likeliest slip of all
                near = [item for item in known if item.lower() == name.lower()][:1]
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise UnknownBackendError(
                f"unknown backend {name!r}; expected one of {', '.join(known)}{hint}"
            )
        if name not in chosen:
            chosen.append(name)
    if not chosen:
        raise BackendError(f"{flag} needs at least one of {', '.join(known)}")
    return tuple(chosen)


def _backend(name: str | Backend) -> Backend:
    """A registered backend by name; a `Backend` object (a named configuration, an
    external run, a plugin) is used as it is."""
    if not isinstance(name, str):
        return name
    try:
        return create_backend(name)
    except BackendConfigError as error:
        raise BackendError(str(error)) from None


def run_backend(index: Index, backend: str | Backend, query: Query, k: int) -> list[SearchResult]:
    """Results of one registered backend for one query, at most `k` of them
    (docs/harness.md#backends).

    A blank query or an empty index returns no results on every backend; hybrid is the
    exact `cce search` pipeline with graph expansion on, cut back to `k`.
    """
    return _backend(backend).search(index, query, k)[:k]


def line_weights(index: Index) -> LineWeights:
    """The token weight of every indexed line, from the chunks in index order
    (docs/metrics.md#token-metrics)."""
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


GRANULARITIES: Final = ("chunk", "file")
"""What a result and an anchor are compared by (docs/harness.md#granularity): `chunk`
(every facet of the anchor: path, kind, lines; the default) or `file` (the path alone)."""


def file_ranking(results: Sequence[SearchResult]) -> tuple[SearchResult, ...]:
    """The ranking as files: each path once, at its first rank, ranks renumbered 1..n."""
    seen: set[str] = set()
    files: list[SearchResult] = []
    for hit in results:
        if hit.file_path not in seen:
            seen.add(hit.file_path)
            files.append(attrs.evolve(hit, rank=len(files) + 1))
    return tuple(files)


def score_case(
    case: Case,
    results: Sequence[SearchResult],
    weights: LineWeights,
    *,
    graded: bool = False,
) -> QueryScore:
    """Chunk-level and token-level scores of one case from its results.

    The judgment has the expected anchors' columns, then the secondary anchors'; the
    reference metrics read the expected ones only, the ranked metrics all of them with
    their gains (docs/metrics.md#graded-relevance): expected anchors gain 2 when
    `graded`, else 1; secondary anchors gain 1.
    """
    considered = results[: case.k]
    expected_spans = _expected_spans(case.expected)
    tokens = None
    if expected_spans:
        retrieved = [(hit.file_path, hit.start_line, hit.end_line) for hit in considered]
        tokens = score_tokens(expected_spans, retrieved, case.k, weights)
    anchors = (*case.expected, *case.secondary)
    judged = judgment(
        judge(considered, anchors),
        len(case.expected),
        case.k,
        tokens=tokens,
        secondary=len(case.secondary),
        gains=anchor_gains(len(case.expected), len(case.secondary), graded=graded),
    )
    return QueryScore.from_judgment(judged)


def score_cost(
    case: Case,
    results: Sequence[SearchResult],
    metrics: Sequence[Metric],
    *,
    granularity: str = "chunk",
) -> CaseCost:
    """The cost metrics of one case from its ranking down to the metrics' depth
    (docs/metrics.md#cost-metrics).

    Each result costs the `cce.tokens/v1` estimate of its own text; its targets are the
    expected and secondary anchors it matches, as nDCG counts them (at `file`
    granularity the ranking is read as files, each once, against the anchors' paths).
    """
    depth = cost_depth(metrics)
    judged_case = case
    ranking = tuple(results)
    if granularity == "file":
        judged_case = file_case(case)
        ranking = file_ranking(ranking)
    ranking = ranking[:depth]
    anchors = (*judged_case.expected, *judged_case.secondary)
    read = reading_of_texts(
        judge(ranking, anchors),
        [hit.content for hit in ranking],
        len(anchors),
        tokenizer=ESTIMATOR,
    )
    values = [(item.key, score_reading(read, item)) for item in metrics]
    return CaseCost(values, read, ranking)


def evaluate_backend(
    index: Index,
    backend: str | Backend,
    cases: Sequence[Case],
    queries: Sequence[Query],
    weights: LineWeights,
    *,
    graded: bool = False,
    granularity: str = "chunk",
    progress: Callable[[], None] | None = None,
    cost_metrics: Sequence[Metric] = (),
) -> BackendReport:
    """Run every case (fixture order) on one backend and aggregate
    (docs/metrics.md#macro-averages). At `file` granularity the first `k` results are
    judged as the files they name, each once. `progress()` is called after each query.

    With `cost_metrics`, the backend is also asked for the metrics' depth (when it is
    deeper than k) and each case carries its cost values; the quality metrics are
    scored from exactly the ranking a run without them scores."""
    runner = _backend(backend)
    depth = cost_depth(cost_metrics)
    reports: list[CaseReport] = []
    without_vector: list[str] = []
    for case, query in zip(cases, queries, strict=True):
        started = time.perf_counter()
        results = tuple(runner.search(index, query, case.k)[: case.k])
        latency_ms = (time.perf_counter() - started) * 1000.0
        cost = None
        if cost_metrics:
            # A backend's top k may depend on how many it is asked for (candidate pools,
            # expansion): the quality metrics keep the ranking asked at k.
            deep = results
            if depth > case.k:
                deep = tuple(runner.search(index, query, depth)[:depth])
            cost = score_cost(case, deep, cost_metrics, granularity=granularity)
        if query.has_no_vector(index):
            without_vector.append(case.id)
        if granularity == "file":
            results = file_ranking(results)
            score = score_case(file_case(case), results, weights, graded=graded)
        else:
            score = score_case(case, results, weights, graded=graded)
        reports.append(
            CaseReport(case.id, case.k, score, results, case.tags, cost, latency_ms=latency_ms)
        )
        if progress is not None:
            progress()
    scores = [report.score for report in reports]
    summary = None
    if cost_metrics:
        costs = [report.cost for report in reports if report.cost is not None]
        summary = summarise_cost(cost_metrics, costs, ESTIMATOR.id)
    return BackendReport(
        runner.name,
        tuple(reports),
        macro_average(scores),
        token_average(scores),
        summary,
        tuple(without_vector),
    )


@attrs.define
class _EmbedOnce:
    """One case's query embedder: embeds on the first call and answers every later call
    (another backend's) with the same vector, so a query is embedded (and a failed
    embedding warned about) at most once per run."""

    embedder: QueryEmbedder
    vector: list[float] | None = None

    def embed(self, text: str) -> list[float]:
        if self.vector is None:
            self.vector = self.embedder.embed(text)
        return self.vector


def evaluate(
    index: Index,
    embedder: QueryEmbedder,
    fixture_set: FixtureSet,
    backends: Sequence[str | Backend],
    *,
    graded: bool = False,
    granularity: str = "chunk",
    corpus_root: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    cost_metrics: Sequence[Metric] = (),
) -> tuple[BackendReport, ...]:
    """Evaluate each backend, in the given order, over all cases of the fixture set.

    `graded` gives expected anchors gain 2 in the ranked metrics (see `score_case`);
    `granularity` is one of `GRANULARITIES`; `corpus_root` is handed to every backend
    with each query (plugins read files from it); `progress(done, total)` is called after
    each (backend, query), total being cases × backends; `cost_metrics` are scored
    too (see `evaluate_backend`).
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity {granularity!r}; expected one of chunk, file")
    # Only ranged cases read line weights; skip the pass over every chunk without them.
    ranged = granularity == "chunk" and any(
        _expected_spans(case.expected) for case in fixture_set.cases
    )
    weights = line_weights(index) if ranged else LineWeights.uniform()
    # One embedding per case, shared by every backend; each backend gets its own Query
    # so that `has_no_vector` tells whether that backend asked for the vector.
    shared = [_EmbedOnce(embedder) for _ in fixture_set.cases]

    def queries() -> list[Query]:
        return [
            Query(case.query, once, case_id=case.id, corpus_root=corpus_root)
            for case, once in zip(fixture_set.cases, shared, strict=True)
        ]

    total = len(fixture_set.cases) * len(backends)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return tuple(
        evaluate_backend(
            index,
            backend,
            fixture_set.cases,
            queries(),
            weights,
            graded=graded,
            granularity=granularity,
            progress=step if progress is not None else None,
            cost_metrics=cost_metrics,
        )
        for backend in backends
    )


@attrs.frozen(slots=True)
class MetricComparison:
    """One metric of B against A: per-case deltas (B − A), the paired test's result on
    them, and the difference of the two aggregate means (what the human `mean` row
    prints)."""

    metric: Metric
    deltas: tuple[float, ...]
    aggregate_delta: float
    result: PairedTestResult

    @property
    def label(self) -> str:
        return self.metric.label

    @property
    def key(self) -> str:
        return self.metric.key


@attrs.frozen(slots=True)
class Comparison:
    """Backend B against backend A, case by case, one paired test per metric
    (docs/harness.md#compare-mode)."""

    a: str
    b: str
    case_ids: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]
    test: str = "t"


def _compare_metric(
    metric: Metric, a: BackendReport, b: BackendReport, test: PairedTest
) -> MetricComparison:
    deltas = tuple(
        right.score.values[metric.key] - left.score.values[metric.key]
        for left, right in zip(a.cases, b.cases, strict=True)
    )
    # The aggregate difference and the mean of the per-case deltas agree to 6 decimals
    # in practice but are computed differently; the reference prints both.
    aggregate = b.averages.value(metric.key) - a.averages.value(metric.key)
    return MetricComparison(metric, deltas, aggregate, test.run(deltas))


def _cost_values(report: BackendReport, metric: Metric) -> list[float | None]:
    return [None if case.cost is None else case.cost.value(metric.key) for case in report.cases]


def _compare_cost(
    metric: Metric, a: BackendReport, b: BackendReport, test: PairedTest
) -> MetricComparison | None:
    """A cost metric of B against A (deltas B − A, unoriented like every delta), or None
    when some case has no value on a side (a query without a target): the deltas are
    listed case by case, so a metric some case lacks is not compared in-run."""
    left, right = _cost_values(a, metric), _cost_values(b, metric)
    deltas: list[float] = []
    for base, head in zip(left, right, strict=True):
        if base is None or head is None:
            return None
        deltas.append(head - base)
    if a.cost is None or b.cost is None:
        return None
    base_mean, head_mean = a.cost.value(metric.key), b.cost.value(metric.key)
    if base_mean is None or head_mean is None:
        return None
    return MetricComparison(metric, tuple(deltas), head_mean - base_mean, test.run(deltas))


def compare_reports(
    a: BackendReport,
    b: BackendReport,
    metrics: Sequence[Metric] = COMPARED_METRICS,
    test: str = "t",
) -> Comparison:
    """Pair the two reports case by case and test each metric's deltas B − A; a cost
    metric among `metrics` is compared on the cases' cost values.

    `test` names a paired test of `cce_stats.PAIRED_TESTS` (the reference's t-test by
    default); ValueError for an unknown name or mismatched case lists.
    """
    if len(a.cases) != len(b.cases):
        raise ValueError(f"cannot pair {len(a.cases)} cases with {len(b.cases)}")
    paired = paired_test(test)
    compared = [
        _compare_cost(metric, a, b, paired)
        if metric.group == COST
        else _compare_metric(metric, a, b, paired)
        for metric in metrics
    ]
    return Comparison(
        a.backend,
        b.backend,
        tuple(case.id for case in a.cases),
        tuple(item for item in compared if item is not None),
        paired.name,
    )
