"""Text and `cce.relevance.diff/v1` JSON renderings of a `cce diff`, and its format registry.

Why it exists: the same comparison is read in a terminal, pasted into a pull request,
opened in a browser and archived by CI, so every view comes from one `DiffReport`. The
text and JSON share one ordering: the changed queries first, worst first, then the
unchanged count, then the significance block and a one-line verdict; their bytes are a
stable contract (the JSON: alphabetical keys, 6-decimal strings, one trailing newline;
docs/gating.md#json). The pull-request comment (`cce_cli.render.comment`) and the HTML
report (`cce_cli.render.html`) are reviewer views with their own modules.
`DIFF_RENDERERS` is the registry `cce diff --format` chooses from
(docs/architecture.md#how-to-add-an-output-format).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

from cce_cli.compare.pairing import DIFF_SCHEMA, DiffGroup, DiffReport, DiffSide, MetricDiff
from cce_cli.compare.suite_inference import mean_note, tested_mean, tested_on
from cce_cli.compare.tag_family import family_size
from cce_cli.output import column, display_text, label_width, number_text
from cce_cli.render.changes import changed_queries
from cce_cli.render.cost import diff_cell
from cce_cli.render.member_table import rows_by_member
from cce_cli.render.relevance import Renderer
from cce_retrieval import format6, format6_signed
from cce_stats import effect_size_dz, paired_test, wins_ties_losses

__all__ = [
    "DIFF_RENDERERS",
    "DiffRenderer",
    "changed_queries",
    "render_diff_html",
    "render_diff_json",
    "render_diff_markdown",
    "render_diff_text",
    "verdict",
]


def _p_value(value: float | None) -> str:
    return "n/a" if value is None else format6(value)


def _signed(value: float | None) -> str:
    return "n/a" if value is None else format6_signed(value)


def _ci(item: MetricDiff) -> str:
    ci = item.result.ci95
    return "n/a" if ci is None else f"[{format6_signed(ci[0])}, {format6_signed(ci[1])}]"


def _alpha(alpha: float) -> str:
    return number_text(alpha)


def verdict(report: DiffReport) -> str:
    """The one-line conclusion: significant changes per direction, then the gate."""
    better: list[str] = []
    worse: list[str] = []
    for item in report.overall.metrics:
        p = item.p_adjusted
        if p is None or p >= report.alpha or item.result.mean_delta == 0.0:
            continue
        (worse if item.moved_worse else better).append(item.metric.label)
    adjusted = "p" if report.correction == "none" else f"{report.correction}-adjusted p"
    if not better and not worse:
        text = (
            f"no significant change on any metric ({adjusted} >= {_alpha(report.alpha)}"
            f"{mean_note(report)})"
        )
    else:
        parts = []
        if better:
            parts.append(
                f"{_shown(report.head.backend)} significantly better on {', '.join(better)}"
            )
        if worse:
            parts.append(f"significantly worse on {', '.join(worse)}")
        text = "; ".join(parts) + f" ({adjusted} < {_alpha(report.alpha)}{mean_note(report)})"
    if report.gate_active:
        if report.gate_passed:
            text += "; gate passed"
        else:
            count = len(report.gate_reasons)
            text += f"; gate FAILED ({count} reason{'s' if count != 1 else ''})"
        if report.gate_scope is not None:
            text += f" ({report.gate_scope})"
    return text


def _test_heading(report: DiffReport, family: int, scope: str | None = None) -> str:
    test = paired_test(report.test)
    correction = (
        "no correction"
        if report.correction == "none"
        else f"{report.correction}-adjusted over {scope or f'{family} metrics'}"
    )
    alpha = _alpha(report.alpha)
    return f"{test.label} {tested_on(report)} (two-sided), {correction}, alpha {alpha}"


def _shown(text: str | None) -> str:
    """A name from a report as the terminal shows it (`display_text`; "" for None)."""
    return "" if text is None else display_text(text)


def _side(side: DiffSide) -> str:
    return f"{display_text(side.backend)} ({display_text(side.path)})"


def _unpaired_text(report: DiffReport) -> str | None:
    if not report.unpaired_base and not report.unpaired_head:
        return None
    parts = []
    if report.unpaired_base:
        parts.append("base only: " + ", ".join(map(display_text, report.unpaired_base)))
    if report.unpaired_head:
        parts.append("head only: " + ", ".join(map(display_text, report.unpaired_head)))
    return "unpaired, excluded from the tests: " + "; ".join(parts)


# --- text ------------------------------------------------------------------------------


def _tag_scope(report: DiffReport, group: DiffGroup) -> str | None:
    """The correction's family of a tag's tests when it is every tag × metric."""
    if group.tag is None or report.tags is None:
        return None
    if report.tag_scope != "family":
        return f"{len(group.metrics)} metrics within the tag"
    return f"{family_size(report.tags)} tests (every tag × metric)"


def _delta_heading(report: DiffReport) -> str:
    """The text table's delta column: "mean-delta", or the suite's "macro-delta"."""
    mean = tested_mean(report)
    return "mean-delta" if mean is None else f"{mean}-delta"


def _text_stats(report: DiffReport, group: DiffGroup) -> list[str]:
    statistic = paired_test(report.test).statistic_name
    lines = [
        f"  {_test_heading(report, len(group.metrics), _tag_scope(report, group))}",
        f"  {'metric':<12}{'n':>5}{_delta_heading(report):>14}{'W/T/L':>12}{statistic:>12}"
        f"{'p':>12}"
        f"{'p-adj':>12}{'d_z':>12}{'95% CI':>26}",
    ]
    for item in group.metrics:
        wtl = f"{item.wins}/{item.ties}/{item.losses}"
        lines.append(
            f"  {item.metric.label:<12}{item.n:>5}"
            f"{column(format6_signed(item.result.mean_delta), 14)}{column(wtl, 12)}"
            f"{column(_signed(item.result.statistic), 12)}{column(_p_value(item.result.p), 12)}"
            f"{column(_p_value(item.p_adjusted), 12)}{column(_signed(item.effect_size), 12)}"
            f"{column(_ci(item), 26)}"
        )
    return lines


def render_diff_text(report: DiffReport) -> str:
    """The terminal rendering: one row per changed (query, metric), base and head shown."""
    group = report.overall
    lines = [
        f"CCE relevance diff — {_side(report.base)} → {_side(report.head)}",
        f"  paired queries: {len(group.case_ids)}",
    ]
    unpaired = _unpaired_text(report)
    if unpaired is not None:
        lines.append(f"  {unpaired}")
    lines += _parameter_lines(report)
    changed = changed_queries(group)
    lines += ["", "  changed queries, worst first"]
    if changed:
        width = label_width((display_text(change.id) for change in changed), 24)
        lines.append(f"  {'query':<{width}}{'metric':<12}{'base':>12}{'head':>12}{'delta':>12}")
        for change in changed:
            first = True
            for cell in change.cells:
                if cell is None or cell[3] == 0.0:
                    continue
                item, base, head, delta = cell
                name = display_text(change.id) if first else ""
                shown = (
                    f"{diff_cell(item.metric, base):>12}{diff_cell(item.metric, head):>12}"
                    f"{diff_cell(item.metric, delta, signed=True):>12}"
                )
                lines.append(f"  {name:<{width}}{item.metric.label:<12}{shown}")
                first = False
    else:
        lines.append("  (none)")
    lines += [f"  unchanged: {len(group.case_ids) - len(changed)} of {len(group.case_ids)}", ""]
    lines += _text_stats(report, group)
    for tagged in report.tags or ():
        lines += ["", f"  tag {_shown(tagged.tag)}: {len(tagged.case_ids)} paired queries"]
        lines += _text_stats(report, tagged)
    if report.members is not None:
        lines += ["", *_member_lines(report)]
    lines += ["", f"  verdict: {verdict(report)}"]
    return "\n".join(lines) + "\n"


def _parameter_lines(report: DiffReport) -> list[str]:
    """The backend parameters that differ between a configured base and head (nothing
    when neither report records a configuration)."""
    from cce_cli.render.comment import differences

    rows = [row for row in differences(report) if row[0].startswith("config ")]
    if not rows:
        return []
    lines = ["  parameters that differ (base → head):"]
    lines += [
        f"    {display_text(what[len('config ') :])}: {display_text(base)} → {display_text(head)}"
        for what, base, head in rows
    ]
    return lines


@attrs.frozen(slots=True)
class MemberDelta:
    """One suite member on one metric: its paired queries, mean delta and W/T/L."""

    member: str
    metric: MetricDiff
    queries: int
    mean_delta: float | None
    wins: int
    ties: int
    losses: int
    effect_size: float | None = None
    """The member's own d_z (its mean delta over the sd of its deltas)."""


def member_deltas(report: DiffReport) -> list[MemberDelta]:
    """Per suite member (in member order) and compared metric (in report order): the mean
    delta over the member's paired queries and its wins, ties and losses (oriented so a
    win is an improvement)."""
    found: list[MemberDelta] = []
    members = report.members or ()
    metrics = report.overall.metrics
    grouped = [rows_by_member(item, members) for item in metrics]
    for member in members:
        for item, by_member in zip(metrics, grouped, strict=True):
            deltas = [row.delta for row in by_member[member]]
            oriented = deltas if item.metric.higher_is_better else [-d for d in deltas]
            wins, ties, losses = wins_ties_losses(oriented)
            mean = sum(deltas) / len(deltas) if deltas else None
            found.append(
                MemberDelta(
                    member,
                    item,
                    len(deltas),
                    mean,
                    wins,
                    ties,
                    losses,
                    effect_size_dz(deltas) if deltas else None,
                )
            )
    return found


def _member_lines(report: DiffReport) -> list[str]:
    lines = ["  per member: mean delta (wins/ties/losses), the member's own d_z"]
    width = max(10, *(len(display_text(member)) + 2 for member in report.members or ()))
    lines.append(
        f"  {'member':<{width}}{'metric':<12}{'n':>6}{'mean-delta':>14}{'W/T/L':>12}{'d_z':>12}"
    )
    for row in member_deltas(report):
        mean = format6_signed(row.mean_delta) if row.mean_delta is not None else "n/a"
        record = f"{row.wins}/{row.ties}/{row.losses}"
        lines.append(
            f"  {display_text(row.member):<{width}}{row.metric.metric.label:<12}{row.queries:>6}"
            f"{mean:>14}{record:>12}{_signed(row.effect_size):>12}"
        )
    return lines


# --- markdown and HTML ---------------------------------------------------------------


def render_diff_markdown(report: DiffReport) -> str:
    """The pull-request comment (`cce_cli.render.comment`, imported when asked for)."""
    from cce_cli.render.comment import render_comment

    return render_comment(report)


def render_diff_html(report: DiffReport) -> str:
    """The self-contained HTML report (`cce_cli.render.html`: Jinja2 loads only here)."""
    from cce_cli.render.html import render_diff_page

    return render_diff_page(report)


# --- JSON ------------------------------------------------------------------------------


def _signed_or_null(value: float | None) -> str | None:
    return None if value is None else format6_signed(value)


def _plain_or_null(value: float | None) -> str | None:
    return None if value is None else format6(value)


def _metrics_json(report: DiffReport, group: DiffGroup) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    for item in group.metrics:
        result = item.result
        metrics[item.metric.key] = {
            "ci95_high": None if result.ci95 is None else format6_signed(result.ci95[1]),
            "ci95_low": None if result.ci95 is None else format6_signed(result.ci95[0]),
            "effect_size": _signed_or_null(item.effect_size),
            "label": item.metric.label,
            "losses": item.losses,
            "mean_delta": format6_signed(result.mean_delta),
            "n": item.n,
            "p": _plain_or_null(result.p),
            "p_adjusted": _plain_or_null(item.p_adjusted),
            "per_query": [
                {
                    "base": format6(row.base),
                    "delta": format6_signed(row.delta),
                    "head": format6(row.head),
                    "id": row.id,
                }
                for row in item.rows
            ],
            "statistic": _signed_or_null(result.statistic),
            "t": _signed_or_null(result.statistic) if report.test == "t" else None,
            "ties": item.ties,
            "wins": item.wins,
        }
    return metrics


def _side_json(side: DiffSide) -> dict[str, Any]:
    return {
        "backend": side.backend,
        "corpus": side.corpus,
        "embedder": side.embedder,
        "path": side.path,
    }


def diff_body(report: DiffReport) -> dict[str, Any]:
    """The v1 document as plain JSON values (keys get sorted on output)."""
    gate: dict[str, Any] = {"passed": report.gate_passed}
    if report.gate_reasons:
        gate["reasons"] = list(report.gate_reasons)
    if report.gate_metrics:
        gate["metrics"] = list(report.gate_metrics)
    body: dict[str, Any] = {
        "alpha": format6(report.alpha),
        "base": _side_json(report.base),
        "correction": report.correction,
        "gate": gate,
        "head": _side_json(report.head),
        "metrics": _metrics_json(report, report.overall),
        "paired": len(report.overall.case_ids),
        "schema": DIFF_SCHEMA,
        "statistic": paired_test(report.test).statistic_name,
        "test": report.test,
        "unpaired": {"base": list(report.unpaired_base), "head": list(report.unpaired_head)},
        "verdict": verdict(report),
    }
    if report.mean is not None:
        body["mean"] = report.mean
        body["unit"] = report.unit
    if report.tags is not None and report.tag_scope != "tag":
        body["tag_correction"] = report.tag_scope
    if report.members is not None:
        members: dict[str, Any] = {}
        for row in member_deltas(report):
            members.setdefault(row.member, {})[row.metric.metric.key] = {
                "effect_size": _signed_or_null(row.effect_size),
                "losses": row.losses,
                "mean_delta": _signed_or_null(row.mean_delta),
                "n": row.queries,
                "ties": row.ties,
                "wins": row.wins,
            }
        body["members"] = members
    if report.tags is not None:
        body["tags"] = {
            group.tag: {"metrics": _metrics_json(report, group), "paired": len(group.case_ids)}
            for group in report.tags
            if group.tag is not None
        }
    return body


def render_diff_json(report: DiffReport) -> str:
    """The `cce.relevance.diff/v1` document: sorted keys, 2-space indent, one newline."""
    return json.dumps(diff_body(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


DiffRenderer = Renderer[DiffReport]
"""One output format of `cce diff`."""

DIFF_RENDERERS: Final[Mapping[str, DiffRenderer]] = MappingProxyType(
    {
        "text": DiffRenderer("text", "terminal tables (default)", render_diff_text),
        "markdown": DiffRenderer(
            "markdown", "a pull-request comment (GitHub-flavoured markdown)", render_diff_markdown
        ),
        "json": DiffRenderer("json", f"the {DIFF_SCHEMA} document", render_diff_json),
        "html": DiffRenderer("html", "a self-contained HTML report", render_diff_html),
    }
)
"""`cce diff` output formats by name; the first is the default."""
