"""The HTML report: one self-contained page per relevance report or diff, for a browser.

Why it exists: a reviewer wants to see at a glance what a ranking change did (the
verdict, each metric base against head with its interval, the per-query deltas as a
sorted chart, the tags) and then, for one query, what each side retrieved instead. This
module owns that page: it turns a `DiffReport` or a `SavedReport` (plus the optional
`Evidence`: query text, anchors, each side's top k with a few lines of code) into the
values the Jinja2 template shows, draws the charts as inline SVG, and embeds the
per-query evidence as JSON that the page's script reads on click.

The page is one file that requests nothing: CSS, script and charts are inline, and its
Content-Security-Policy allows no source but the page's own script (by hash), so even
a string that escaped escaping could neither load nor run anything. Everything from a
report is escaped: Jinja2 autoescapes every value, the embedded JSON has `<`, `>` and
`&` as `\\u` escapes, and the script writes user text with `textContent` only. The
bytes depend only on the inputs (no clock, no randomness), so the same report gives
the same page.

New report kinds (a suite of several fixture sets, say) add a builder that returns a
`Page`; the template and the script do not change (docs/reports.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import jinja2

from cce_cli.compare.pairing import DiffReport, MetricDiff, diff_reports
from cce_cli.compare.saved_report import SavedReport, parse_report
from cce_cli.compare.suite_inference import side_mean, tested_mean, tested_on
from cce_cli.evaluation.report import RunSummary
from cce_cli.formats.evidence import Evidence
from cce_cli.output import visible_controls
from cce_cli.render.comment import (
    differences,
    format3,
    format3_signed,
    side_labels,
    significant,
    verdict_finding,
)
from cce_cli.render.cost import budget_of, curves_of_reports, recall_curve_chart, value_text
from cce_cli.render.member_table import MemberRow, aggregate_rows, member_rows, primary_metric
from cce_cli.render.report_json import render_json
from cce_metrics import COST, COST_METRICS, METRICS, TOKEN_METRICS, Metric
from cce_stats import paired_test

__all__ = [
    "Page",
    "render_diff_page",
    "render_page",
    "render_relevance_page",
    "render_summary_page",
]

CHART_WIDTH: Final = 480
CHART_HEIGHT: Final = 90


@attrs.frozen(slots=True)
class Page:
    """Everything the template shows, as plain values (strings are escaped on output)."""

    title: str
    verdict: str
    status: str  # "passed", "failed" or "none": the colour of the verdict
    sides: tuple[dict[str, Any], ...]
    differences: tuple[tuple[str, str, str], ...]
    metric_columns: tuple[str, ...]
    metrics: tuple[dict[str, Any], ...]
    charts: tuple[dict[str, Any], ...]
    tag_columns: tuple[str, ...]
    tags: tuple[dict[str, Any], ...]
    query_columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]
    details: dict[str, Any]
    notes: tuple[str, ...] = ()
    tables: tuple[dict[str, Any], ...] = ()
    """Extra summary tables (a suite's per-member, group, macro and micro rows): each a
    `title`, a `first` column heading, `columns` and `rows` of `label`, `kind`, `cells`."""


_LAYOUT: Final = "\t\n"
"""The controls a page keeps as they are: HTML treats them as white space."""


def _visible(value: Any) -> Any:
    """`value` with every other control and bidi character of its strings spelled
    `\\uNNNN`: escaping makes text inert as markup, but an ESC, an OSC sequence or a
    right-to-left override would still reach a terminal that shows the file, or reorder
    what the browser shows. Markup cce built itself (`|safe`, which has `__html__`) is
    left alone."""
    if hasattr(value, "__html__"):
        return value
    if isinstance(value, str):
        return visible_controls(value, _LAYOUT)
    if isinstance(value, dict):
        return {_visible(key): _visible(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_visible(item) for item in value]
    return value


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("cce_cli", "render/templates"),
        autoescape=True,
        finalize=_visible,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _json_for_script(value: Any) -> str:
    """JSON that is inert inside `<script type="application/json">` whatever it holds."""
    text = json.dumps(_visible(value), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(page: Page) -> str:
    """The page's HTML; the script is allowed by its hash and nothing else is."""
    environment = _environment()
    assert environment.loader is not None
    script = environment.loader.get_source(environment, "report.js")[0]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    template = environment.get_template("report.html.j2")
    return template.render(
        page=page,
        script=script,
        script_hash=f"sha256-{digest}",
        data=_json_for_script(page.details),
    )


# --- charts ----------------------------------------------------------------------------


def _svg_number(x: float) -> str:
    return format3(x).rstrip("0").rstrip(".") or "0"


def bar_chart(values: Sequence[tuple[str, float]], signed: bool, label: str) -> str:
    """Sorted bars as inline SVG: deltas around a middle line, or values from the bottom.

    The text of each bar's tooltip is escaped here; the SVG is markup cce builds.
    """
    width, height = CHART_WIDTH, CHART_HEIGHT
    ordered = sorted(values, key=lambda item: item[1])
    peak = max((abs(value) for _, value in ordered), default=0.0) or 1.0
    base_y = height / 2 if signed else height - 1
    scale = (height / 2 - 2) / peak if signed else (height - 2) / peak
    step = width / max(len(ordered), 1)
    bar = max(step - (1 if step > 3 else 0), 0.5)
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_attr(label)}">',
        f'<line x1="0" y1="{_svg_number(base_y)}" x2="{width}" y2="{_svg_number(base_y)}" '
        'class="axis"/>',
    ]
    for position, (name, value) in enumerate(ordered):
        if value == 0.0:
            continue
        size = abs(value) * scale
        top = base_y - size if value > 0 else base_y
        kind = ("up" if value > 0 else "down") if signed else "value"
        parts.append(
            f'<rect class="{kind}" x="{_svg_number(position * step)}" y="{_svg_number(top)}" '
            f'width="{_svg_number(bar)}" height="{_svg_number(max(size, 0.5))}">'
            f"<title>{_attr(name)}: {format3_signed(value) if signed else format3(value)}"
            "</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)


def interval_chart(low: float | None, high: float | None, mean: float) -> str:
    """The mean delta and its 95% interval on a -1..+1 axis, zero marked."""
    width, height = 160, 18

    def x(value: float) -> str:
        clamped = min(max(value, -1.0), 1.0)
        return _svg_number((clamped + 1.0) / 2.0 * (width - 8) + 4)

    parts = [
        f'<svg class="ci" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'aria-hidden="true">',
        f'<line class="zero" x1="{x(0.0)}" y1="1" x2="{x(0.0)}" y2="{height - 1}"/>',
    ]
    if low is not None and high is not None:
        parts.append(f'<line class="span" x1="{x(low)}" y1="9" x2="{x(high)}" y2="9"/>')
    parts.append(f'<circle class="mean" cx="{x(mean)}" cy="9" r="3"/></svg>')
    return "".join(parts)


def _attr(text: str) -> str:
    """Text for SVG markup cce writes itself (the template's autoescape does the rest)."""
    return (
        visible_controls(text, _LAYOUT)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


# --- evidence --------------------------------------------------------------------------


def _details(
    case_ids: Sequence[str],
    sides: Sequence[tuple[int | None, str, str]],
    evidence: Evidence | None,
) -> dict[str, Any]:
    """Per case, what the script shows on click: anchors and each side's results.

    Code is stored once per (path, lines) in `code` and referred to by index, because
    base and head mostly retrieve the same chunks.
    """
    code_index: dict[tuple[str, int, int], int] = {}
    code: list[list[str]] = []
    cases: list[dict[str, Any]] = []
    for case_id in case_ids:
        anchors = list(evidence.anchors.get(case_id, ())) if evidence is not None else []
        results: list[dict[str, Any]] = []
        for side, backend, label in sides:
            hits = evidence.hits(side, backend, case_id) if evidence is not None else None
            rows: list[list[Any]] | None = None
            if hits is not None:
                rows = []
                for hit in hits:
                    key = (hit.path, hit.start_line, hit.end_line)
                    lines = evidence.code.get(key) if evidence is not None else None
                    ref = -1
                    if lines:
                        if key not in code_index:
                            code_index[key] = len(code)
                            code.append(list(lines))
                        ref = code_index[key]
                    rows.append(
                        [
                            hit.rank,
                            hit.path,
                            hit.start_line,
                            hit.end_line,
                            hit.kind,
                            hit.score,
                            list(hit.matches),
                            ref,
                        ]
                    )
            results.append({"label": label, "hits": rows})
        cases.append({"anchors": anchors, "sides": results})
    return {"cases": cases, "code": code, "hasEvidence": evidence is not None}


def _side_info(
    role: str, name: str, path: str, corpus: str | None, embedder: str | None, extra: Any
) -> dict[str, Any]:
    config, provenance = extra
    return {
        "role": role,
        "name": name,
        "path": path,
        "corpus": corpus or "–",
        "embedder": embedder or "–",
        "config": [f"{key} = {_plain(value)}" for key, value in sorted((config or {}).items())],
        "provenance": [
            f"{key}: {_plain(value)}" for key, value in sorted((provenance or {}).items())
        ],
    }


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# --- a diff ----------------------------------------------------------------------------


def _metric_row(report: DiffReport, item: MetricDiff) -> dict[str, Any]:
    base_mean = side_mean(report, item, "base")
    head_mean = side_mean(report, item, "head")
    ci = item.result.ci95
    status = ""
    if significant(report, item):
        status = "worse" if item.moved_worse else "better"
    return {
        "label": item.metric.label,
        "values": ["n/a" if v is None else format3(v) for v in (base_mean, head_mean)],
        "delta": format3_signed(item.result.mean_delta),
        "ci": "n/a" if ci is None else f"[{format3_signed(ci[0])}, {format3_signed(ci[1])}]",
        "p": "n/a" if item.p_adjusted is None else format3(item.p_adjusted),
        "wtl": f"{item.wins} / {item.ties} / {item.losses}",
        "status": status,
        "chart": interval_chart(
            None if ci is None else ci[0], None if ci is None else ci[1], item.result.mean_delta
        ),
    }


def render_diff_page(report: DiffReport) -> str:
    """The page of a diff: base against head."""
    group = report.overall
    base_label, head_label = side_labels(report)
    evidence = report.evidence
    queries = dict(report.queries)
    tags_of: dict[str, list[str]] = {}
    for tagged in report.tags or ():
        for case_id in tagged.case_ids:
            tags_of.setdefault(case_id, []).append(tagged.tag or "")
    by_metric = [{row.id: row for row in item.rows} for item in group.metrics]
    primary = primary_metric(report)
    primary_rows = {} if primary is None else {row.id: row for row in primary.rows}
    rows: list[dict[str, Any]] = []
    for index, case_id in enumerate(group.case_ids):
        cells: list[dict[str, Any]] = []
        for item, found in zip(group.metrics, by_metric, strict=True):
            row = found.get(case_id)
            if row is None:
                cells.append({"text": "–", "title": "", "sort": 0.0, "status": ""})
                continue
            oriented = item.metric.oriented(row.delta)
            cells.append(
                {
                    "text": format3_signed(row.delta) if row.delta != 0.0 else "0",
                    "title": f"{format3(row.base)} → {format3(row.head)}",
                    "sort": row.delta,
                    "status": "better" if oriented > 0 else ("worse" if oriented < 0 else ""),
                }
            )
        # Colour and order follow the primary metric alone: a query that gained on it
        # and lost a little on another is not "worse" (docs/gating.md#the-primary-metric).
        moved = primary_rows.get(case_id)
        change = 0.0
        if primary is not None and moved is not None:
            change = primary.metric.oriented(moved.delta)
        status = "worse" if change < 0 else ("better" if change > 0 else "same")
        rows.append(
            {
                "index": index,
                "id": case_id,
                "query": queries.get(case_id, ""),
                "tags": ", ".join(tags_of.get(case_id, [])),
                "cells": cells,
                "sort": change,
                "status": status,
            }
        )
    rows.sort(key=lambda row: row["sort"])  # worst first on the primary metric; stable
    charts = tuple(
        {
            "label": f"{item.metric.label}: per-query delta, sorted",
            "svg": bar_chart(
                [(row.id, row.delta) for row in item.rows],
                True,
                f"{item.metric.label} per-query deltas, sorted",
            ),
        }
        for item in group.metrics
    )
    tags = tuple(
        {
            "tag": tagged.tag or "",
            "n": len(tagged.case_ids),
            "cells": [_tag_cell(report, tagged.metric(item.metric.key)) for item in group.metrics],
        }
        for tagged in report.tags or ()
    )
    status = "failed" if report.gate_reasons else "passed" if report.gate_active else "none"
    notes = list(report.gate_reasons)
    if report.mean is not None:
        notes.append(
            f"{paired_test(report.test).label} {tested_on(report)}; base, head, delta and "
            f"95% CI are the {tested_mean(report)} mean"
        )
    unpaired = len(report.unpaired_base) + len(report.unpaired_head)
    if unpaired:
        notes.append(
            f"{unpaired} {'query is' if unpaired == 1 else 'queries are'} in only one report "
            "and left out of the tests"
        )
    page = Page(
        title=f"cce diff: {base_label} → {head_label}",
        verdict=verdict_finding(report, str) + ".",
        status=status,
        sides=(
            _side_info(
                "base",
                report.base.backend,
                report.base.path,
                report.base.corpus,
                report.base.embedder,
                (report.base.config, report.base.provenance),
            ),
            _side_info(
                "head",
                report.head.backend,
                report.head.path,
                report.head.corpus,
                report.head.embedder,
                (report.head.config, report.head.provenance),
            ),
        ),
        differences=tuple(differences(report)),
        metric_columns=("base", "head", "delta", "95% CI", "adjusted p", "wins / ties / losses"),
        metrics=tuple(_metric_row(report, item) for item in group.metrics),
        charts=charts,
        tag_columns=tuple(item.metric.label for item in group.metrics),
        tags=tags,
        query_columns=tuple(f"Δ {item.metric.label}" for item in group.metrics),
        rows=tuple(rows),
        details=_details(
            group.case_ids,
            [(0, report.base.backend, base_label), (1, report.head.backend, head_label)],
            evidence,
        ),
        notes=tuple(notes),
        tables=_member_tables(report, primary),
    )
    return render_page(page)


def _member_tables(report: DiffReport, primary: MetricDiff | None) -> tuple[dict[str, Any], ...]:
    """A suite diff's per-member table of the primary metric, then macro and micro."""
    if report.members is None or primary is None:
        return ()

    def row(found: MemberRow, kind: str) -> dict[str, Any]:
        delta = "n/a" if found.delta is None else format3_signed(found.delta)
        status = ""
        if found.delta is not None and found.delta != 0.0:
            oriented = primary.metric.oriented(found.delta)
            status = "better" if oriented > 0 else "worse"
        values = ["n/a" if v is None else format3(v) for v in (found.base, found.head)]
        return {
            "label": found.label,
            "kind": f"{kind} {status}".strip(),
            "cells": [str(found.queries), *values, delta, found.record],
        }

    rows = [row(found, "member") for found in member_rows(report, primary)]
    rows += [row(found, found.label) for found in aggregate_rows(report, primary)]
    return (
        {
            "title": f"Per member: {primary.metric.label}",
            "note": "macro weighs members alike (its wins / ties / losses count members); "
            "micro weighs queries alike",
            "first": "member",
            "columns": ["queries", "base", "head", "delta", "wins / ties / losses"],
            "rows": rows,
        },
    )


def _tag_cell(report: DiffReport, item: MetricDiff | None) -> dict[str, Any]:
    if item is None:
        return {"text": "–", "status": ""}
    status = ""
    if significant(report, item):
        status = "worse" if item.moved_worse else "better"
    p = "n/a" if item.p_adjusted is None else format3(item.p_adjusted)
    return {"text": f"{format3_signed(item.result.mean_delta)} (p {p})", "status": status}


# --- a relevance report ----------------------------------------------------------------


def render_relevance_page(
    report: SavedReport,
    evidence: Evidence | None = None,
    queries: Mapping[str, str] | None = None,
    curves: Sequence[tuple[str, Sequence[tuple[int, float]]]] | None = None,
    tables: tuple[dict[str, Any], ...] = (),
) -> str:
    """The page of one relevance report: every backend side by side, no deltas.

    A report with cost metrics also gets the recall-versus-tokens chart: `curves` (each
    backend's points, from an in-run reading) or else the report's `recall@NNNNt` means.
    """
    backends = report.backends
    cost = saved_cost_metrics(report)
    metrics = [
        item
        for item in (*METRICS, *TOKEN_METRICS, *cost)
        if any(item.key in case.values for backend in backends for case in backend.cases)
    ]
    case_ids: list[str] = []
    seen: set[str] = set()
    tags_of: dict[str, tuple[str, ...]] = {}
    texts: dict[str, str] = dict(queries or {})
    if evidence is not None:
        for case_id, text in evidence.queries().items():
            texts.setdefault(case_id, text)
    for backend in backends:
        for case in backend.cases:
            if case.id not in seen:
                seen.add(case.id)
                case_ids.append(case.id)
                tags_of[case.id] = case.tags
            if case.query is not None:
                texts.setdefault(case.id, case.query)
    lookup = [{case.id: case for case in backend.cases} for backend in backends]
    rows: list[dict[str, Any]] = []
    for index, case_id in enumerate(case_ids):
        cells: list[dict[str, Any]] = []
        for item in metrics:
            for cases in lookup:
                saved = cases.get(case_id)
                value = None if saved is None else saved.values.get(item.key)
                cells.append(
                    {
                        "text": "–" if value is None else value_text(item, value),
                        "title": "",
                        "sort": -1.0 if value is None else value,
                        "status": "",
                    }
                )
        rows.append(
            {
                "index": index,
                "id": case_id,
                "query": texts.get(case_id, ""),
                "tags": ", ".join(tags_of.get(case_id, ())),
                "cells": cells,
                "status": "same",
            }
        )
    names = [backend.name for backend in backends]
    metric_rows = []
    for item in metrics:
        values = [backend.aggregate(item) for backend in backends]
        metric_rows.append(
            {
                "label": item.label,
                "values": ["n/a" if v is None else value_text(item, v) for v in values],
                "delta": "",
                "ci": "",
                "p": "",
                "wtl": "",
                "status": "",
                "chart": "",
            }
        )
    first = backends[0] if backends else None
    charts = tuple(
        {
            "label": f"{item.label} of {first.name}: per-query value, sorted",
            "svg": bar_chart(
                [
                    (case.id, case.values[item.key])
                    for case in first.cases
                    if item.key in case.values
                ],
                False,
                f"{item.label} per query, sorted",
            ),
        }
        for item in metrics
        if first is not None
    )
    if curves is None:
        curves = saved_curves(report, cost)
    curve_svg = recall_curve_chart(curves)
    if curve_svg:
        curve_chart = {"label": "recall within a token budget (log scale), per backend"}
        charts = ({**curve_chart, "svg": curve_svg}, *charts)
    tag_names = sorted({tag for tags in tags_of.values() for tag in tags})
    tags = []
    for tag in tag_names:
        members = [case_id for case_id in case_ids if tag in tags_of[case_id]]
        cells = []
        for item in metrics:
            for cases in lookup:
                values = [
                    value
                    for case_id in members
                    if case_id in cases
                    and (value := cases[case_id].values.get(item.key)) is not None
                ]
                average = item.average(values) if values else None
                shown = "–" if average is None else value_text(item, average)
                cells.append({"text": shown, "status": ""})
        tags.append({"tag": tag, "n": len(members), "cells": cells})
    multi = len(backends) > 1
    page = Page(
        title=f"cce relevance: {', '.join(names)}",
        verdict=(
            f"{len(case_ids)} {'query' if len(case_ids) == 1 else 'queries'} scored for "
            f"{len(backends)} {'backend' if len(backends) == 1 else 'backends'}"
        ),
        status="none",
        sides=tuple(
            _side_info(
                "backend",
                backend.name,
                report.path,
                report.corpus,
                report.embedder,
                (backend.config, report.provenance),
            )
            for backend in backends
        ),
        differences=(),
        metric_columns=tuple(names),
        metrics=tuple(metric_rows),
        charts=charts,
        tag_columns=tuple(
            f"{item.label} {name}" if multi else item.label for item in metrics for name in names
        ),
        tags=tuple(tags),
        query_columns=tuple(
            f"{item.label} {name}" if multi else item.label for item in metrics for name in names
        ),
        rows=tuple(rows),
        details=_details(
            case_ids,
            [(None, backend.name, backend.name) for backend in backends],
            evidence,
        ),
        tables=tables,
    )
    return render_page(page)


def saved_cost_metrics(report: SavedReport) -> tuple[Metric, ...]:
    """The cost metrics some case of the report carries, in the order first met."""
    keys = dict.fromkeys(
        key for backend in report.backends for case in backend.cases for key in case.values
    )
    found = (COST_METRICS.resolve(key) for key in keys)
    chosen = [item for item in found if item is not None and item.group == COST]
    # first-hit-tokens first, then the recalls by budget, whatever order JSON keys took.
    return tuple(sorted(chosen, key=lambda item: (budget_of(item) or 0, item.name)))


def saved_curves(
    report: SavedReport, cost: Sequence[Metric]
) -> tuple[tuple[str, tuple[tuple[int, float], ...]], ...]:
    """Each backend's recall curve from the report's own `recall@NNNNt` means."""
    budgets = sorted((budget, item) for item in cost if (budget := budget_of(item)) is not None)
    curves = []
    for backend in report.backends:
        points = []
        for budget, item in budgets:
            value = backend.aggregate(item)
            if value is not None:
                points.append((budget, value))
        curves.append((backend.name, tuple(points)))
    return tuple(curves)


# --- a run of `cce relevance` ------------------------------------------------------------


def render_summary_page(summary: RunSummary, evidence: Evidence | None = None) -> str:
    """The page of an in-memory run: its report as `--json` would save it, so the page
    is the one `cce report` makes of that file; with `--compare A,B`, A against B."""
    saved = parse_report(render_json(summary), "this run")
    comparison = summary.comparison
    if comparison is None:
        curves = curves_of_reports(summary.backends) if summary.cost_metrics else None
        return render_relevance_page(saved, evidence, curves=curves)
    diff = diff_reports(
        saved,
        saved,
        saved.backend(comparison.a),
        saved.backend(comparison.b),
        test=comparison.test,
        by_tag=summary.tags is not None,
    )
    if evidence is not None:
        diff = attrs.evolve(diff, evidence=evidence, queries=evidence.queries())
    return render_diff_page(diff)
