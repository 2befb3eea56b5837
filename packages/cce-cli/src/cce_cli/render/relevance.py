"""Text and JSON renderings of a relevance run, byte for byte as the reference prints them.

Why it exists: the human summary (docs/report-formats.md#human-report) and the
`cce.relevance.report/v2` JSON report (docs/report-formats.md#json-report) are contracts - a
golden file pins them - so column widths, the 6-decimal formatting (`format6` for scores and
p, `format6_signed` for deltas, t and confidence bounds) and the JSON layout live in one
place. Both renderers read the one report model (`cce_cli.evaluation.report.RunSummary`) and
loop over its metrics, so a metric added to the registry needs no change here. `RENDERERS`
is the registry of output formats `--format` chooses from
(docs/architecture.md#how-to-add-an-output-format). Everything here is a pure function of
the model; nothing is computed twice and nothing is printed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Final, Generic, TypeVar

import attrs

from cce_cli.evaluation.harness import BackendReport, Comparison
from cce_cli.evaluation.report import RunSummary, TagGroup
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.output import column, display_text
from cce_cli.render.cost import cost_table
from cce_cli.render.report_json import render_json, report_body
from cce_fixtures import SCHEMA_ID as FIXTURE_SCHEMA
from cce_metrics import Metric, TokenAverages
from cce_retrieval import format6, format6_signed
from cce_stats import paired_test

__all__ = [
    "RENDERERS",
    "REPORT_SCHEMA",
    "Renderer",
    "RunSummary",
    "render_compare",
    "render_human",
    "render_json",
    "report_body",
    "without_vector_count",
    "without_vector_note",
]


def _first_tokens(backends: Sequence[BackendReport]) -> TokenAverages | None:
    for report in backends:
        if report.tokens is not None:
            return report.tokens
    return None


def _metric_header(first: str, metrics: Sequence[Metric], prefix: str = "") -> str:
    return f"  {first:<10}" + "".join(f"{prefix + metric.label:>12}" for metric in metrics)


def _aggregate_tables(
    backends: Sequence[BackendReport],
    queries: int,
    metrics: Sequence[Metric],
    token_metrics: Sequence[Metric],
) -> list[str]:
    """The backend table, and the token table when some query has a ranged anchor."""
    lines = [_metric_header("backend", metrics)]
    for report in backends:
        cells = "".join(f"{format6(report.averages.value(m.key)):>12}" for m in metrics)
        lines.append(f"  {display_text(report.backend):<10}{cells}")
    first_tokens = _first_tokens(backends)
    if first_tokens is not None and token_metrics:
        lines += [
            "",
            f"  token-level span metrics ({first_tokens.queries} of {queries}"
            " queries carry ranged anchors)",
            _metric_header("backend", token_metrics),
        ]
        for report in backends:
            if report.tokens is not None:
                tokens = report.tokens
                cells = "".join(f"{format6(tokens.value(m.key)):>12}" for m in token_metrics)
                lines.append(f"  {display_text(report.backend):<10}{cells}")
    return lines


def _tag_tables(summary: RunSummary, groups: Sequence[TagGroup]) -> list[str]:
    lines: list[str] = []
    for group in groups:
        lines += [
            "",
            f"  tag {display_text(group.tag)} ({group.queries} of {summary.queries} queries)",
        ]
        lines += _aggregate_tables(
            group.backends, group.queries, summary.metrics, summary.token_metrics
        )
    return lines


def render_human(summary: RunSummary) -> str:
    """The summary table (docs/report-formats.md#summary), the per-tag tables when asked for, plus
    the compare block (docs/report-formats.md#compare-block) when comparing."""
    lines = [
        f"CCE relevance — ranking quality vs labeled fixtures ({FIXTURE_SCHEMA})",
        f"  corpus  : {summary.corpus}",
        f"  embedder: {display_text(summary.embedder)}",
        f"  queries : {summary.queries}",
    ]
    if summary.graded:
        lines.append("  gains   : graded (expected anchors 2, secondary anchors 1)")
    if summary.granularity != "chunk":
        lines.append(f"  matched : by {summary.granularity} (kinds and line ranges ignored)")
    lines.append("")
    lines += _aggregate_tables(
        summary.backends, summary.queries, summary.metrics, summary.token_metrics
    )
    cost_lines = cost_table(summary.backends)
    if cost_lines:
        lines += ["", *cost_lines]
    if summary.tags is not None:
        lines += _tag_tables(summary, summary.tags)
    notes = [
        without_vector_note(report.backend, report.without_vector, summary.queries)
        for report in summary.backends
        if report.without_vector
    ]
    if notes:
        lines += ["", *notes]
    text = "\n".join(lines) + "\n"
    if summary.comparison is not None:
        text += render_compare(summary.comparison)
    return text


_LISTED_IDS = 5
"""How many query ids a note names before it only counts the rest."""


def without_vector_count(backend: str, case_ids: Sequence[str], queries: int) -> str:
    """`N of M queries have no vector on B (ids)`, naming the first few ids: the head of
    the summary's note and of `--strict`'s refusal
    (docs/report-formats.md#queries-without-a-vector)."""
    shown = ", ".join(display_text(case_id) for case_id in case_ids[:_LISTED_IDS])
    if len(case_ids) > _LISTED_IDS:
        shown += f" and {len(case_ids) - _LISTED_IDS} more"
    have = "query has" if len(case_ids) == 1 else "queries have"
    return f"{len(case_ids)} of {queries} {have} no vector on {display_text(backend)} ({shown})"


def without_vector_note(
    backend: str, case_ids: Sequence[str], queries: int, member: str | None = None
) -> str:
    """The summary's note on the queries `backend` got no vector for (of suite `member`)."""
    them = "it" if len(case_ids) == 1 else "them"
    whose = "" if member is None else f"member {display_text(member)}: "
    return (
        f"  note: {whose}{without_vector_count(backend, case_ids, queries)}: the embedder gave "
        f"{them} an empty or all-zero vector, so the vector signal ranked nothing for {them}"
    )


def _test_heading(test_name: str, n: int) -> str:
    test = paired_test(test_name)
    if test_name == "t":
        return f"  {test.label} on the per-query deltas (two-sided, n={n}, df={max(n - 1, 0)})"
    return f"  {test.label} on the per-query deltas (two-sided, n={n})"


def render_compare(comparison: Comparison) -> str:
    """Per-case deltas and the paired-test block (docs/report-formats.md#compare-block), starting
    with a blank line.

    The reference's metrics keep the reference's columns; a longer label (a cost metric's,
    `1st-hit tok`) widens its own column, and a metric where lower is better is named in
    the heading, since its deltas are B − A like every other (a negative one is a win)."""
    metrics = [metric.metric for metric in comparison.metrics]
    widths = [max(12, len(metric.label) + 2) for metric in metrics]
    label_width = max([10, *(len(metric.label) for metric in metrics)])
    winner = display_text(comparison.b)
    lower = [metric.label for metric in metrics if not metric.higher_is_better]
    reading = f"positive = {winner} wins"
    if lower:
        reading += f"; for {', '.join(lower)}, negative = {winner} wins"
    lines = [
        "",
        f"  per-query deltas ({display_text(comparison.a)} → {winner}; {reading})",
        f"  {'query':<24}"
        + "".join(
            f"{'d' + metric.label:>{width}}" for metric, width in zip(metrics, widths, strict=True)
        ),
    ]
    for row, case_id in enumerate(comparison.case_ids):
        cells = "".join(
            column(format6_signed(m.deltas[row]), width)
            for m, width in zip(comparison.metrics, widths, strict=True)
        )
        lines.append(f"  {display_text(case_id):<24}{cells}")
    mean_cells = "".join(
        column(format6_signed(m.aggregate_delta), width)
        for m, width in zip(comparison.metrics, widths, strict=True)
    )
    lines.append(f"  {'mean':<24}{mean_cells}")
    n = comparison.metrics[0].result.n if comparison.metrics else 0
    statistic_name = paired_test(comparison.test).statistic_name
    lines += [
        "",
        _test_heading(comparison.test, n),
        f"  {'metric':<{label_width}}{'mean-delta':>14}{statistic_name:>12}{'p':>12}{'95% CI':>26}",
    ]
    for metric in comparison.metrics:
        result = metric.result
        statistic_cell = "n/a" if result.statistic is None else format6_signed(result.statistic)
        p_cell = "n/a" if result.p is None else format6(result.p)
        ci_cell = (
            "n/a"
            if result.ci95 is None
            else f"[{format6_signed(result.ci95[0])}, {format6_signed(result.ci95[1])}]"
        )
        lines.append(
            f"  {metric.label:<{label_width}}{column(format6_signed(result.mean_delta), 14)}"
            f"{column(statistic_cell, 12)}{column(p_cell, 12)}{column(ci_cell, 26)}"
        )
    return "\n".join(lines) + "\n"


_Model = TypeVar("_Model")


@attrs.frozen(slots=True)
class Renderer(Generic[_Model]):
    """One output format: its `--format` name, help and the function rendering the
    command's model (`RunSummary` for `cce relevance`, `DiffReport` for `cce diff`)."""

    name: str
    help: str
    render: Callable[[_Model], str]


def render_html(summary: RunSummary) -> str:
    """The self-contained HTML report (`cce_cli.render.html`: Jinja2 loads only here)."""
    from cce_cli.render.html import render_summary_page

    return render_summary_page(summary)


RENDERERS: Final[Mapping[str, Renderer[RunSummary]]] = MappingProxyType(
    {
        "text": Renderer("text", "the human summary tables (default)", render_human),
        "json": Renderer("json", f"the {REPORT_SCHEMA} document", render_json),
        "html": Renderer("html", "a self-contained HTML report", render_html),
    }
)
"""Output formats by name, in `--format` order; the first is the default."""
