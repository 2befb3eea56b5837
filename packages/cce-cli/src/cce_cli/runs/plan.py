"""How many queries a comparison needs, from a pilot run: the work of `cce plan REPORT.json`.

Why it exists: whether a fixture set can tell two backends apart depends on how much
the per-query deltas vary, which only a pilot run shows. This command reads one —
a `cce.relevance.report/v2` with both backends (`--compare A,B`), or the
`cce.relevance.diff/v1` of `cce diff` — and prints, for every metric, the sd of the
pilot's deltas, the queries a paired t-test needs to detect `--delta`, and the
smallest mean delta the pilot's own number of queries can detect
(docs/statistics.md#sizing). A pilot's sd is itself uncertain, so beside the point
estimate it prints the 95% chi-square interval on the sd and the range of queries
needed at its two ends. The sizing is at the level the gate will test each metric
at: `--fail-on-significant` adjusts the p's of every gated metric, so a plan at the
stated alpha would promise power the gate does not have; the plan uses
`cce_stats.effective_alpha(alpha, gated metrics, correction)` and prints it.

It owns the frozen `PlanRequest` the command builds from its flags (nothing here reads
an `argparse.Namespace`), the reading of the diff document's deltas, and the plan's
text and JSON renderings; the arithmetic is `cce_stats`'s and the pairing of a report's
cases is `cce_cli.compare.pairing`'s. The arguments are `cce_cli.commands.plan`'s.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from cce_cli.compare import pairing as diff_model
from cce_cli.compare import saved_report
from cce_cli.errors import CliError
from cce_cli.formats import json_text
from cce_cli.formats.schemas import REPORT_SCHEMA
from cce_cli.output import display_text, number_text
from cce_metrics import METRICS, TOKEN_METRICS, Metric
from cce_retrieval import format6, format6_signed
from cce_stats import (
    MAX_SAMPLE_SIZE,
    effective_alpha,
    minimum_detectable_effect,
    required_sample_size,
    sample_sd,
    sd_confidence_interval,
    seq_sum,
)

__all__ = [
    "PLAN_SCHEMA",
    "SMALLEST_DELTA",
    "MetricPlan",
    "Plan",
    "PlanRequest",
    "make_plan",
    "plan_text",
    "render_plan_json",
    "render_plan_text",
]

PLAN_SCHEMA: Final = "cce.plan/v1"
PLAN_FORMATS: Final = ("text", "json")


@attrs.frozen(slots=True)
class MetricPlan:
    """One metric's pilot spread and what it implies.

    `sd` is None with fewer than two paired queries; `needed` and `detectable` are
    None when the pilot cannot say (fewer than two queries, or no spread at all);
    `exceeds` is set when more than `MAX_SAMPLE_SIZE` queries would be needed.
    `sd_ci95` is the 95% chi-square interval on the true sd (None where `needed` is),
    and `needed_range` the queries needed at its low and high ends (None for an end
    that exceeds `MAX_SAMPLE_SIZE`).
    """

    key: str
    label: str
    n: int
    mean_delta: float
    sd: float | None
    needed: int | None
    exceeds: bool
    detectable: float | None
    sd_ci95: tuple[float, float] | None = None
    needed_range: tuple[int | None, int | None] | None = None


@attrs.frozen(slots=True)
class Plan:
    """The plan for one pilot comparison: where it came from, the settings, the rows.

    `alpha` is the gate's stated level; every row is sized at `effective_alpha`, the
    level one metric is tested at once `correction` adjusts over `gated` (metric keys).
    """

    path: str
    source_schema: str
    base: str
    head: str
    paired: int
    delta: float
    alpha: float
    power: float
    metrics: tuple[MetricPlan, ...]
    correction: str = "none"
    gated: tuple[str, ...] = ()
    effective_alpha: float = 0.05


@attrs.frozen(slots=True)
class PlanRequest:
    """One `cce plan`: the pilot, the effect and power sought, and the gate it plans for.

    The defaults are the command's without flags: the gate's own defaults, so the plan
    sizes at the level `--fail-on-significant` will test each metric at (holm over
    every compared metric).
    """

    report: str
    compare: str | None = None
    """`A,B`: the report's two backends to pair; None: the only two."""
    delta: float = 0.05
    power: float = 0.8
    alpha: float = 0.05
    correction: str = "holm"
    """The gate's correction over the gated metrics (`--correction`)."""
    gated_metrics: tuple[str, ...] | None = None
    """The keys of the metrics the gate tests (`--gate-metrics`); None: every compared one."""
    format: str = "text"


SMALLEST_DELTA: Final = 1e-6
"""The least `--delta`: reports carry scores to 6 decimals, so a smaller mean change
cannot show in them (and the queries it would need overflow the arithmetic)."""


_LARGEST_UNKNOWN_DELTA: Final = 1e12
"""The bound on a delta of a metric this build does not know (so has no bounds for):
`format6` shows at most about 9.2e12, and past it the plan would print nonsense."""


def _plan_metric(
    key: str, label: str, deltas: Sequence[float], delta: float, alpha: float, power: float
) -> MetricPlan:
    n = len(deltas)
    mean = seq_sum(deltas) / n if n else 0.0
    sd = sample_sd(deltas)
    if sd is None or sd == 0.0:
        return MetricPlan(key, label, n, mean, sd, None, False, None)
    try:
        needed: int | None = required_sample_size(sd, delta, alpha, power)
        exceeds = False
    except ValueError:
        needed, exceeds = None, True
    detectable = minimum_detectable_effect(sd, n, alpha, power)
    sd_ci95 = sd_confidence_interval(sd, n)
    needed_range = (
        _needed_or_none(sd_ci95[0], delta, alpha, power),
        _needed_or_none(sd_ci95[1], delta, alpha, power),
    )
    return MetricPlan(key, label, n, mean, sd, needed, exceeds, detectable, sd_ci95, needed_range)


def _guarded_plan(
    path: str,
    key: str,
    label: str,
    deltas: Sequence[float],
    delta: float,
    alpha: float,
    power: float,
) -> MetricPlan:
    """`_plan_metric`, with deltas too large for floating point (a metric this build
    does not know has no bounds to refuse them by) an error naming the file."""
    try:
        return _plan_metric(key, label, deltas, delta, alpha, power)
    except (ArithmeticError, ValueError) as error:
        raise CliError(
            f"{path}: the deltas of {key} are too large to plan with ({error}); "
            "regenerate the document with `cce diff --format json`"
        ) from None


def _needed_or_none(sd: float, delta: float, alpha: float, power: float) -> int | None:
    try:
        return required_sample_size(sd, delta, alpha, power)
    except ValueError:
        return None


def _split_compare(value: str) -> tuple[str, str]:
    parts = [part.strip() for part in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise CliError(f"--compare needs two names, A,B (e.g. bm25,hybrid), got {value!r}", 2)
    if parts[0] == parts[1]:
        raise CliError(
            f"--compare requires exactly two distinct backends, got {value!r}: a backend "
            "paired with itself has no deltas to plan from",
            2,
        )
    return parts[0], parts[1]


def _from_report(
    text: str, path: str, compare: str | None
) -> tuple[str, str, int, list[tuple[str, str, list[float]]]]:
    pair = None if compare is None else _split_compare(compare)
    report = saved_report.parse_report(text, path)
    if pair is not None:
        name_a, name_b = pair
    elif len(report.backends) == 2:
        name_a, name_b = report.backend_names()
    else:
        names = ", ".join(report.backend_names()) or "none"
        raise CliError(
            f"{path} has {len(report.backends)} backends ({names}); "
            "name the pair to plan for with --compare A,B",
            2,
        )
    for name in (name_a, name_b):
        if name not in report.backend_names():
            names = ", ".join(report.backend_names()) or "none"
            raise CliError(
                f"{path}: no backend {name!r} in this report (it has: {names}); "
                "name two of those with --compare A,B"
            )
    side_a = report.backend(name_a)
    side_b = report.backend(name_b)
    compared = diff_model.diff_reports(report, report, side_a, side_b, correction="none")
    unpaired = len(compared.unpaired_base) + len(compared.unpaired_head)
    if unpaired:
        print(
            f"warning: {unpaired} case{'s are' if unpaired != 1 else ' is'} in only one of "
            f"{name_a} and {name_b} and left out of the plan",
            file=sys.stderr,
        )
    rows = [
        (item.metric.key, item.metric.label, [row.delta for row in item.rows])
        for item in compared.overall.metrics
    ]
    return name_a, name_b, len(compared.overall.case_ids), rows


def _diff_field(path: str, where: str, value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise CliError(f"{path}: {where} must be a JSON object; pass the output of `cce diff`")
    return value


def _diff_delta(path: str, where: str, value: object, item: Metric | None) -> float:
    number = saved_report.decimal_number(value)
    if not math.isfinite(number):
        raise CliError(
            f"{path}: {where} is {json.dumps(value)}, not a delta; "
            'deltas are decimal strings such as "+0.500000"'
        )
    bounds = saved_report.outside_bounds(item, number, spread=True)
    if bounds is None and item is None and abs(number) >= _LARGEST_UNKNOWN_DELTA:
        bounds = "cce's 6-decimal numbers show less than 1e12"
    if bounds is not None:
        raise CliError(
            f"{path}: {where} is {json.dumps(value)}, which no two runs can differ by: "
            f"{bounds}; the document was damaged or written by hand, so regenerate it "
            "with `cce diff --format json`"
        )
    return number


def _from_diff(
    document: Mapping[str, Any], path: str
) -> tuple[str, str, int, list[tuple[str, str, list[float]]]]:
    base = _diff_field(path, "base", document.get("base"))
    head = _diff_field(path, "head", document.get("head"))
    metrics = _diff_field(path, "metrics", document.get("metrics"))
    registered = {item.key: item for item in (*METRICS, *TOKEN_METRICS)}
    known = list(registered)
    # Registry order first, then any metric this build does not know, by key.
    keys = [key for key in known if key in metrics] + sorted(set(metrics) - set(known))
    rows: list[tuple[str, str, list[float]]] = []
    for key in keys:
        where = f"metrics.{key}"
        body = _diff_field(path, where, metrics[key])
        label = body.get("label")
        per_query = body.get("per_query")
        if not isinstance(per_query, list):
            raise CliError(f"{path}: {where}.per_query must be a list of per-query rows")
        deltas = [
            _diff_delta(
                path,
                f"{where}.per_query[{i}].delta",
                _diff_field(path, f"{where}.per_query[{i}]", row).get("delta"),
                registered.get(key),
            )
            for i, row in enumerate(per_query)
        ]
        rows.append((key, label if isinstance(label, str) else key, deltas))
    paired = document.get("paired")
    count = paired if isinstance(paired, int) and not isinstance(paired, bool) else 0
    return str(base.get("backend", "base")), str(head.get("backend", "head")), count, rows


def _gated_rows(
    path: str,
    rows: list[tuple[str, str, list[float]]],
    gated: tuple[str, ...] | None,
) -> list[tuple[str, str, list[float]]]:
    """The rows of the gated metrics (all of them for None); a gated metric the pilot
    does not compare is a usage error (exit 2) naming the ones it does."""
    if gated is None:
        return rows
    compared = {key for key, _, _ in rows}
    for key in gated:
        if key not in compared:
            names = ", ".join(label for _, label, _ in rows) or "none"
            raise CliError(
                f"--gate-metrics {key}: {path} does not compare it (it compares: {names}); "
                "name metrics the pilot has",
                2,
            )
    return [row for row in rows if row[0] in gated]


def make_plan(text: str, path: str, request: PlanRequest) -> Plan:
    """Read a pilot document (v2 report or v1 diff) and plan every gated metric it
    compares at the gate's effective alpha."""
    compare, delta, power = request.compare, request.delta, request.power
    try:
        document = json_text.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(
            f"{path}: line {error.lineno} column {error.colno}: invalid JSON ({error.msg}); "
            "pass the output of `cce relevance --json` or `cce diff --format json`"
        ) from None
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema == diff_model.DIFF_SCHEMA:
        if compare is not None:
            raise CliError(
                "--compare applies to a relevance report; "
                f"{path} is a {diff_model.DIFF_SCHEMA} document, which already pairs base and head",
                2,
            )
        base, head, paired, rows = _from_diff(document, path)
    else:
        base, head, paired, rows = _from_report(text, path, compare)
        schema = REPORT_SCHEMA
    if paired == 0 and not any(deltas for _, _, deltas in rows):
        raise CliError(f"{path}: no case is in both {base} and {head}; a plan needs paired queries")
    rows = _gated_rows(path, rows, request.gated_metrics)
    level = effective_alpha(request.alpha, max(1, len(rows)), request.correction)
    plans = tuple(
        _guarded_plan(path, key, label, deltas, delta, level, power) for key, label, deltas in rows
    )
    return Plan(
        path,
        str(schema),
        base,
        head,
        paired,
        delta,
        request.alpha,
        power,
        plans,
        correction=request.correction,
        gated=tuple(key for key, _, _ in rows),
        effective_alpha=level,
    )


def plan_text(request: PlanRequest) -> str:
    """Read the pilot `request` names, plan it, and render it in its format."""
    plan = make_plan(saved_report.read_report_text(request.report), request.report, request)
    return render_plan_json(plan) if request.format == "json" else render_plan_text(plan)


def _level_text(plan: Plan) -> str:
    """The level the rows are sized at, and where it comes from."""
    if plan.effective_alpha == plan.alpha:
        return f"alpha {number_text(plan.alpha)}"
    family = len(plan.gated)
    return (
        f"effective alpha {number_text(plan.effective_alpha)} (the gate's alpha "
        f"{number_text(plan.alpha)}, {plan.correction}-adjusted over {family} gated metrics)"
    )


def _needed_text(item: MetricPlan) -> str:
    if item.exceeds:
        return f">{MAX_SAMPLE_SIZE}"
    return "n/a" if item.needed is None else str(item.needed)


def _range_text(item: MetricPlan) -> str | None:
    if item.sd_ci95 is None or item.needed_range is None:
        return None
    low, high = (f">{MAX_SAMPLE_SIZE}" if n is None else str(n) for n in item.needed_range)
    return (
        f"  {'':<12}{'':>6}  sd 95% interval {format6(item.sd_ci95[0])} to "
        f"{format6(item.sd_ci95[1])}: {low} to {high} queries"
    )


def render_plan_text(plan: Plan) -> str:
    """The human table: one row per metric and its sd's range, then what the columns mean."""
    lines = [
        f"sample-size plan: {display_text(plan.head)} against {display_text(plan.base)} "
        f"({display_text(plan.path)}), "
        f"{plan.paired} paired quer{'y' if plan.paired == 1 else 'ies'}",
        f"  two-sided paired t-test at {_level_text(plan)}, "
        f"power {number_text(plan.power)},"
        f" to detect a mean delta of {number_text(plan.delta)}",
        f"  {'metric':<12}{'n':>6}{'mean-delta':>14}{'delta-sd':>12}"
        f"{'queries-needed':>16}{'detectable-now':>16}",
    ]
    for item in plan.metrics:
        sd = "n/a" if item.sd is None else format6(item.sd)
        detectable = "n/a" if item.detectable is None else format6(item.detectable)
        lines.append(
            f"  {display_text(item.label):<12}{item.n:>6}"
            f"{format6_signed(item.mean_delta):>14}{sd:>12}"
            f"{_needed_text(item):>16}{detectable:>16}"
        )
        range_line = _range_text(item)
        if range_line is not None:
            lines.append(range_line)
    lines += [
        "",
        "  queries-needed: the smallest n with n >= ((t(alpha/2, n-1) + t(1-power, n-1)) * sd"
        " / delta)^2",
        "  detectable-now: (t(alpha/2, n-1) + t(1-power, n-1)) * sd / sqrt(n) at the pilot's n",
        "  sd 95% interval: the chi-square interval on the true sd given the pilot's n, and the",
        "    queries needed at its two ends (a small pilot's sd is a rough estimate)",
        "  n/a: fewer than two paired queries, or deltas without spread",
    ]
    return "\n".join(lines) + "\n"


def _plan_body(plan: Plan) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for item in plan.metrics:
        metrics[item.key] = {
            "detectable_now": None if item.detectable is None else format6(item.detectable),
            "exceeds_max": item.exceeds,
            "label": item.label,
            "mean_delta": format6_signed(item.mean_delta),
            "n": item.n,
            "queries_needed": item.needed,
            "sd": None if item.sd is None else format6(item.sd),
        }
        if item.sd_ci95 is not None and item.needed_range is not None:
            metrics[item.key]["sd_ci95"] = [format6(item.sd_ci95[0]), format6(item.sd_ci95[1])]
            metrics[item.key]["queries_needed_range"] = list(item.needed_range)
    return {
        "alpha": format6(plan.alpha),
        "base": plan.base,
        "correction": plan.correction,
        "effective_alpha": format6(plan.effective_alpha),
        "gated_metrics": list(plan.gated),
        "delta": format6(plan.delta),
        "head": plan.head,
        "max_sample_size": MAX_SAMPLE_SIZE,
        "metrics": metrics,
        "paired": plan.paired,
        "power": format6(plan.power),
        "schema": PLAN_SCHEMA,
        "source": {"path": plan.path, "schema": plan.source_schema},
    }


def render_plan_json(plan: Plan) -> str:
    """The `cce.plan/v1` document: sorted keys, 2-space indent, one trailing newline."""
    return json.dumps(_plan_body(plan), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
