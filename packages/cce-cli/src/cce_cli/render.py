"""Text and JSON renderings of a relevance run, byte for byte as the reference prints them.

Why it exists: the human summary (harness spec §8) and the `cce.relevance.report/v2`
JSON report (§9) are contracts - a golden file pins them - so column widths, the
6-decimal formatting (`format6` for scores and p, `format6_signed` for deltas, t and
confidence bounds) and the JSON layout live in one place. Everything here is a pure
function of the harness's reports; nothing is computed twice and nothing is printed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import attrs

from cce_cli.harness import BackendReport, Comparison
from cce_fixtures import SCHEMA_ID as FIXTURE_SCHEMA
from cce_metrics import QueryScore, TokenAverages, TokenScore
from cce_retrieval.numeric import format6, format6_signed

__all__ = ["REPORT_SCHEMA", "RunSummary", "render_compare", "render_human", "render_json"]

REPORT_SCHEMA: Final = "cce.relevance.report/v2"


@attrs.frozen(slots=True)
class RunSummary:
    """What a relevance run reports: where it ran, and one report per backend."""

    corpus: str
    embedder: str
    backends: tuple[BackendReport, ...]
    comparison: Comparison | None = None

    @property
    def queries(self) -> int:
        """Number of cases (the first report's count; every report has them all)."""
        return len(self.backends[0].cases) if self.backends else 0


def _first_tokens(backends: Sequence[BackendReport]) -> TokenAverages | None:
    for report in backends:
        if report.tokens is not None:
            return report.tokens
    return None


def render_human(summary: RunSummary) -> str:
    """The summary table (§8.1), plus the compare block (§8.2) when comparing."""
    lines = [
        f"CCE relevance — ranking quality vs labeled fixtures ({FIXTURE_SCHEMA})",
        f"  corpus  : {summary.corpus}",
        f"  embedder: {summary.embedder}",
        f"  queries : {summary.queries}",
        "",
        f"  {'backend':<10}{'P@k':>12}{'recall':>12}{'MRR':>12}{'F1':>12}",
    ]
    for report in summary.backends:
        averages = report.averages
        lines.append(
            f"  {report.backend:<10}{format6(averages.precision_at_k):>12}"
            f"{format6(averages.recall):>12}{format6(averages.mrr):>12}{format6(averages.f1):>12}"
        )
    first_tokens = _first_tokens(summary.backends)
    if first_tokens is not None:
        lines += [
            "",
            f"  token-level span metrics ({first_tokens.queries} of {summary.queries}"
            " queries carry ranged anchors)",
            f"  {'backend':<10}{'tok-P':>12}{'tok-recall':>12}{'tok-IoU':>12}",
        ]
        for report in summary.backends:
            if report.tokens is not None:
                tokens = report.tokens
                lines.append(
                    f"  {report.backend:<10}{format6(tokens.precision):>12}"
                    f"{format6(tokens.recall):>12}{format6(tokens.iou):>12}"
                )
    text = "\n".join(lines) + "\n"
    if summary.comparison is not None:
        text += render_compare(summary.comparison)
    return text


def render_compare(comparison: Comparison) -> str:
    """Per-case deltas and the paired t-test block (§8.2), starting with a blank line."""
    lines = [
        "",
        f"  per-query deltas ({comparison.a} → {comparison.b}; positive = {comparison.b} wins)",
        f"  {'query':<24}{'dP@k':>12}{'drecall':>12}{'dMRR':>12}{'dF1':>12}",
    ]
    for row, case_id in enumerate(comparison.case_ids):
        cells = "".join(f"{format6_signed(m.deltas[row]):>12}" for m in comparison.metrics)
        lines.append(f"  {case_id:<24}{cells}")
    mean_cells = "".join(f"{format6_signed(m.aggregate_delta):>12}" for m in comparison.metrics)
    lines.append(f"  {'mean':<24}{mean_cells}")
    n = comparison.metrics[0].test.n if comparison.metrics else 0
    lines += [
        "",
        f"  paired t-test on the per-query deltas (two-sided, n={n}, df={max(n - 1, 0)})",
        f"  {'metric':<10}{'mean-delta':>14}{'t':>12}{'p':>12}{'95% CI':>26}",
    ]
    for metric in comparison.metrics:
        test = metric.test
        t_cell = "n/a" if test.t is None else format6_signed(test.t)
        p_cell = "n/a" if test.p is None else format6(test.p)
        ci_cell = (
            "n/a"
            if test.ci95 is None
            else f"[{format6_signed(test.ci95[0])}, {format6_signed(test.ci95[1])}]"
        )
        lines.append(
            f"  {metric.label:<10}{format6_signed(test.mean_delta):>14}"
            f"{t_cell:>12}{p_cell:>12}{ci_cell:>26}"
        )
    return "\n".join(lines) + "\n"


def _token_score_json(tokens: TokenScore) -> dict[str, Any]:
    return {
        "iou": format6(tokens.iou),
        "precision": format6(tokens.precision),
        "recall": format6(tokens.recall),
    }


def _backend_json(report: BackendReport) -> dict[str, Any]:
    per_query: list[dict[str, Any]] = []
    for case in report.cases:
        score: QueryScore = case.score
        row: dict[str, Any] = {
            "f1": format6(score.f1),
            "first_relevant_rank": score.first_relevant_rank,
            "id": case.id,
            "k": case.k,
            "mrr": format6(score.mrr),
            "precision_at_k": format6(score.precision_at_k),
            "recall": format6(score.recall),
        }
        if score.tokens is not None:
            row["tokens"] = _token_score_json(score.tokens)
        per_query.append(row)
    averages = report.averages
    body: dict[str, Any] = {
        "backend": report.backend,
        "f1": format6(averages.f1),
        "mrr": format6(averages.mrr),
        "per_query": per_query,
        "precision_at_k": format6(averages.precision_at_k),
        "recall": format6(averages.recall),
    }
    if report.tokens is not None:
        body["tokens"] = {
            "iou": format6(report.tokens.iou),
            "precision": format6(report.tokens.precision),
            "queries": report.tokens.queries,
            "recall": format6(report.tokens.recall),
        }
    return body


def _signed_or_null(value: float | None) -> str | None:
    return None if value is None else format6_signed(value)


def _comparison_json(comparison: Comparison) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for metric in comparison.metrics:
        test = metric.test
        metrics[metric.key] = {
            "ci95_high": None if test.ci95 is None else format6_signed(test.ci95[1]),
            "ci95_low": None if test.ci95 is None else format6_signed(test.ci95[0]),
            "mean_delta": format6_signed(test.mean_delta),
            "n": test.n,
            "p": None if test.p is None else format6(test.p),
            "t": _signed_or_null(test.t),
        }
    return {"a": comparison.a, "b": comparison.b, "metrics": metrics}


def report_body(summary: RunSummary) -> dict[str, Any]:
    """The v2 report as plain JSON values (key order is irrelevant: keys get sorted)."""
    body: dict[str, Any] = {
        "backends": [_backend_json(report) for report in summary.backends],
        "corpus": summary.corpus,
        "embedder": summary.embedder,
        "queries": summary.queries,
        "schema": REPORT_SCHEMA,
    }
    if summary.comparison is not None:
        body["compare"] = _comparison_json(summary.comparison)
    return body


def render_json(summary: RunSummary) -> str:
    """The `cce.relevance.report/v2` document, laid out like serde_json's pretty printer."""
    return json.dumps(report_body(summary), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
