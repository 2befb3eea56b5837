"""Several systems against one baseline in one table, corrected across all the tests.

Why it exists: `cce diff BASE HEAD` answers "did this change help?"; a team choosing
between several candidates (ranx users compare many systems in one table) needs each
candidate against the same baseline, over the same queries, with markers a reader can
trust. Every candidate × metric is a paired test on the per-query deltas against the
baseline, and the multiple-comparison correction runs over all of them at once (the
family is systems × metrics), so adding candidates cannot make a marker cheaper to
earn. Queries are paired by id across every report; a query missing from one report is
left out of all tests and counted (docs/gating.md#several-systems).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_cli.compare.pairing import finite_or_none
from cce_cli.compare.saved_report import SavedBackend, SavedReport
from cce_cli.errors import CliError
from cce_metrics import METRICS, Metric
from cce_stats import adjust_p_values, paired_test

__all__ = ["ManyComparison", "SystemCell", "SystemRow", "compare_many"]


@attrs.frozen(slots=True)
class SystemCell:
    """One system on one metric: its mean over the paired queries and, for a candidate,
    the mean delta to the baseline, the raw and adjusted p of the paired test."""

    metric: Metric
    mean: float
    delta: float | None = None
    p: float | None = None
    p_adjusted: float | None = None

    def marker(self, alpha: float) -> str:
        """`▲` significantly better than the baseline, `▼` significantly worse, else ""."""
        if self.p_adjusted is None or self.p_adjusted >= alpha or not self.delta:
            return ""
        return "▲" if self.metric.oriented(self.delta) > 0 else "▼"


@attrs.frozen(slots=True)
class SystemRow:
    """One system (its backend and report file) with a cell per compared metric."""

    backend: str
    path: str
    cells: tuple[SystemCell, ...]


@attrs.frozen(slots=True)
class ManyComparison:
    """The baseline (first row) and every candidate, over the queries all reports share."""

    rows: tuple[SystemRow, ...]
    metrics: tuple[Metric, ...]
    paired: int
    left_out: int
    test: str
    correction: str
    alpha: float

    @property
    def tests(self) -> int:
        """The size of the corrected family: candidates × metrics."""
        return (len(self.rows) - 1) * len(self.metrics)


def compare_many(
    sides: Sequence[tuple[SavedReport, SavedBackend]],
    *,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
) -> ManyComparison:
    """The first side is the baseline; each other side is tested against it."""
    if len(sides) < 2:
        raise CliError("comparing systems needs a baseline and at least one more", exit_code=2)
    by_id = [{case.id: case.values for case in backend.cases} for _, backend in sides]
    baseline_ids = [case.id for case in sides[0][1].cases]
    shared = [case_id for case_id in baseline_ids if all(case_id in rows for rows in by_id)]
    every = set().union(*(set(rows) for rows in by_id))
    if not shared:
        raise CliError("no case id is in every report: compare reports of the same fixture set")
    metrics = tuple(
        item
        for item in METRICS
        if all(item.key in rows[case_id] for rows in by_id for case_id in shared)
    )
    runner = paired_test(test)
    means: list[list[float]] = []
    tested: list[list[tuple[float, float | None, float | None]]] = []
    for rows in by_id:
        means.append(
            [
                item.average([rows[case_id][item.key] for case_id in shared]) or 0.0
                for item in metrics
            ]
        )
    for rows in by_id[1:]:
        found = []
        for item in metrics:
            deltas = [rows[c][item.key] - by_id[0][c][item.key] for c in shared]
            result = runner.run(deltas)
            found.append(
                (result.mean_delta, finite_or_none(result.p), finite_or_none(result.decision_p))
            )
        tested.append(found)
    # The decision p is what is corrected (constant deltas decide at the sign-flip p,
    # docs/statistics.md#constant-deltas); the printed p stays the test's own.
    flat = [decision for found in tested for _, _, decision in found]
    adjusted = adjust_p_values(flat, correction)
    system_rows = [
        SystemRow(
            sides[0][1].name,
            sides[0][0].path,
            tuple(SystemCell(item, mean) for item, mean in zip(metrics, means[0], strict=True)),
        )
    ]
    position = 0
    for index, found in enumerate(tested, start=1):
        cells = []
        for item, mean, (delta, p, _) in zip(metrics, means[index], found, strict=True):
            cells.append(SystemCell(item, mean, delta, p, adjusted[position]))
            position += 1
        system_rows.append(SystemRow(sides[index][1].name, sides[index][0].path, tuple(cells)))
    return ManyComparison(
        tuple(system_rows),
        metrics,
        len(shared),
        len(every) - len(shared),
        test,
        correction,
        alpha,
    )
