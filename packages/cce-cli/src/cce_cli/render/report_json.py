"""The `cce.relevance.report/v2` JSON report of one run, byte for byte as the reference writes it.

Why it exists: the JSON report is a contract a golden file pins
(docs/report-formats.md#json-report), and both the `json` renderer
(`cce_cli.render.relevance`) and the HTML page, which embeds and re-reads the report it
shows (`cce_cli.render.html`), produce it. Keeping it in its own module lets both import
it without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cce_cli.evaluation.harness import BackendReport, Comparison
from cce_cli.evaluation.report import RunSummary
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.render.cost import cost_averages_json, cost_case_json, cost_header_json
from cce_metrics import Metric
from cce_retrieval import format6, format6_signed
from cce_stats import paired_test

__all__ = ["render_json", "report_body"]


def _aggregates_json(
    report: BackendReport, metrics: Sequence[Metric], token_metrics: Sequence[Metric]
) -> dict[str, Any]:
    body: dict[str, Any] = {"backend": report.backend}
    for metric in metrics:
        body[metric.key] = format6(report.averages.value(metric.key))
    if report.tokens is not None and token_metrics:
        tokens: dict[str, Any] = {"queries": report.tokens.queries}
        for metric in token_metrics:
            tokens[metric.report_key] = format6(report.tokens.value(metric.key))
        body["tokens"] = tokens
    if report.cost is not None:
        body["cost"] = cost_averages_json(report.cost)
    return body


def _backend_json(
    report: BackendReport,
    metrics: Sequence[Metric],
    token_metrics: Sequence[Metric],
    with_tags: bool = False,
) -> dict[str, Any]:
    per_query: list[dict[str, Any]] = []
    for case in report.cases:
        score = case.score
        row: dict[str, Any] = {
            "first_relevant_rank": score.first_relevant_rank,
            "id": case.id,
            "k": case.k,
        }
        if with_tags:
            row["tags"] = list(case.tags)
        for metric in metrics:
            row[metric.key] = format6(score.values[metric.key])
        if score.tokens is not None and token_metrics:
            row["tokens"] = {
                metric.report_key: format6(_defined(score.value(metric.key)))
                for metric in token_metrics
            }
        if case.cost is not None:
            row["cost"] = cost_case_json(case.cost)
        per_query.append(row)
    body = _aggregates_json(report, metrics, token_metrics)
    body["per_query"] = per_query
    if report.without_vector:
        # Only a run with such queries says so: the reference document has no such key.
        body["queries_without_vector"] = list(report.without_vector)
    return body


def _defined(value: float | None) -> float:
    if value is None:
        raise ValueError("a ranged query lacks a token score")
    return value


def _signed_or_null(value: float | None) -> str | None:
    return None if value is None else format6_signed(value)


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for metric in comparison.metrics:
        result = metric.result
        entry: dict[str, Any] = {
            "ci95_high": None if result.ci95 is None else format6_signed(result.ci95[1]),
            "ci95_low": None if result.ci95 is None else format6_signed(result.ci95[0]),
            "mean_delta": format6_signed(result.mean_delta),
            "n": result.n,
            "p": None if result.p is None else format6(result.p),
        }
        if comparison.test == "t":
            entry["t"] = _signed_or_null(result.statistic)
        else:
            entry["statistic"] = _signed_or_null(result.statistic)
        metrics[metric.key] = entry
    body: dict[str, Any] = {"a": comparison.a, "b": comparison.b, "metrics": metrics}
    if comparison.test != "t":
        # The reference's document has no test name; only another test adds one.
        body["test"] = comparison.test
        body["statistic"] = paired_test(comparison.test).statistic_name
    return body


def report_body(summary: RunSummary) -> dict[str, Any]:
    """The v2 report as plain JSON values (key order is irrelevant: keys get sorted)."""
    body: dict[str, Any] = {
        "backends": [
            _backend_json(report, summary.metrics, summary.token_metrics, summary.tags is not None)
            for report in summary.backends
        ],
        "corpus": summary.corpus,
        "embedder": summary.embedder,
        "queries": summary.queries,
        "schema": REPORT_SCHEMA,
    }
    if summary.comparison is not None:
        body["compare"] = _comparison_json(summary.comparison)
    if summary.cost_metrics:
        # Only a run that asked for a cost metric says how it was measured.
        body["cost"] = cost_header_json(summary.cost_metrics)
    if summary.graded:
        # Only graded runs say so: the reference document has no such key.
        body["gains"] = "graded"
    if summary.granularity != "chunk":
        # Only another granularity is recorded: the reference document has no such key.
        body["granularity"] = summary.granularity
    if summary.tags is not None:
        body["tags"] = {
            group.tag: {
                "backends": [
                    _aggregates_json(report, summary.metrics, summary.token_metrics)
                    for report in group.backends
                ],
                "queries": group.queries,
            }
            for group in summary.tags
        }
    return body


def render_json(summary: RunSummary) -> str:
    """The `cce.relevance.report/v2` document, laid out like serde_json's pretty printer."""
    return json.dumps(report_body(summary), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
