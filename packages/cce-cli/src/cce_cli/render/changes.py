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
    worse; ties go to the larger total loss, then to the base report's case order.
    """
    keyed: list[tuple[float, float, int, ChangedQuery]] = []
    by_metric = [{row.id: row for row in item.rows} for item in group.metrics]
    for position, case_id in enumerate(group.case_ids):
        cells: list[tuple[MetricDiff, float, float, float] | None] = []
        oriented: list[float] = []
        for item, rows in zip(group.metrics, by_metric, strict=True):
            row = rows.get(case_id)
            if row is None:
                cells.append(None)
                continue
            cells.append((item, row.base, row.head, row.delta))
            oriented.append(row.delta if item.metric.higher_is_better else -row.delta)
        if any(delta != 0.0 for delta in oriented):
            change = ChangedQuery(case_id, tuple(cells))
            keyed.append((min(oriented), sum(oriented), position, change))
    keyed.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in keyed]
