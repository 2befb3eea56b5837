"""cce-cli: the `cce` command and the relevance harness behind `cce relevance`.

Why it exists: it is the one package that composes the others - fixtures say what was
expected, cce-retrieval what came back, cce-metrics how good that is, cce-stats whether
a difference is real. The command line is the module `cce_cli.main`; the names below are the
Python API (`cce_cli.api`, docs/python-api.md): run a fixture set or a suite, diff two
saved reports, apply a gate and render any registered format, each as the command does;
and the harness underneath: evaluate backends over a fixture set, compare two of them.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing `typing` at start-up would widen the window in
# which a Ctrl-C cannot be caught yet; mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_cli.api import (
        BuildOptions,
        DiffRequest,
        DiffResult,
        GateSpec,
        GateVerdict,
        RelevanceReport,
        RunRequest,
        SuiteReport,
        apply_gate,
        compare_systems,
        diff_saved_reports,
        gate,
        render_report,
        run_relevance,
        run_suite,
    )
    from cce_cli.errors import CliError
    from cce_cli.evaluation.harness import (
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
    from cce_cli.evaluation.report import RunSummary, TagGroup, tag_groups
    from cce_cli.render.relevance import (
        RENDERERS,
        REPORT_SCHEMA,
        Renderer,
        render_human,
        render_json,
    )

# Resolved on first use, so that `import cce_cli` (and the console script's import of
# `cce_cli.entry`) is instant: a Ctrl-C during the heavy imports behind these names is
# then caught by `cce_cli.entry`, not printed as a traceback.
_LAZY: dict[str, str] = {
    "BuildOptions": "cce_cli.api",
    "DiffRequest": "cce_cli.api",
    "DiffResult": "cce_cli.api",
    "GateSpec": "cce_cli.api",
    "GateVerdict": "cce_cli.api",
    "RelevanceReport": "cce_cli.api",
    "RunRequest": "cce_cli.api",
    "SuiteReport": "cce_cli.api",
    "apply_gate": "cce_cli.api",
    "compare_systems": "cce_cli.api",
    "diff_saved_reports": "cce_cli.api",
    "gate": "cce_cli.api",
    "render_report": "cce_cli.api",
    "run_relevance": "cce_cli.api",
    "run_suite": "cce_cli.api",
    "CliError": "cce_cli.errors",
    "COMPARED_METRICS": "cce_cli.evaluation.harness",
    "BackendError": "cce_cli.evaluation.harness",
    "BackendReport": "cce_cli.evaluation.harness",
    "CaseReport": "cce_cli.evaluation.harness",
    "Comparison": "cce_cli.evaluation.harness",
    "MetricComparison": "cce_cli.evaluation.harness",
    "compare_reports": "cce_cli.evaluation.harness",
    "evaluate": "cce_cli.evaluation.harness",
    "evaluate_backend": "cce_cli.evaluation.harness",
    "parse_backends": "cce_cli.evaluation.harness",
    "RENDERERS": "cce_cli.render.relevance",
    "REPORT_SCHEMA": "cce_cli.render.relevance",
    "Renderer": "cce_cli.render.relevance",
    "render_human": "cce_cli.render.relevance",
    "render_json": "cce_cli.render.relevance",
    "RunSummary": "cce_cli.evaluation.report",
    "TagGroup": "cce_cli.evaluation.report",
    "tag_groups": "cce_cli.evaluation.report",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cce_cli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "COMPARED_METRICS",
    "RENDERERS",
    "REPORT_SCHEMA",
    "BackendError",
    "BackendReport",
    "BuildOptions",
    "CaseReport",
    "CliError",
    "Comparison",
    "DiffRequest",
    "DiffResult",
    "GateSpec",
    "GateVerdict",
    "MetricComparison",
    "RelevanceReport",
    "Renderer",
    "RunRequest",
    "RunSummary",
    "SuiteReport",
    "TagGroup",
    "apply_gate",
    "compare_reports",
    "compare_systems",
    "diff_saved_reports",
    "evaluate",
    "evaluate_backend",
    "gate",
    "parse_backends",
    "render_human",
    "render_json",
    "render_report",
    "run_relevance",
    "run_suite",
    "tag_groups",
]
