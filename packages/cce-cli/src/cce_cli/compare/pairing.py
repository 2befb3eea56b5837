"""Before against after: pairing two saved relevance reports by case id and testing the change.

Why it exists: a ranking change is judged by running the labeled queries before it
(base) and after it (head) and asking, per metric, which queries moved and whether the
mean moved more than noise would. This module owns the model of that answer
(`DiffReport`): pairing cases by id (never by position), and per metric the
per-query base/head/delta rows, the paired test through the `cce_stats` protocol, the
adjusted p-value over the metrics compared, d_z and wins/ties/losses. The same
computation serves `cce relevance --compare` (`diff_backend_reports`), so its gate
sees exactly the numbers the comparison printed. Reading the reports and choosing each
side's backend is `cce_cli.compare.saved_report`, rendering `cce_cli.render.diff`,
the pass/fail rules `cce_cli.compare.gate` (docs/gating.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.compare.saved_report import SavedBackend, SavedReport
from cce_cli.errors import CliError
from cce_cli.evaluation.harness import BackendReport
from cce_cli.formats.evidence import Evidence
from cce_metrics import COST, COST_METRICS, METRICS, TOKEN, TOKEN_METRICS, Metric
from cce_stats import (
    PairedTestResult,
    adjust_p_values,
    effect_size_dz,
    paired_test,
    wins_ties_losses,
)

__all__ = [
    "DIFF_SCHEMA",
    "DiffGroup",
    "DiffReport",
    "DiffSide",
    "MetricDiff",
    "QueryDelta",
    "backend_values",
    "diff_backend_reports",
    "diff_reports",
    "finite_or_none",
    "head_aggregate",
]

DIFF_SCHEMA: Final = "cce.relevance.diff/v1"


@attrs.frozen(slots=True)
class QueryDelta:
    """One paired query on one metric: base value, head value, head − base."""

    id: str
    base: float
    head: float
    delta: float


@attrs.frozen(slots=True)
class MetricDiff:
    """One metric compared over the paired queries that have it on both sides."""

    metric: Metric
    rows: tuple[QueryDelta, ...]
    result: PairedTestResult
    p_adjusted: float | None
    effect_size: float | None
    wins: int
    ties: int
    losses: int

    @property
    def n(self) -> int:
        return len(self.rows)

    def worse(self, row: QueryDelta) -> bool:
        """Whether the head is worse than the base on this row."""
        return row.delta < 0.0 if self.metric.higher_is_better else row.delta > 0.0

    @property
    def moved_worse(self) -> bool:
        """Whether the mean moved in the worse direction."""
        mean = self.result.mean_delta
        return mean < 0.0 if self.metric.higher_is_better else mean > 0.0


@attrs.frozen(slots=True)
class DiffGroup:
    """Every compared metric over one set of paired queries (all of them, or one tag)."""

    tag: str | None
    case_ids: tuple[str, ...]
    metrics: tuple[MetricDiff, ...]

    def metric(self, key: str) -> MetricDiff | None:
        for item in self.metrics:
            if item.metric.key == key:
                return item
        return None


@attrs.frozen(slots=True)
class DiffSide:
    """Which report and backend a side of the diff is."""

    path: str
    backend: str
    corpus: str | None
    embedder: str | None
    config: Mapping[str, Any] | None = None
    provenance: Mapping[str, Any] | None = None


@attrs.frozen(slots=True)
class DiffReport:
    """Base against head: the paired comparison, the unpaired ids and the settings."""

    base: DiffSide
    head: DiffSide
    test: str
    correction: str
    alpha: float
    overall: DiffGroup
    unpaired_base: tuple[str, ...]
    unpaired_head: tuple[str, ...]
    tags: tuple[DiffGroup, ...] | None = None
    gate_active: bool = False
    gate_reasons: tuple[str, ...] = ()
    members: tuple[str, ...] | None = None
    """For suite reports: the member names, whose cases carry `member/` ids."""
    # What the reviewer-facing renderings show beside the numbers: each case's query
    # text (from the reports' rows or a results file) and what each side retrieved.
    queries: Mapping[str, str] = attrs.field(factory=dict)
    evidence: Evidence | None = None
    # A suite comparison's tested mean and unit (`cce_cli.compare.suite_inference`):
    # mean "macro" or "micro" (None: not a suite), unit "query" or "member".
    mean: str | None = None
    unit: str = "query"
    tag_scope: str = "tag"
    """What the correction adjusts over with `--by-tag`: "tag" (each tag's metrics) or
    "family" (every tag × metric at once, `cce_cli.compare.tag_family`)."""
    gate_metrics: tuple[str, ...] = ()
    """`--gate-metrics` (metric keys, in the order named): the first is the primary
    metric headline counts, colours and orders use; () = the first metric shown."""
    gate_scope: str | None = None
    """What `--fail-on-significant` tested, when `--gate-metrics` narrowed it."""

    @property
    def gate_passed(self) -> bool:
        return not self.gate_reasons


def finite_or_none(p: float | None) -> float | None:
    """`p`, or None for a missing or non-finite one (what `adjust_p_values` leaves out)."""
    return p if p is not None and math.isfinite(p) else None


def _compare_group(
    tag: str | None,
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
    metrics: Sequence[Metric],
    test_name: str,
    correction: str,
) -> DiffGroup:
    """Test every metric over the pairs that have it on both sides, then adjust the p's."""
    test = paired_test(test_name)
    partial: list[tuple[Metric, tuple[QueryDelta, ...], PairedTestResult]] = []
    for item in metrics:
        rows = tuple(
            QueryDelta(case_id, base[item.key], head[item.key], head[item.key] - base[item.key])
            for case_id, base, head in pairs
            if item.key in base and item.key in head
        )
        if not rows and item.group in (TOKEN, COST):
            continue  # a token or cost metric neither side has for these queries
        partial.append((item, rows, test.run([row.delta for row in rows])))
    # The decision p, not the printed one: constant deltas print the reference's p = 0
    # but decide on the exact sign-flip p (docs/statistics.md#constant-deltas).
    adjusted = adjust_p_values(
        [finite_or_none(result.decision_p) for _, _, result in partial], correction
    )
    diffs: list[MetricDiff] = []
    for (item, rows, result), p_adjusted in zip(partial, adjusted, strict=True):
        deltas = [row.delta for row in rows]
        oriented = deltas if item.higher_is_better else [-delta for delta in deltas]
        wins, ties, losses = wins_ties_losses(oriented)
        diffs.append(
            MetricDiff(item, rows, result, p_adjusted, effect_size_dz(deltas), wins, ties, losses)
        )
    return DiffGroup(tag, tuple(case_id for case_id, _, _ in pairs), tuple(diffs))


def _groups(
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
    tags_of: Mapping[str, tuple[str, ...]],
    metrics: Sequence[Metric],
    test: str,
    correction: str,
) -> tuple[DiffGroup, ...]:
    """One group per tag (sorted by code point), each with its own tests."""
    tags = sorted({tag for case_id, _, _ in pairs for tag in tags_of.get(case_id, ())})
    return tuple(
        _compare_group(
            tag,
            [pair for pair in pairs if tag in tags_of.get(pair[0], ())],
            metrics,
            test,
            correction,
        )
        for tag in tags
    )


def _compared_metrics(
    pairs: Sequence[tuple[str, Mapping[str, float], Mapping[str, float]]],
) -> list[Metric]:
    """Chunk metrics every paired row carries on both sides, then the token metrics some
    paired row carries on both sides; registry order."""
    chosen = [
        item
        for item in METRICS
        if pairs and all(item.key in base and item.key in head for _, base, head in pairs)
    ]
    chosen += [
        item
        for item in TOKEN_METRICS
        if any(item.key in base and item.key in head for _, base, head in pairs)
    ]
    cost_keys = dict.fromkeys(key for _, base, _ in pairs for key in base)
    chosen += [
        item
        for item in (COST_METRICS.resolve(key) for key in cost_keys)
        if item is not None
        and item.group == COST
        and any(item.key in base and item.key in head for _, base, head in pairs)
    ]
    return chosen


def diff_reports(
    base: SavedReport,
    head: SavedReport,
    base_backend: SavedBackend,
    head_backend: SavedBackend,
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    by_tag: bool = False,
) -> DiffReport:
    """Pair the two backends' cases by id (base order) and compare every shared metric."""
    head_cases = {case.id: case for case in head_backend.cases}
    base_ids = {case.id for case in base_backend.cases}
    pairs = [
        (case.id, case.values, head_cases[case.id].values)
        for case in base_backend.cases
        if case.id in head_cases
    ]
    if not pairs and (base_backend.cases or head_backend.cases):
        # A gate over nothing would pass anything: a wrong or renamed report is an error.
        raise CliError(
            f"no case ids in common between {base.path} ({base_backend.name}) and "
            f"{head.path} ({head_backend.name}); diff reports of the same fixture set"
        )
    tags_of: dict[str, tuple[str, ...]] = {}
    for case in base_backend.cases:
        if case.id in head_cases:
            tags_of[case.id] = case.tags or head_cases[case.id].tags
    metrics = _compared_metrics(pairs)
    return DiffReport(
        DiffSide(
            base.path,
            base_backend.name,
            base.corpus,
            base.embedder,
            base_backend.config,
            base.provenance,
        ),
        DiffSide(
            head.path,
            head_backend.name,
            head.corpus,
            head.embedder,
            head_backend.config,
            head.provenance,
        ),
        test,
        correction,
        alpha,
        _compare_group(None, pairs, metrics, test, correction),
        tuple(case.id for case in base_backend.cases if case.id not in head_cases),
        tuple(case.id for case in head_backend.cases if case.id not in base_ids),
        _groups(pairs, tags_of, metrics, test, correction) if by_tag else None,
        members=base.members if base.members is not None else head.members,
        queries=_query_texts(base_backend, head_backend),
    )


def _query_texts(*backends: SavedBackend) -> dict[str, str]:
    """Each case's query text where a report row carries one (the base side wins)."""
    texts: dict[str, str] = {}
    for backend in backends:
        for case in backend.cases:
            if case.query is not None:
                texts.setdefault(case.id, case.query)
    return texts


def backend_values(
    report: BackendReport, shown: Sequence[Metric] | None = None
) -> list[tuple[str, dict[str, float]]]:
    """Each case's id and full-precision scores by metric key, token metrics included;
    with `shown`, only those chunk metrics (what a report with those metrics carries)."""
    keys = None if shown is None else {item.key for item in shown}
    rows: list[tuple[str, dict[str, float]]] = []
    for case in report.cases:
        values = {
            key: value for key, value in case.score.values.items() if keys is None or key in keys
        }
        for item in TOKEN_METRICS:
            token_value = case.score.value(item.key)
            if token_value is not None:
                values[item.key] = token_value
        if case.cost is not None:
            # Only a run that asked for cost has it; a query without a target has none.
            values.update((key, value) for key, value in case.cost.values if value is not None)
        rows.append((case.id, values))
    return rows


def diff_backend_reports(
    a: BackendReport,
    b: BackendReport,
    metrics: Sequence[Metric],
    *,
    test: str = "t",
    correction: str = "holm",
) -> DiffGroup:
    """The comparison of two in-run backend reports (full-precision scores, case order)."""
    pairs = [
        (case_id, base, head)
        for (case_id, base), (_, head) in zip(backend_values(a), backend_values(b), strict=True)
    ]
    return _compare_group(None, pairs, metrics, test, correction)


def head_aggregate(report: BackendReport, item: Metric) -> float | None:
    """An in-run backend's aggregate of `item` (None for an absent token average)."""
    if item.key in report.averages.values:
        return report.averages.value(item.key)
    if item.key in TOKEN_METRICS and report.tokens is not None:
        return report.tokens.value(item.key)
    if item.group == COST and report.cost is not None and item in report.cost.metrics:
        return report.cost.value(item.key)
    return None
