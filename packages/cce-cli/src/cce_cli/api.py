"""The Python API: what `cce relevance` and `cce diff` do, for a notebook or another tool.

Why it exists: a user who evaluates in Python (ranx and ir_measures users work this way)
wants a run, a suite, a saved-report diff and a gate's verdict as values, not as a
process to start and output to parse. Each function here takes the same frozen request
the command builds from its flags (`RunRequest`, `DiffRequest`) or keyword arguments
named like those flags, runs the exact code path the command runs (a suite member is
scored by the single-run path, as on the command line), and returns a typed report:
`render(format)` gives the bytes the command writes with that `--format` (`json()` the
JSON), and `records()` / `aggregate_records()` give plain dicts, one per query and one
per aggregate, that `pandas.DataFrame(...)` takes as they are. Nothing here prints the
report, writes a file the request does not name, or exits; bad input raises `CliError`
with the message the command would print (docs/python-api.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from cce_cli.compare.gate import GATE_FAILED, GateSpec, gate_metric
from cce_cli.compare.many import ManyComparison
from cce_cli.compare.pairing import DiffReport, backend_values
from cce_cli.errors import CliError
from cce_cli.evaluation.building import BuildOptions
from cce_cli.evaluation.harness import GRANULARITIES
from cce_cli.evaluation.suite import aggregate, backend_order, chosen_metrics
from cce_cli.formats.results_file import write_run
from cce_cli.formats.suite_manifest import looks_like_suite
from cce_cli.render.diff import DIFF_RENDERERS
from cce_cli.render.relevance import RENDERERS
from cce_cli.runs import diff as diff_runs
from cce_cli.runs import single
from cce_cli.runs import suite as suite_runs
from cce_cli.runs.diff import DiffRequest
from cce_cli.runs.request import RunRequest, refuse_suite_selection, refuse_suite_tests
from cce_metrics import TOKEN_METRICS
from cce_stats import paired_test_names

__all__ = [
    "BuildOptions",
    "DiffRequest",
    "DiffResult",
    "GateSpec",
    "GateVerdict",
    "ManyComparison",
    "RelevanceReport",
    "RunRequest",
    "SuiteReport",
    "apply_gate",
    "compare_systems",
    "diff_saved_reports",
    "gate",
    "render_report",
    "run_relevance",
    "run_suite",
]

Record = dict[str, Any]


def _check_format(format_name: str, registered: Mapping[str, object]) -> None:
    """Refuse a format no renderer of the report's kind is registered for."""
    if format_name not in registered:
        raise CliError(f"unknown format {format_name!r}: choose {', '.join(registered)}")


@attrs.frozen(slots=True)
class GateVerdict:
    """The gate's verdict: whether a gate was on, and why it failed (empty: it passed)."""

    active: bool
    reasons: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.reasons

    @property
    def exit_status(self) -> int:
        """The command's exit status for this verdict: 0, or 3 when the gate failed."""
        return GATE_FAILED if self.reasons else 0

    def lines(self) -> str:
        """The stderr lines the command prints for it, one per reason."""
        return "".join(f"gate failed: {reason}\n" for reason in self.reasons)


def gate(
    *,
    fail_on_significant: bool = False,
    fail_on_query_regression: bool | str = False,
    minimums: Mapping[str, float] | None = None,
    regression_tolerance: float = 0.0,
) -> GateSpec:
    """The gate of `--fail-on-significant`, `--fail-on-query-regression [METRICS]`,
    `--min METRIC=VALUE` and `--regression-tolerance`; metrics by name, key or label."""
    try:
        floors = tuple(
            (gate_metric(name), float(value)) for name, value in (minimums or {}).items()
        )
        watched = None
        if isinstance(fail_on_query_regression, str):
            names = [name.strip() for name in fail_on_query_regression.split(",") if name.strip()]
            watched = tuple(dict.fromkeys(gate_metric(name) for name in names))
    except ValueError as error:
        raise CliError(str(error), exit_code=2) from None
    return GateSpec(
        fail_on_significant,
        fail_on_query_regression is not False,
        floors,
        regression_metrics=watched,
        regression_tolerance=regression_tolerance,
    )


# --- one fixture set ---------------------------------------------------------------------


@attrs.frozen(slots=True)
class RelevanceReport:
    """One fixture set scored, as `cce relevance FIXTURES` reports it."""

    request: RunRequest
    scored: single.Scored = attrs.field(repr=False)

    @property
    def text(self) -> str:
        """The rendering in the request's format (what the command prints)."""
        return self.scored.text

    def render(self, format_name: str = "json") -> str:
        """The report as `--format format_name` prints it (`text`, `json`, `html`)."""
        _check_format(format_name, RENDERERS)
        return self.scored.render_as(format_name)

    def json(self) -> str:
        """The `cce.relevance.report/v2` document, byte for byte as `--json` prints it."""
        return self.render("json")

    def records(self) -> list[Record]:
        """One dict per backend and query: backend, id, k, tags, `no_vector` (the backend
        asked for the query's vector and got none) and every metric at full precision
        (token metrics when the query has line ranges, cost metrics when asked for and the
        query has a target)."""
        rows: list[Record] = []
        for report in self.scored.reports:
            values = backend_values(report, self.scored.metrics)
            without_vector = set(report.without_vector)
            for case, (_, scores) in zip(report.cases, values, strict=True):
                rows.append(
                    {
                        "backend": report.backend,
                        "id": case.id,
                        "k": case.k,
                        "tags": list(case.tags),
                        "no_vector": case.id in without_vector,
                        **scores,
                    }
                )
        return rows

    def aggregate_records(self) -> list[Record]:
        """One dict per backend: its mean of every reported metric, full precision."""
        rows: list[Record] = []
        for report in self.scored.reports:
            row: Record = {"backend": report.backend, "queries": len(report.cases)}
            for item in self.scored.metrics:
                row[item.key] = report.averages.value(item.key)
            if report.tokens is not None:
                for item in TOKEN_METRICS.defaults():
                    row[item.key] = report.tokens.value(item.key)
            if report.cost is not None:
                # Only a run that asked for cost metrics has them (None: no query's).
                for item in report.cost.metrics:
                    row[item.key] = report.cost.value(item.key)
            rows.append(row)
        return rows


def _run_request(fixtures: str | RunRequest, options: Mapping[str, Any]) -> RunRequest:
    """The request, with what argparse's choices check on the command line checked."""
    if isinstance(fixtures, RunRequest):
        request = attrs.evolve(fixtures, **options) if options else fixtures
    else:
        request = RunRequest(str(fixtures), **{"format": "json", **options})
    choices = (
        ("test", request.test, paired_test_names()),
        ("format", request.format or "text", tuple(RENDERERS)),
        ("granularity", request.granularity, GRANULARITIES),
        ("results_format", request.results_format, ("run", "trec")),
    )
    for name, value, valid in choices:
        if value not in valid:
            raise CliError(
                f"unknown {name} {value!r}; expected one of: {', '.join(valid)}", exit_code=2
            )
    return request


def run_relevance(fixtures: str | RunRequest, **options: Any) -> RelevanceReport:
    """Score one fixture set, as `cce relevance FIXTURES` does with the same options
    (the `RunRequest` fields: `corpus`, `store`, `backends`, `compare`, `metrics`, ...);
    the report is rendered as JSON unless `format` says otherwise."""
    request = _run_request(fixtures, options)
    if looks_like_suite(request.fixtures):
        raise CliError(f"{request.fixtures} is a suite manifest: use run_suite")
    refuse_suite_selection(request.fixtures, members=request.members, timings=request.timings)
    if request.gate.active and request.compare is None:
        raise CliError("a gate needs compare='A,B' (B is the head)", exit_code=2)
    refuse_suite_tests(request)
    scored = single.score(request)
    if scored.results is not None:
        write_run(str(request.results), scored.results)
    return RelevanceReport(request, scored)


# --- a suite -----------------------------------------------------------------------------


@attrs.frozen(slots=True)
class SuiteReport:
    """A suite scored, as `cce relevance SUITE.toml` reports it."""

    request: RunRequest
    run: suite_runs.SuiteRun = attrs.field(repr=False)

    @property
    def text(self) -> str:
        return self.run.text

    @property
    def comparison(self) -> DiffReport | None:
        return self.run.comparison

    def render(self, format_name: str = "json") -> str:
        """The suite report as `--format format_name` prints it (`text`, `json`, `html`)."""
        from cce_cli.render.suite import render_suite

        _check_format(format_name, RENDERERS)
        return render_suite(
            self.run.manifest,
            self.run.results,
            format_name,
            self.comparison,
            timings=self.request.timings,
        )

    @property
    def without_parser(self) -> list[str]:
        """The members scored on whole-file chunks only (no language parser)."""
        return [result.name for result in self.run.results if result.without_parser]

    def timing_records(self) -> list[Record]:
        """One dict per member and backend: the member's index time in seconds and the
        backend's query latency p50 and p95 in milliseconds (wall clock, so they differ
        run to run; the report carries them with `timings=True`)."""
        rows: list[Record] = []
        for result in self.run.results:
            if result.timings is None:
                continue
            for backend in result.timings.latencies_ms:
                rows.append(
                    {
                        "member": result.name,
                        "backend": backend,
                        "index_seconds": result.timings.index_seconds,
                        "p50_ms": result.timings.latency(backend, 50),
                        "p95_ms": result.timings.latency(backend, 95),
                    }
                )
        return rows

    def json(self) -> str:
        """The `cce.suite.report/v1` document, byte for byte as `--json` prints it."""
        return self.render("json")

    def records(self) -> list[Record]:
        """One dict per member, backend and query: the member, backend, the case id and
        its qualified `member/id`, tags, `no_vector` (as in `RelevanceReport.records`),
        and every metric at full precision."""
        rows: list[Record] = []
        for result in self.run.results:
            marked = {
                entry["backend"]: set(entry.get("queries_without_vector", ()))
                for entry in json.loads(result.report_json)["backends"]
            }
            for backend, cases in result.values:
                for case_id, scores in cases:
                    rows.append(
                        {
                            "member": result.name,
                            "backend": backend,
                            "id": case_id,
                            "qualified_id": f"{result.name}/{case_id}",
                            "tags": list(result.tags.get(case_id, ())),
                            "no_vector": case_id in marked.get(backend, ()),
                            **scores,
                        }
                    )
        return rows

    def aggregate_records(self) -> list[Record]:
        """One dict per backend and metric over the whole suite: the macro mean (of the
        members' means), the micro mean (over all queries), and their counts."""
        results = self.run.results
        rows: list[Record] = []
        for backend in backend_order(results):
            for item in chosen_metrics(results):
                found = aggregate(results, backend, item)
                rows.append(
                    {
                        "backend": backend,
                        "metric": item.key,
                        "macro": found.macro,
                        "micro": found.micro,
                        "members": found.members,
                        "queries": found.queries,
                    }
                )
        return rows


def run_suite(manifest: str | RunRequest, **options: Any) -> SuiteReport:
    """Score every member of a `cce.suite/v1` manifest, as `cce relevance SUITE.toml`
    does with the same options (`jobs` and the other build options go in `build`)."""
    request = _run_request(manifest, options)
    return SuiteReport(request, suite_runs.run_suite(request))


# --- two saved reports -------------------------------------------------------------------


def compare_systems(
    reports: Sequence[str],
    backend: str | None = None,
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
) -> ManyComparison:
    """Every saved report after the first against it, as `cce diff BASE A B ...` does;
    `render_many_text`/`_markdown`/`_json` (cce_cli.render.many) give its bytes."""
    return diff_runs.compare_saved_many(
        list(reports), backend, test=test, correction=correction, alpha=alpha
    )


@attrs.frozen(slots=True)
class DiffResult:
    """Two saved reports compared, as `cce diff BASE HEAD` reports them."""

    request: DiffRequest
    saved: diff_runs.SavedDiff = attrs.field(repr=False)

    @property
    def report(self) -> DiffReport:
        return self.saved.report

    @property
    def verdict(self) -> GateVerdict:
        return GateVerdict(self.report.gate_active, self.report.gate_reasons)

    def render(self, format_name: str = "json") -> str:
        """The diff as `cce diff --format format_name` prints it."""
        _check_format(format_name, DIFF_RENDERERS)
        return DIFF_RENDERERS[format_name].render(self.report)

    def json(self) -> str:
        """The `cce.relevance.diff/v1` document, byte for byte as `--format json` prints it."""
        return self.render("json")

    def records(self) -> list[Record]:
        """One dict per metric and paired query: base, head and delta, full precision."""
        return [
            {
                "metric": item.metric.key,
                "id": row.id,
                "base": row.base,
                "head": row.head,
                "delta": row.delta,
            }
            for item in self.report.overall.metrics
            for row in item.rows
        ]

    def aggregate_records(self) -> list[Record]:
        """One dict per metric: the paired test over every paired query. `mean` names
        the tested mean of a suite ("macro" or "micro"; None otherwise) and `unit` its
        unit; `decision_p` is the p the gate adjusted (docs/statistics.md#constant-deltas)."""
        ci = [item.result.ci95 for item in self.report.overall.metrics]
        return [
            {
                "metric": item.metric.key,
                "mean": self.report.mean,
                "unit": self.report.unit,
                "n": item.result.n,
                "mean_delta": item.result.mean_delta,
                "ci95_low": None if interval is None else interval[0],
                "ci95_high": None if interval is None else interval[1],
                "statistic": item.result.statistic,
                "p": item.result.p,
                "decision_p": item.result.decision_p,
                "p_adjusted": item.p_adjusted,
                "effect_size": item.effect_size,
                "wins": item.wins,
                "ties": item.ties,
                "losses": item.losses,
            }
            for item, interval in zip(self.report.overall.metrics, ci, strict=True)
        ]


def diff_saved_reports(
    base: str | DiffRequest, head: str | None = None, **options: Any
) -> DiffResult:
    """Compare two saved reports (single or suite), as `cce diff BASE HEAD` does with the
    same options (`DiffRequest` fields: `backend`, `backends`, `test`, `gate`, ...)."""
    if isinstance(base, DiffRequest):
        request = attrs.evolve(base, **options) if options else base
    else:
        if head is None:
            raise CliError("diff_saved_reports needs the head report")
        request = DiffRequest(str(base), str(head), **options)
    return DiffResult(request, diff_runs.diff_saved(request))


# --- gates and formats -------------------------------------------------------------------


def apply_gate(report: RelevanceReport | SuiteReport | DiffResult, spec: GateSpec) -> GateVerdict:
    """The verdict of the gate `spec` on a compared run, suite or diff: exactly the
    reasons the command prints with the same gate flags."""
    if isinstance(report, DiffResult):
        ungated = attrs.evolve(
            report.saved, report=attrs.evolve(report.report, gate_active=False, gate_reasons=())
        )
        gated = diff_runs.gate_diff(ungated, spec).report
        return GateVerdict(gated.gate_active, gated.gate_reasons)
    if report.request.compare is None:
        raise CliError("a gate needs a comparison: run with compare='A,B'", exit_code=2)
    request = attrs.evolve(report.request, gate=spec)
    if isinstance(report, RelevanceReport):
        return GateVerdict(spec.active, single.gate_reasons(request, report.scored))
    comparison = report.comparison
    assert comparison is not None
    if not spec.active:
        return GateVerdict(False)
    gated = suite_runs.gate_suite(spec, comparison, report.run.results, request)
    return GateVerdict(True, gated.gate_reasons)


def render_report(report: RelevanceReport | SuiteReport | DiffResult, format_name: str) -> str:
    """Any report in any format registered for it (`RENDERERS`, `DIFF_RENDERERS`)."""
    return report.render(format_name)
