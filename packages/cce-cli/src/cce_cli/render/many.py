"""Text, markdown and JSON of several systems against one baseline (`cce diff` with more
than one head).

Why it exists: the table a reader of a model-selection question wants - a row per
system, a column per metric, each candidate's mean marked where it differs
significantly from the baseline's - in the terminal, in a pull request and in a file a
script reads (`cce.relevance.multi/v1`: sorted keys, six-decimal strings). The numbers
come from `cce_cli.compare.many`; the legend says the scope of the correction.
"""

from __future__ import annotations

import json
from typing import Any, Final

from cce_cli.compare.many import ManyComparison, SystemRow
from cce_cli.output import display_text, label_width, number_text
from cce_cli.render.comment import format3, md_text
from cce_retrieval import format6, format6_signed
from cce_stats import paired_test

__all__ = ["MULTI_SCHEMA", "render_many_json", "render_many_markdown", "render_many_text"]

MULTI_SCHEMA: Final = "cce.relevance.multi/v1"


def _labels(comparison: ManyComparison) -> list[str]:
    """Each system's name: its backend, or its report file when backends repeat."""
    backends = [row.backend for row in comparison.rows]
    if len(set(backends)) == len(backends):
        return backends
    return [f"{row.backend} ({row.path})" for row in comparison.rows]


def scope(comparison: ManyComparison) -> str:
    """The legend: the test, the correction's family and alpha."""
    test = paired_test(comparison.test).label
    candidates = len(comparison.rows) - 1
    metrics = len(comparison.metrics)
    family = (
        "no correction"
        if comparison.correction == "none"
        else f"{comparison.correction}-adjusted over {candidates} systems × {metrics} metrics "
        f"({comparison.tests} tests)"
    )
    return (
        f"{test} of each system against the baseline on the per-query deltas (two-sided), "
        f"{family}, alpha {number_text(comparison.alpha)}; ▲ significantly better, "
        "▼ significantly worse than the baseline"
    )


def _paired_line(comparison: ManyComparison) -> str:
    line = f"paired queries: {comparison.paired} (in every report)"
    if comparison.left_out:
        line += f"; {comparison.left_out} not in every report, left out of the tests"
    return line


def render_many_text(comparison: ManyComparison) -> str:
    labels = [display_text(label) for label in _labels(comparison)]
    shown = [f"{label} (baseline)" if i == 0 else label for i, label in enumerate(labels)]
    width = label_width(shown, 12)
    lines = [
        f"CCE relevance comparison — {len(labels) - 1} systems against {labels[0]}",
        f"  {_paired_line(comparison)}",
        "",
        f"  {'system':<{width}}" + "".join(f"{m.label:>13}" for m in comparison.metrics),
    ]
    for label, row in zip(shown, comparison.rows, strict=True):
        cells = "".join(
            f"{format6(cell.mean) + (cell.marker(comparison.alpha) or ' '):>13}"
            for cell in row.cells
        )
        lines.append(f"  {label:<{width}}{cells}".rstrip())
    lines += ["", f"  {scope(comparison)}"]
    return "\n".join(lines) + "\n"


def render_many_markdown(comparison: ManyComparison) -> str:
    labels = _labels(comparison)
    lines = [
        f"### cce diff: {len(labels) - 1} systems against {md_text(labels[0])}",
        "",
        md_text(_paired_line(comparison)).capitalize() + ".",
        "",
        "| system | " + " | ".join(md_text(m.label) for m in comparison.metrics) + " |",
        "|---|" + "---:|" * len(comparison.metrics),
    ]
    for index, (label, row) in enumerate(zip(labels, comparison.rows, strict=True)):
        name = f"{md_text(label)} (baseline)" if index == 0 else md_text(label)
        cells = " | ".join(
            (format3(cell.mean) + " " + cell.marker(comparison.alpha)).rstrip()
            for cell in row.cells
        )
        lines.append(f"| {name} | {cells} |")
    lines += ["", md_text(scope(comparison)) + "."]
    return "\n".join(lines) + "\n"


def _system_json(row: SystemRow, alpha: float, baseline: bool) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for cell in row.cells:
        entry: dict[str, Any] = {"mean": format6(cell.mean)}
        if not baseline:
            marker = cell.marker(alpha)
            entry.update(
                {
                    "mean_delta": None if cell.delta is None else format6_signed(cell.delta),
                    "p": None if cell.p is None else format6(cell.p),
                    "p_adjusted": None if cell.p_adjusted is None else format6(cell.p_adjusted),
                    "significant": {"▲": "better", "▼": "worse"}.get(marker),
                }
            )
        metrics[cell.metric.key] = entry
    return {"backend": row.backend, "metrics": metrics, "path": row.path}


def render_many_json(comparison: ManyComparison) -> str:
    body = {
        "alpha": format6(comparison.alpha),
        "baseline": _system_json(comparison.rows[0], comparison.alpha, True),
        "correction": comparison.correction,
        "family": {
            "metrics": [item.key for item in comparison.metrics],
            "systems": len(comparison.rows) - 1,
            "tests": comparison.tests,
        },
        "left_out": comparison.left_out,
        "paired": comparison.paired,
        "schema": MULTI_SCHEMA,
        "systems": [_system_json(row, comparison.alpha, False) for row in comparison.rows[1:]],
        "test": comparison.test,
    }
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
