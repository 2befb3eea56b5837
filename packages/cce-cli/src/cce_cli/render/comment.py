"""The pull-request comment: `cce diff --format markdown` and the GitHub job summary.

Why it exists: a reviewer reads a ranking change in a pull request, not in a terminal.
The comment leads with its verdict (the gate, and what moved significantly, naming
both sides), then one aggregate table (base, head, delta, interval, adjusted p, wins /
ties / losses) with significant rows marked, then what differs between the two sides,
and only then, collapsed, the queries that moved and the per-tag tables. It must fit a
GitHub comment (`COMMENT_LIMIT` characters): past that, per-query rows are cut, and a
line says how many. Numbers show 3 decimals (the JSON keeps 6). Every text that comes
from a report (ids, query text, tags, names, paths) is escaped and kept on one line, so
no report can add markup, a heading or a table row to the comment.

The layout is cce's own, pinned by `tests/golden/diff.md` (docs/reports.md); the text
and JSON renderings live in `cce_cli.render.diff` and do not depend on this module.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from cce_cli.compare.pairing import DiffGroup, DiffReport, MetricDiff
from cce_cli.compare.suite_inference import (
    mean_heading,
    mean_note,
    side_mean,
    tested_mean,
    tested_on,
)
from cce_cli.compare.tag_family import family_size
from cce_cli.output import number_text, visible_controls
from cce_cli.render.changes import ChangedQuery, changed_queries
from cce_cli.render.cost import token_text
from cce_cli.render.member_table import MemberRow, aggregate_rows, member_rows, primary_metric
from cce_metrics import Metric
from cce_stats import paired_test

__all__ = [
    "COMMENT_LIMIT",
    "comment_verdict",
    "differences",
    "format3",
    "format3_signed",
    "in_unit",
    "md_text",
    "render_comment",
    "side_labels",
    "verdict_finding",
]

COMMENT_LIMIT: Final = 65_536
"""GitHub's limit on the body of an issue or pull-request comment, in characters."""

QUERY_WIDTH: Final = 100
"""Characters of query text shown in a per-query row; the rest is in the HTML report."""

ID_WIDTH: Final = 100
"""Characters of a case id shown in a row or a list; the whole id is in the JSON report.
Ids come from fixture files anyone may write: one of 200 KB would otherwise take the
comment past `COMMENT_LIMIT` by itself and every row would be cut to make room."""

REASON_WIDTH: Final = 300
"""Characters of a gate reason shown; a reason quotes a case id, so it is bounded too."""

LISTED_IDS: Final = 20
"""Unpaired ids and gate reasons listed before "and N more"."""

# Line breaks (those of str.splitlines) and tabs: a cell stays on one line. Other
# controls and bidi overrides are then spelled `\uNNNN` (`visible_controls`).
_BREAKS = re.compile("[\t\n\x0b\x0c\r\x1c-\x1e\x85\u2028\u2029]")
# Characters that start inline markdown (emphasis, code, links and images, table cells,
# strikethrough) or, at a line start, a heading or quote. Cells never start a line, so
# list markers need no escape; `<` and `&` become entities instead.
_MARKUP = re.compile(r"([\\`*_\[\]|#~>])")


def _round3(x: float) -> int:
    """|x| × 1000 rounded half away from zero, exactly (as `format6` does with 10^6)."""
    a = abs(x) * 1000.0
    if not math.isfinite(a):
        return 0
    whole = math.floor(a)
    return int(whole + 1 if a - whole >= 0.5 else whole)


def format3(x: float) -> str:
    """Three decimals, half away from zero; never `-0.000`."""
    scaled = _round3(x)
    sign = "-" if x < 0.0 and scaled != 0 else ""
    return f"{sign}{scaled // 1000}.{scaled % 1000:03d}"


def format3_signed(x: float) -> str:
    """`format3` with a `+` on anything that does not print as negative."""
    text = format3(x)
    return text if text.startswith("-") else "+" + text


def _p3(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if _round3(p) == 0 and p > 0.0 else format3(p)


def one_line(text: str) -> str:
    """`text` with every line break made a space and every other control or bidi
    character spelled `\\uNNNN`, so it neither breaks a line nor reaches a terminal."""
    return visible_controls(_BREAKS.sub(" ", text))


def md_text(text: str) -> str:
    """User text as inert markdown on one line: markup escaped, `<` and `&` as entities."""
    flat = one_line(text).replace("&", "&amp;").replace("<", "&lt;")
    return _MARKUP.sub(r"\\\1", flat)


def _html_text(text: str) -> str:
    """User text inside raw HTML (a `<summary>`): escaped as HTML, on one line."""
    return html.escape(one_line(text), quote=True)


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _join(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def side_labels(report: DiffReport) -> tuple[str, str]:
    """How the two sides are named: their backends, or their report files when both
    sides are the same backend (a change measured by running one backend twice)."""
    if report.base.backend != report.head.backend:
        return report.base.backend, report.head.backend
    if report.base.path != report.head.path:
        return report.base.path, report.head.path
    return "base", "head"


def significant(report: DiffReport, item: MetricDiff) -> bool:
    """Whether `item`'s mean moved with an adjusted p below alpha (the verdict's rule)."""
    p = item.p_adjusted
    return p is not None and p < report.alpha and item.result.mean_delta != 0.0


def _adjusted(report: DiffReport) -> str:
    return "p" if report.correction == "none" else f"{report.correction}-adjusted p"


def verdict_finding(report: DiffReport, escape: Callable[[str], str] = md_text) -> str:
    """What moved significantly, both sides named: "hybrid is significantly better on
    MRR than bm25 (holm-adjusted p < 0.05)"; names pass through `escape`."""
    base, head = (escape(label) for label in side_labels(report))
    metrics = report.overall.metrics
    moved = [item for item in metrics if significant(report, item)]
    better = [escape(item.metric.label) for item in moved if not item.moved_worse]
    worse = [escape(item.metric.label) for item in moved if item.moved_worse]
    alpha = number_text(report.alpha)
    if better or worse:
        parts = []
        if better:
            parts.append(f"significantly better on {_join(better)}")
        if worse:
            parts.append(f"significantly worse on {_join(worse)}")
        return (
            f"{head} is {' and '.join(parts)} than {base} "
            f"({_adjusted(report)} < {alpha}{mean_note(report)})"
        )
    compared = _plural(len(metrics), "metric")
    return (
        f"no significant change from {base} to {head} on {compared} "
        f"({_adjusted(report)} ≥ {alpha}{mean_note(report)})"
    )


def comment_verdict(report: DiffReport) -> str:
    """The first line: the gate, then what moved significantly, both sides named."""
    if not report.gate_active:
        gate = "➖ **No gate set**"
    elif report.gate_passed:
        gate = "✅ **Gate passed**"
    else:
        gate = f"❌ **Gate failed** ({_plural(len(report.gate_reasons), 'reason')})"
    scope = "" if report.gate_scope is None else f" ({md_text(report.gate_scope)})"
    return f"{gate}{scope}: {verdict_finding(report)}."


def _value3(value: float | None, metric: Metric | None = None) -> str:
    if value is None:
        return "n/a"
    return in_unit(metric, value) if metric is not None else format3(value)


def in_unit(metric: Metric, value: float, *, signed: bool = False) -> str:
    """A value as the comment shows it: a token count (`first-hit-tokens`) in whole
    tokens with thousands separators, any other metric in three decimals."""
    if metric.unit != "tokens":
        return format3_signed(value) if signed else format3(value)
    return token_text(value, signed=signed)


def _mark(report: DiffReport, item: MetricDiff) -> str:
    if not significant(report, item):
        return ""
    return " 🔴" if item.moved_worse else " 🟢"


def _aggregate_table(report: DiffReport, group: DiffGroup) -> list[str]:
    lines = [
        f"| metric | base | head | {_delta_heading(report)} | 95% CI | {_adjusted(report)} "
        "| wins / ties / losses |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for item in group.metrics:
        label = md_text(item.metric.label)
        delta = in_unit(item.metric, item.result.mean_delta, signed=True)
        p = _p3(item.p_adjusted)
        if significant(report, item):
            label, delta, p = f"**{label}**", f"**{delta}**", f"**{p}**"
        ci = item.result.ci95
        interval = (
            "n/a"
            if ci is None
            else f"[{in_unit(item.metric, ci[0], signed=True)}, "
            f"{in_unit(item.metric, ci[1], signed=True)}]"
        )
        base = _value3(side_mean(report, item, "base"), item.metric)
        head = _value3(side_mean(report, item, "head"), item.metric)
        lines.append(
            f"| {label}{_mark(report, item)} | {base} | {head} | {delta} | {interval} | {p} "
            f"| {item.wins} / {item.ties} / {item.losses} |"
        )
    return lines


def _scalar(value: Any) -> str:
    if value is None:
        return "–"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def differences(report: DiffReport) -> list[tuple[str, str, str]]:
    """What differs between the sides: (what, base, head) rows, in a fixed order.

    The backend, embedder and corpus, then each configuration parameter (a configured
    backend's `config` object; absent means the backend's default), then each
    provenance field when both reports carry provenance.
    """
    base, head = report.base, report.head
    rows: list[tuple[str, str, str]] = []
    for what, a, b in (
        ("backend", base.backend, head.backend),
        ("embedder", base.embedder, head.embedder),
        ("corpus", base.corpus, head.corpus),
    ):
        if a != b:
            rows.append((what, _scalar(a), _scalar(b)))
    a_config, b_config = base.config or {}, head.config or {}
    for key in sorted(set(a_config) | set(b_config)):
        a_value, b_value = a_config.get(key), b_config.get(key)
        if a_value != b_value:
            shown_a = "(default)" if key not in a_config else _scalar(a_value)
            shown_b = "(default)" if key not in b_config else _scalar(b_value)
            rows.append((f"config {key}", shown_a, shown_b))
    if base.provenance is not None and head.provenance is not None:
        for key in sorted(set(base.provenance) | set(head.provenance)):
            a_value, b_value = base.provenance.get(key), head.provenance.get(key)
            if a_value != b_value:
                rows.append((f"provenance {key}", _scalar(a_value), _scalar(b_value)))
    return rows


def _provenance_warning(report: DiffReport) -> str | None:
    base, head = report.base.provenance, report.head.provenance
    if base is None and head is None:
        return None
    if base is None or head is None:
        only = "base" if base is not None else "head"
        return f"⚠️ Only the {only} report carries provenance; the runs cannot be checked alike."
    if any(key.startswith("provenance ") for key, _, _ in differences(report)):
        return "⚠️ The reports' provenance differs (below): check that the runs are comparable."
    return None


def _differences_block(report: DiffReport) -> list[str]:
    rows = differences(report)
    warning = _provenance_warning(report)
    if not rows and warning is None:
        return []
    lines: list[str] = []
    if warning is not None:
        lines += [warning, ""]
    if rows:
        lines += ["**What differs between the sides**", "", "| | base | head |", "|---|---|---|"]
        lines += [f"| {md_text(what)} | {md_text(a)} | {md_text(b)} |" for what, a, b in rows]
        lines.append("")
    return lines


def _moves(change: ChangedQuery) -> str:
    """ "MRR 1.000 → 0.500 · recall 0.500 → 1.000": the metrics that moved only."""
    parts = []
    for cell in change.cells:
        if cell is None or cell[3] == 0.0:
            continue
        item, base, head, _ = cell
        shown = f"{in_unit(item.metric, base)} → {in_unit(item.metric, head)}"
        parts.append(f"{md_text(item.metric.label)} {shown}")
    return " · ".join(parts)


def _cut(text: str, width: int) -> str:
    """`text` on one line, cut to `width` characters (the last an ellipsis), as markdown."""
    flat = one_line(text)
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return md_text(flat)


def _id_text(case_id: str) -> str:
    return _cut(case_id, ID_WIDTH)


def _query_cell(report: DiffReport, case_id: str) -> str:
    text = report.queries.get(case_id)
    if text is None:
        return "–"
    return _cut(text, QUERY_WIDTH)


def _query_rows(report: DiffReport, changes: Sequence[ChangedQuery]) -> list[str]:
    if not report.queries:  # no query text known: the id column alone
        return [f"| {_id_text(change.id)} | {_moves(change)} |" for change in changes]
    return [
        f"| {_query_cell(report, change.id)} | {_id_text(change.id)} | {_moves(change)} |"
        for change in changes
    ]


def _details(summary: str, body: Sequence[str]) -> list[str]:
    """A collapsed block; the blank lines let GitHub render the markdown inside."""
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _changed_blocks(
    report: DiffReport,
    worse: Sequence[ChangedQuery],
    better: Sequence[ChangedQuery],
    other: Sequence[ChangedQuery],
    keep: int,
) -> list[str]:
    """The collapsed per-query blocks, with at most `keep` rows in all (worse first)."""
    lines: list[str] = []
    left_out = 0
    header = (
        ["| query | id | base → head |", "|---|---|---|"]
        if report.queries
        else ["| id | base → head |", "|---|---|"]
    )
    primary = primary_metric(report)
    on = "" if primary is None else f" on {_html_text(primary.metric.label)}"
    for title, changes in (
        (f"got worse{on}, worst first", worse),
        (f"got better{on}, best first", better),
        ("moved on other metrics only", other),
    ):
        if not changes:
            continue
        shown = list(changes[:keep])
        keep -= len(shown)
        left_out += len(changes) - len(shown)
        body = [*header, *_query_rows(report, shown)] if shown else []
        if len(shown) < len(changes):
            body += [
                "",
                f"_{_plural(len(changes) - len(shown), 'more query', 'more queries')} "
                "left out to fit a GitHub comment._",
            ]
        lines += _details(f"{_plural(len(changes), 'query', 'queries')} {title}", body)
    if left_out:
        lines += [
            f"_{_plural(left_out, 'query row was', 'query rows were')} left out to stay under "
            f"{COMMENT_LIMIT:,} characters; every query is in the JSON report "
            "(`cce diff --format json`) and the HTML report (`cce diff --format html`)._",
            "",
        ]
    return lines


def _delta3(delta: float | None) -> str:
    return "n/a" if delta is None else format3_signed(delta)


def _member_cells(row: MemberRow) -> str:
    delta = _delta3(row.delta)
    return (
        f"{row.queries} | {_value3(row.base)} | {_value3(row.head)} | {delta} "
        f"| {row.wins} / {row.ties} / {row.losses}"
    )


def _members_block(report: DiffReport, keep: int) -> list[str]:
    """For a suite: the primary metric per member (at most `keep` member rows) with the
    macro and micro rows, then, collapsed, every metric's delta per member."""
    item = primary_metric(report)
    if report.members is None or item is None:
        return []
    rows = member_rows(report, item)
    label = md_text(item.metric.label)
    lines = [
        f"**Per member: {label}** (macro weighs members alike and its wins / ties / losses "
        "count members; micro weighs queries alike)",
        "",
        "| member | queries | base | head | delta | wins / ties / losses |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {_id_text(row.label)} | {_member_cells(row)} |" for row in rows[:keep]]
    lines += [f"| **{row.label}** | {_member_cells(row)} |" for row in aggregate_rows(report, item)]
    if keep < len(rows):
        lines += [
            "",
            f"_{_plural(len(rows) - keep, 'member row was', 'member rows were')} left out to "
            f"stay under {COMMENT_LIMIT:,} characters; every member is in the JSON report._",
        ]
    lines.append("")
    metrics = report.overall.metrics
    if len(metrics) < 2 or keep == 0:
        return lines
    columns = [member_rows(report, other) for other in metrics]
    body = [
        "Mean delta per member (head − base) on every compared metric.",
        "",
        "| member | " + " | ".join(md_text(m.metric.label) for m in metrics) + " |",
        "|---|" + "---:|" * len(metrics),
    ]
    for position, row in enumerate(rows[:keep]):
        cells = " | ".join(_delta3(column[position].delta) for column in columns)
        body.append(f"| {_id_text(row.label)} | {cells} |")
    return lines + _details(f"Per member, every metric ({_plural(len(rows), 'member')})", body)


def _tag_cell(report: DiffReport, item: MetricDiff | None) -> str:
    if item is None:
        return "–"
    delta = format3_signed(item.result.mean_delta)
    if significant(report, item):
        delta = f"**{delta}**{_mark(report, item)}"
    return f"{delta} (p {_p3(item.p_adjusted)})"


def _tags_block(report: DiffReport) -> list[str]:
    if not report.tags:
        return []
    metrics = report.overall.metrics
    body = [
        "Mean delta per tag (head − base), with the "
        f"{_adjusted(report)} of the tests {_tag_family_text(report)}.",
        "",
        "| tag | queries | " + " | ".join(md_text(m.metric.label) for m in metrics) + " |",
        "|---|---:|" + "---:|" * len(metrics),
    ]
    for group in report.tags:
        cells = " | ".join(_tag_cell(report, group.metric(m.metric.key)) for m in metrics)
        body.append(f"| {md_text(group.tag or '')} | {len(group.case_ids)} | {cells} |")
    return _details(f"Per tag ({_plural(len(report.tags), 'tag')})", body)


def _tag_family_text(report: DiffReport) -> str:
    """Over what the per-tag p's were adjusted (`--tag-correction`)."""
    if report.tag_scope == "family" and report.tags is not None:
        return f"over every tag × metric ({_plural(family_size(report.tags), 'test')})"
    return "within the tag"


def _delta_heading(report: DiffReport) -> str:
    """The aggregate table's delta column: "delta", or a suite's "macro delta"."""
    mean = tested_mean(report)
    return "delta" if mean is None else f"{mean} delta"


def _stats_block(report: DiffReport) -> list[str]:
    test = paired_test(report.test)
    family = len(report.overall.metrics)
    correction = (
        "no correction"
        if report.correction == "none"
        else f"{report.correction}-adjusted over {_plural(family, 'metric')}"
    )
    body = [
        f"{md_text(test.label)} {md_text(tested_on(report))} (two-sided), {correction}, "
        f"alpha {number_text(report.alpha)}.",
        "",
        f"| metric | n | {mean_heading(report)} | {md_text(test.statistic_name)} | p "
        f"| {_adjusted(report)} "
        "| d_z |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for item in report.overall.metrics:
        statistic = item.result.statistic
        effect = item.effect_size
        body.append(
            f"| {md_text(item.metric.label)} | {item.n} | {format3_signed(item.result.mean_delta)} "
            f"| {'n/a' if statistic is None else format3_signed(statistic)} "
            f"| {_p3(item.result.p)} | {_p3(item.p_adjusted)} "
            f"| {'n/a' if effect is None else format3_signed(effect)} |"
        )
    return _details("Test details", body)


def _listed(items: Sequence[str], describe: Callable[[str], str] = _id_text) -> str:
    shown = ", ".join(describe(item) for item in items[:LISTED_IDS])
    if len(items) > LISTED_IDS:
        shown += f" and {len(items) - LISTED_IDS} more"
    return shown


def _unpaired_block(report: DiffReport) -> list[str]:
    count = len(report.unpaired_base) + len(report.unpaired_head)
    if not count:
        return []
    parts = []
    if report.unpaired_base:
        parts.append(f"base only: {_listed(report.unpaired_base)}")
    if report.unpaired_head:
        parts.append(f"head only: {_listed(report.unpaired_head)}")
    verb = "is" if count == 1 else "are"
    return [
        f"⚠️ {_plural(count, 'query', 'queries')} {verb} in only one report and left out of "
        f"the tests ({'; '.join(parts)}).",
        "",
    ]


def _gate_block(report: DiffReport) -> list[str]:
    reasons = report.gate_reasons
    if not reasons:
        return []
    lines = ["**Why the gate failed**", ""]
    lines += [f"- {_cut(reason, REASON_WIDTH)}" for reason in reasons[:LISTED_IDS]]
    if len(reasons) > LISTED_IDS:
        lines.append(f"- and {len(reasons) - LISTED_IDS} more (each is a `gate failed:` line)")
    return [*lines, ""]


def _title(report: DiffReport) -> str:
    base, head = side_labels(report)
    return f"### cce diff: {md_text(base)} → {md_text(head)}"


def _counts(report: DiffReport, worse: int, better: int, other: int) -> str:
    paired = len(report.overall.case_ids)
    unchanged = paired - worse - better
    elsewhere = f" ({other} of them moved on other metrics)" if other else ""
    primary = primary_metric(report)
    on = "" if primary is None else f" on {md_text(primary.metric.label)}"
    return (
        f"{_plural(paired, 'paired query', 'paired queries')}{on}: {worse} worse, "
        f"{better} better, {unchanged} unchanged{elsewhere}. Base {md_text(report.base.backend)} "
        f"({md_text(report.base.path)}), head {md_text(report.head.backend)} "
        f"({md_text(report.head.path)})."
    )


def _means_text(report: DiffReport) -> str:
    """What the base, head and delta columns average, in the legend's words."""
    if report.mean == "micro" and report.unit == "query":
        return "means over every paired query of the suite (micro)"
    if report.mean is not None:
        return "macro means (the mean of the members' means over their paired queries)"
    return "means over the paired queries"


def _legend(report: DiffReport) -> str:
    return (
        f"🟢 significantly better, 🔴 significantly worse ({_adjusted(report)} < "
        f"{number_text(report.alpha)}). Base and head are {_means_text(report)}; "
        "wins / ties / losses count the queries where the head is better / equal / worse."
    )


def _primary_delta(change: ChangedQuery, position: int) -> float:
    """The query's delta on the primary metric, oriented so that negative is worse."""
    cell = change.cells[position]
    if cell is None:
        return 0.0
    return cell[0].metric.oriented(cell[3])


def _split(
    report: DiffReport, changes: Sequence[ChangedQuery]
) -> tuple[list[ChangedQuery], list[ChangedQuery], list[ChangedQuery]]:
    """Queries worse on the primary metric (worst first), better on it (best first), and
    those that moved on other metrics only (in `changed_queries` order); ties keep the
    order `changed_queries` gives."""
    primary = primary_metric(report)
    if primary is None:
        return [], [], list(changes)
    position = report.overall.metrics.index(primary)
    worse = sorted(
        (change for change in changes if _primary_delta(change, position) < 0.0),
        key=lambda change: _primary_delta(change, position),
    )
    better = sorted(
        (change for change in changes if _primary_delta(change, position) > 0.0),
        key=lambda change: -_primary_delta(change, position),
    )
    other = [change for change in changes if _primary_delta(change, position) == 0.0]
    return worse, better, other


def render_comment(report: DiffReport, limit: int = COMMENT_LIMIT) -> str:
    """The whole comment; per-query rows are cut (worst kept) until it fits `limit`, then,
    for a suite too large even so, member rows (the macro and micro rows stay)."""
    worse, better, other = _split(report, changed_queries(report.overall))
    members = len(report.members or ())
    # Only the member rows and the changed queries depend on what is kept: the other
    # blocks are rendered once, not again for every length the search below tries.
    opening = [
        comment_verdict(report),
        "",
        _title(report),
        "",
        _counts(report, len(worse), len(better), len(other)),
        "",
        *_aggregate_table(report, report.overall),
        "",
        _legend(report),
        "",
    ]
    middle = [*_gate_block(report), *_unpaired_block(report), *_differences_block(report)]
    closing = [*_tags_block(report), *_stats_block(report)]
    all_members = _members_block(report, members)

    def document(keep: int, keep_members: int = members) -> str:
        lines = [
            *opening,
            *(all_members if keep_members == members else _members_block(report, keep_members)),
            *middle,
            *_changed_blocks(report, worse, better, other, keep),
            *closing,
        ]
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines) + "\n"

    total = len(worse) + len(better) + len(other)
    text = document(total)
    if len(text) <= limit:
        return text
    if len(document(0)) > limit:
        kept = _largest_fitting(members, lambda count: len(document(0, count)) <= limit)
        return document(0, kept)
    return document(_largest_fitting(total, lambda count: len(document(count)) <= limit))


def _largest_fitting(total: int, fits: Callable[[int], bool]) -> int:
    """The largest count in 0..total that `fits` (0 when none does): a binary search, as
    the comment's length grows with the rows kept."""
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low
