"""Per-member rows of a suite comparison: each member's base, head, delta and W/T/L.

Why it exists: a reviewer of a suite change asks "does one repository carry this?". The
pull-request comment, the HTML page and the text rendering answer with the same rows,
computed here once from a `DiffReport` over a suite (case ids `member/case-id`): per
member, the means of the member's paired queries on each side, their difference and
the queries won, tied and lost; then the `macro` row (the mean of the members' means;
its W/T/L counts members) and the `micro` row (the mean over every paired query; its
W/T/L counts queries). The primary metric - the one headline counts, row colours and
"worst first" orders use - is chosen here too (docs/gating.md#the-primary-metric).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_cli.compare.pairing import DiffReport, MetricDiff, QueryDelta
from cce_stats import wins_ties_losses

__all__ = ["MemberRow", "aggregate_rows", "member_rows", "primary_metric", "rows_by_member"]


@attrs.frozen(slots=True)
class MemberRow:
    """One row of the per-member table on one metric; `base`/`head`/`delta` are None
    when the member has no paired query on that metric."""

    label: str
    queries: int
    base: float | None
    head: float | None
    delta: float | None
    wins: int
    ties: int
    losses: int

    @property
    def record(self) -> str:
        return f"{self.wins}/{self.ties}/{self.losses}"


def primary_metric(report: DiffReport) -> MetricDiff | None:
    """The metric the headline, colours and order use: the first of the report's gating
    metrics (keys or labels) the comparison carries, else its first."""
    for wanted in report.gate_metrics:
        for item in report.overall.metrics:
            if wanted.casefold() in (item.metric.key.casefold(), item.metric.label.casefold()):
                return item
    return report.overall.metrics[0] if report.overall.metrics else None


def _mean(item: MetricDiff, values: Sequence[float]) -> float | None:
    """The metric's own aggregate of `values`; None over no value."""
    return item.metric.average(values) if values else None


def rows_by_member(item: MetricDiff, members: Sequence[str]) -> dict[str, list[QueryDelta]]:
    """`item`'s rows under every member whose `name/` prefixes the row's id, in row
    order: the text before each of the id's slashes is looked up, rather than every id
    tried against every member."""
    grouped: dict[str, list[QueryDelta]] = {name: [] for name in members}
    for row in item.rows:
        end = row.id.find("/")
        while end >= 0:
            found = grouped.get(row.id[:end])
            if found is not None:
                found.append(row)
            end = row.id.find("/", end + 1)
    return grouped


def member_rows(report: DiffReport, item: MetricDiff) -> list[MemberRow]:
    """One row per suite member, in member order (none when the report is no suite)."""
    rows: list[MemberRow] = []
    grouped = rows_by_member(item, report.members or ())
    for member in report.members or ():
        mine = grouped[member]
        wins, ties, losses = wins_ties_losses([item.metric.oriented(row.delta) for row in mine])
        base = _mean(item, [row.base for row in mine])
        head = _mean(item, [row.head for row in mine])
        delta = None if base is None or head is None else head - base
        rows.append(MemberRow(member, len(mine), base, head, delta, wins, ties, losses))
    return rows


def aggregate_rows(report: DiffReport, item: MetricDiff) -> list[MemberRow]:
    """The `macro` row (members weigh alike; W/T/L counts members) and the `micro` row
    (queries weigh alike; W/T/L counts queries)."""
    scored = [row for row in member_rows(report, item) if row.base is not None]
    rows: list[MemberRow] = []
    if scored:
        bases = [row.base for row in scored if row.base is not None]
        heads = [row.head for row in scored if row.head is not None]
        macro_base, macro_head = sum(bases) / len(bases), sum(heads) / len(heads)
        deltas = [item.metric.oriented(row.delta) for row in scored if row.delta is not None]
        wins, ties, losses = wins_ties_losses(deltas)
        queries = sum(row.queries for row in scored)
        macro_delta = macro_head - macro_base
        rows.append(
            MemberRow("macro", queries, macro_base, macro_head, macro_delta, wins, ties, losses)
        )
    base = _mean(item, [row.base for row in item.rows])
    head = _mean(item, [row.head for row in item.rows])
    if base is not None and head is not None:
        delta = head - base
        rows.append(
            MemberRow("micro", item.n, base, head, delta, item.wins, item.ties, item.losses)
        )
    return rows
