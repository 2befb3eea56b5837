"""Which paired queries moved between two sides of a diff, worst first.

Why it exists: the text and JSON diff (`cce_cli.render.diff`), the pull-request comment
(`cce_cli.render.comment`) and the HTML page all list the changed queries in one order;
that order lives here, below all three, so none of them imports another for it.
"""

from __future__ import annotations

import attrs

from cce_cli.compare.pairing import DiffGroup, MetricDiff

__all__ = ["ChangedQuery", "changed_queries"]


@attrs.frozen(slots=True)
class ChangedQuery:
    """A paired query that moved on at least one metric, with its row per metric."""

    id: str
    cells: tuple[tuple[MetricDiff, float, float, float] | None, ...]


def changed_queries(group: DiffGroup) -> list[ChangedQuery]:
    """Queries with a non-zero delta on some metric, worst first.

    Worst is the most negative change on any metric, oriented so that negative means
    worse; ties go to the larger total loss, then to the base report's case order. A
    metric without bounds (a token count) is on another scale than the fractions, so it
    only orders queries the bounded metrics leave tied.
    """
    keyed: list[tuple[float, float, float, int, ChangedQuery]] = []
    by_metric = [{row.id: row for row in item.rows} for item in group.metrics]
    for position, case_id in enumerate(group.case_ids):
        cells: list[tuple[MetricDiff, float, float, float] | None] = []
        oriented: list[float] = []
        unbounded: list[float] = []
        for item, rows in zip(group.metrics, by_metric, strict=True):
            row = rows.get(case_id)
            if row is None:
                cells.append(None)
                continue
            cells.append((item, row.base, row.head, row.delta))
            delta = item.metric.oriented(row.delta)
            (oriented if item.metric.bounds is not None else unbounded).append(delta)
        if any(delta != 0.0 for delta in (*oriented, *unbounded)):
            change = ChangedQuery(case_id, tuple(cells))
            worst = min(oriented, default=0.0)
            keyed.append((worst, sum(oriented), min(unbounded, default=0.0), position, change))
    keyed.sort(key=lambda entry: entry[:4])
    return [entry[4] for entry in keyed]
