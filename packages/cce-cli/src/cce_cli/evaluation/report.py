"""The in-memory model of a relevance run that every renderer reads.

Why it exists: the text summary, the `cce.relevance.report/v2` JSON document and any
later format are views of one value. `RunSummary` holds where the run happened, one
`BackendReport` per backend, the optional comparison, which metrics are shown (the
registry's defaults unless a caller picks others) and, when asked for, the per-tag
aggregates. Renderers loop over `metrics` / `token_metrics` instead of naming metrics
(docs/architecture.md#how-to-add-an-output-format).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_cli.evaluation.harness import BackendReport, Comparison
from cce_cli.formats.cost_scores import summarise_cost
from cce_metrics import METRICS, TOKEN_METRICS, Metric, macro_average, token_average

__all__ = ["RunSummary", "TagGroup", "tag_groups"]


@attrs.frozen(slots=True)
class TagGroup:
    """The cases of one tag, re-aggregated per backend (case order kept)."""

    tag: str
    backends: tuple[BackendReport, ...]

    @property
    def queries(self) -> int:
        return len(self.backends[0].cases) if self.backends else 0


@attrs.frozen(slots=True)
class RunSummary:
    """What a relevance run reports: where it ran, and one report per backend."""

    corpus: str
    embedder: str
    backends: tuple[BackendReport, ...]
    comparison: Comparison | None = None
    metrics: tuple[Metric, ...] = METRICS.defaults()
    token_metrics: tuple[Metric, ...] = TOKEN_METRICS.defaults()
    tags: tuple[TagGroup, ...] | None = None
    graded: bool = False
    """Expected anchors gained 2 in the ranked metrics (docs/metrics.md#graded-relevance)."""
    granularity: str = "chunk"
    """What results were matched against anchors by (docs/harness.md#granularity)."""
    cost_metrics: tuple[Metric, ...] = ()
    """The cost metrics asked for (docs/metrics.md#cost-metrics); none by default."""

    @property
    def queries(self) -> int:
        """Number of cases (the first report's count; every report has them all)."""
        return len(self.backends[0].cases) if self.backends else 0


def tag_groups(
    backends: Sequence[BackendReport], case_tags: Sequence[Sequence[str]]
) -> tuple[TagGroup, ...]:
    """Per-tag sub-reports: tags sorted by code point, cases in fixture order.

    `case_tags[i]` are the tags of case i (every backend report lists the cases in the
    same order). A case with several tags counts in each; untagged cases in none.
    """
    tags = sorted({tag for tags in case_tags for tag in tags})
    groups: list[TagGroup] = []
    for tag in tags:
        members = [index for index, tags_of in enumerate(case_tags) if tag in tags_of]
        reports: list[BackendReport] = []
        for report in backends:
            cases = tuple(report.cases[index] for index in members)
            scores = [case.score for case in cases]
            cost = None
            if report.cost is not None:
                costs = [case.cost for case in cases if case.cost is not None]
                cost = summarise_cost(report.cost.metrics, costs, report.cost.tokenizer)
            reports.append(
                BackendReport(
                    report.backend, cases, macro_average(scores), token_average(scores), cost
                )
            )
        groups.append(TagGroup(tag, tuple(reports)))
    return tuple(groups)
