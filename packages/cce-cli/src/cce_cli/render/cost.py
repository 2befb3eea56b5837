"""The cost metrics in every rendering: their JSON objects, their text table and their curve.

Why it exists: the cost metrics (docs/metrics.md#cost-metrics) appear in a report only
when a run asks for them, and one of them is a token count where every other number is
a fraction. Keeping their pieces here - the `cost` objects of the JSON report
(docs/report-formats.md#cost), the text and markdown tables that show
`first-hit-tokens` as tokens, and the recall-versus-tokens points of the HTML chart -
leaves the default renderers untouched and byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cce_cli.formats.cost_scores import CaseCost, CostSummary, cost_depth, first_hit_cap
from cce_cli.formats.scores import BackendReport
from cce_metrics import DEFAULT_BUDGETS, TOKENIZER_ID, Metric, recall_curve
from cce_retrieval import format6

__all__ = [
    "cost_averages_json",
    "cost_case_json",
    "cost_cell",
    "cost_curve",
    "cost_header_json",
    "cost_table",
]


def _cell(value: float | None) -> str | None:
    return None if value is None else format6(value)


def cost_header_json(metrics: Sequence[Metric], tokenizer: str = TOKENIZER_ID) -> dict[str, Any]:
    """The report's top-level `cost` object: what was measured and how."""
    return {
        "depth": cost_depth(metrics),
        "first_hit_cap": first_hit_cap(metrics),
        "metrics": [item.name for item in metrics],
        "tokenizer": tokenizer,
    }


def cost_averages_json(summary: CostSummary) -> dict[str, Any]:
    """A backend's `cost` object: each metric's mean (null when no query defines it)
    and how many queries have a target."""
    body: dict[str, Any] = {"queries": summary.queries}
    for item in summary.metrics:
        body[item.key] = _cell(summary.value(item.key))
    return body


def cost_case_json(cost: CaseCost) -> dict[str, Any]:
    """A query's `cost` object: each metric's value (null: the query has no target)."""
    return {key: _cell(value) for key, value in cost.values}


def cost_cell(item: Metric, value: float | None) -> str:
    """One value as a human reads it: a token count rounded to a whole token, a
    fraction to four decimals, `-` when undefined."""
    if value is None:
        return "-"
    if item.unit == "tokens":
        return f"{value:,.0f}"
    return f"{value:.4f}"


def cost_table(reports: Sequence[BackendReport]) -> list[str]:
    """The text lines of the cost table: one row per backend, one column per metric,
    with the tokenizer, depth and cap it was measured with. Empty without cost."""
    measured = [report for report in reports if report.cost is not None]
    if not measured:
        return []
    first = measured[0].cost
    assert first is not None
    headings = ["backend", *(item.label for item in first.metrics), "queries"]
    rows = [headings]
    for report in measured:
        cost = report.cost
        assert cost is not None
        rows.append(
            [
                report.backend,
                *(cost_cell(item, cost.value(item.key)) for item in cost.metrics),
                str(cost.queries),
            ]
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(headings))]
    cap = "" if first.cap is None else f", no hit = {first.cap:,} tokens"
    lines = [
        f"Cost (tokens by {first.tokenizer}, reading the top {first.depth} results{cap}):",
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells.extend(cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def cost_curve(
    report: BackendReport, budgets: Sequence[int] = DEFAULT_BUDGETS
) -> tuple[tuple[int, float], ...]:
    """The backend's mean recall at each budget (the recall-versus-tokens curve), read
    from every case's reading at the run's depth; () without cost."""
    if report.cost is None:
        return ()
    readings = [case.cost.reading for case in report.cases if case.cost is not None]
    values = recall_curve(readings, budgets, report.cost.depth)
    return tuple(zip(budgets, values, strict=True))
