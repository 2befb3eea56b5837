"""cce-cli: the `cce` command and the relevance harness behind `cce relevance`.

Why it exists: it is the one package that composes the others - fixtures say what was
expected, cce-retrieval what came back, cce-metrics how good that is, cce-stats whether
a difference is real. The command line is `cce_cli.main`; the names below are the
harness entry points for driving an evaluation from Python: evaluate backends over a
fixture set, compare two of them, and render the result in any registered format.
"""

from __future__ import annotations

from cce_cli.errors import CliError
from cce_cli.harness import (
    COMPARED_METRICS,
    BackendError,
    BackendReport,
    CaseReport,
    Comparison,
    MetricComparison,
    compare_reports,
    evaluate,
    evaluate_backend,
    parse_backends,
)
from cce_cli.main import main
from cce_cli.render import RENDERERS, REPORT_SCHEMA, Renderer, render_human, render_json
from cce_cli.report import RunSummary, TagGroup, tag_groups

__all__ = [
    "COMPARED_METRICS",
    "RENDERERS",
    "REPORT_SCHEMA",
    "BackendError",
    "BackendReport",
    "CaseReport",
    "CliError",
    "Comparison",
    "MetricComparison",
    "Renderer",
    "RunSummary",
    "TagGroup",
    "compare_reports",
    "evaluate",
    "evaluate_backend",
    "main",
    "parse_backends",
    "render_human",
    "render_json",
    "tag_groups",
]
