"""The cost metrics in every rendering: their JSON objects, their text table and their curve.

Why it exists: the cost metrics (docs/metrics.md#cost-metrics) appear in a report only
when a run asks for them, and one of them is a token count where every other number is
a fraction. Keeping their pieces here - the `cost` objects of the JSON report
(docs/report-formats.md#cost), the text and markdown tables that show
`first-hit-tokens` as tokens, and the recall-versus-tokens points of the HTML chart -
leaves the default renderers untouched and byte-identical.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any, Final

from cce_cli.formats.cost_scores import CaseCost, CostSummary, cost_depth, first_hit_cap
from cce_cli.formats.scores import BackendReport
from cce_metrics import DEFAULT_BUDGETS, TOKENIZER_ID, Metric, recall_curve
from cce_retrieval import format6, format6_signed

__all__ = [
    "budget_of",
    "cost_averages_json",
    "cost_case_json",
    "cost_cell",
    "cost_curve",
    "cost_header_json",
    "cost_table",
    "curves_of_reports",
    "diff_cell",
    "recall_curve_chart",
    "token_text",
    "value_text",
]

_BUDGET_KEY: Final = re.compile(r"recall_at_([1-9][0-9]*)t")


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


_CURVE_WIDTH = 480
_CURVE_HEIGHT = 180
_CURVE_MARGIN = (36, 80, 10, 26)  # left, right (the legend), top, bottom (the axis labels)
_SERIES_COLOURS = ("#0969da", "#cf222e", "#2da44e", "#8250df", "#bf8700", "#1b7c83")


def _svg_number(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") or "0"


def recall_curve_chart(curves: Sequence[tuple[str, Sequence[tuple[int, float]]]]) -> str:
    """The recall-versus-tokens curve of each backend as inline SVG: budgets on a log
    axis, mean recall from 0 to 1, one polyline and legend entry per backend, each point
    titled with its value. Empty when no backend has two points or more."""
    drawn = [(name, points) for name, points in curves if len(points) >= 2]
    if not drawn:
        return ""
    left, right, top, bottom = _CURVE_MARGIN
    width, height = _CURVE_WIDTH, _CURVE_HEIGHT
    budgets = sorted({budget for _, points in drawn for budget, _ in points})
    low, high = math.log(budgets[0]), math.log(budgets[-1])
    span = (high - low) or 1.0

    def x(budget: int) -> float:
        return left + (math.log(budget) - low) / span * (width - left - right)

    def y(recall: float) -> float:
        return top + (1.0 - min(max(recall, 0.0), 1.0)) * (height - top - bottom)

    parts = [
        f'<svg class="chart curve" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="recall within a token budget, per backend">',
        f'<line class="axis" x1="{left}" y1="{_svg_number(y(0.0))}" x2="{width - right}" '
        f'y2="{_svg_number(y(0.0))}"/>',
        f'<line class="axis" x1="{left}" y1="{_svg_number(y(1.0))}" x2="{left}" '
        f'y2="{_svg_number(y(0.0))}"/>',
        f'<text x="2" y="{_svg_number(y(1.0) + 4)}" font-size="10">1.0</text>',
        f'<text x="2" y="{_svg_number(y(0.0))}" font-size="10">0.0</text>',
    ]
    for budget in budgets:
        shown = f"{budget // 1000}k" if budget >= 1000 and budget % 1000 == 0 else str(budget)
        parts.append(
            f'<text x="{_svg_number(x(budget) - 8)}" y="{height - 8}" font-size="10">{shown}</text>'
        )
    for position, (name, points) in enumerate(drawn):
        colour = _SERIES_COLOURS[position % len(_SERIES_COLOURS)]
        coordinates = " ".join(
            f"{_svg_number(x(budget))},{_svg_number(y(value))}" for budget, value in points
        )
        parts.append(
            f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" '
            f'points="{coordinates}"/>'
        )
        for budget, value in points:
            parts.append(
                f'<circle cx="{_svg_number(x(budget))}" cy="{_svg_number(y(value))}" r="2.5" '
                f'fill="{colour}"><title>{html.escape(name)}: recall {value:.3f} within '
                f"{budget:,} tokens</title></circle>"
            )
        legend_x, legend_y = width - right + 8, top + 8 + 13 * position
        parts.append(
            f'<rect x="{legend_x}" y="{legend_y - 5}" width="10" height="3" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{legend_y}" font-size="10">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def curves_of_reports(
    reports: Sequence[BackendReport], budgets: Sequence[int] = DEFAULT_BUDGETS
) -> tuple[tuple[str, tuple[tuple[int, float], ...]], ...]:
    """Each backend's recall curve over `budgets` (the in-run readings, so every budget
    has a point whichever budgets the run reported); backends without cost left out."""
    return tuple(
        (report.backend, cost_curve(report, budgets))
        for report in reports
        if report.cost is not None
    )


def budget_of(item: Metric) -> int | None:
    """The token budget of a `recall@NNNNt` metric; None for any other metric."""
    found = _BUDGET_KEY.fullmatch(item.key)
    return None if found is None else int(found.group(1))


def value_text(item: Metric, value: float) -> str:
    """A value as the HTML tables show it: whole tokens for a count, three decimals else."""
    return f"{value:,.0f}" if item.unit == "tokens" else f"{value:.3f}"


def diff_cell(item: Metric, value: float, *, signed: bool = False) -> str:
    """A value in the text diff's per-query rows: whole tokens for a token count (six
    decimals would overflow the column), six decimals for every other metric."""
    if item.unit != "tokens":
        return format6_signed(value) if signed else format6(value)
    return token_text(value, signed=signed)


def token_text(value: float, *, signed: bool = False) -> str:
    """A token count in whole tokens with thousands separators (`12,345`); with `signed`
    a `+` on anything that does not print as negative (`+1,200`)."""
    text = f"{round(value) + 0:,}"
    return f"+{text}" if signed and not text.startswith("-") else text
