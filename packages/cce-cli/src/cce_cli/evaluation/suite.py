"""A suite's members scored, and their aggregates over repositories.

Why it exists: a suite report and a suite comparison are built from every member's
result, whichever process or Dask worker scored it (`cce_cli.runs.suite` runs them).
This module owns that result as plain values (a member's JSON report, its full-precision
per-query values and its cases' tags) and the aggregates over members, per backend and
metric, over all members and per group: `macro` (the mean of the members' means) and
`micro` (the mean over all queries), both from full-precision values, summed in manifest
and case order (docs/suites.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from cce_cli.evaluation.timings import MemberTimings
from cce_cli.formats.suite_evidence import MemberEvidence
from cce_metrics import COST, COST_METRICS, METRICS, Metric

MemberValues = tuple[tuple[str, tuple[tuple[str, Mapping[str, float]], ...]], ...]
"""Per backend (in report order): its name and each case's (id, values by metric key)."""


@attrs.frozen(slots=True)
class MemberResult:
    """One member scored: its `cce.relevance.report/v2` JSON text, the full-precision
    per-query values behind it, and each case's tags."""

    name: str
    report_json: str
    values: MemberValues
    tags: Mapping[str, tuple[str, ...]]
    metrics: tuple[str, ...]
    results_text: str | None = None
    """The member's `--results` lines, ids qualified, when the suite writes results."""
    evidence: MemberEvidence | None = None
    """The member's results and their stored code, qualified, for the suite's HTML page."""
    timings: MemberTimings | None = None
    """Index time and per-query latencies (reported with `--timings`)."""
    parsed_chunks: tuple[int, int] = (0, 0)
    """(chunks from a language parser, all chunks) of the member's index; none parsed
    means the member was scored on whole-file chunks only (no parser)."""

    @property
    def without_parser(self) -> bool:
        """Whether no chunk of the member's index came from a language parser."""
        return self.parsed_chunks[1] > 0 and self.parsed_chunks[0] == 0


# --- aggregates ------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Aggregate:
    """One backend's metric over a set of members: macro and micro means and the counts."""

    macro: float | None
    micro: float | None
    members: int
    queries: int


def chosen_metrics(results: Sequence[MemberResult]) -> tuple[Metric, ...]:
    """The chunk metrics every member reported, in registry order, then the cost
    metrics every member reported (docs/metrics.md#cost-metrics), in the order asked."""
    keys = set(results[0].metrics) if results else set()
    for result in results[1:]:
        keys &= set(result.metrics)
    chunk = tuple(item for item in METRICS if item.key in keys)
    return chunk + chosen_cost_metrics(results, keys)


def chosen_cost_metrics(
    results: Sequence[MemberResult], keys: set[str] | None = None
) -> tuple[Metric, ...]:
    """The cost metrics every member reported, in the order the first member lists them."""
    if keys is None:
        keys = set(results[0].metrics) if results else set()
        for result in results[1:]:
            keys &= set(result.metrics)
    ordered = results[0].metrics if results else ()
    found = (COST_METRICS.resolve(key) for key in ordered if key in keys)
    return tuple(item for item in found if item is not None and item.group == COST)


def backend_order(results: Sequence[MemberResult]) -> tuple[str, ...]:
    """The backends of the first member, in report order (every member runs the same)."""
    return tuple(name for name, _ in results[0].values) if results else ()


def aggregate(results: Sequence[MemberResult], backend: str, item: Metric) -> Aggregate:
    """`item` of `backend` over `results`: the mean over members of each member's
    aggregate (macro) and the aggregate over all their queries (micro), in manifest and
    case order."""
    member_means: list[float] = []
    every_value: list[float] = []
    for result in results:
        cases = dict(result.values).get(backend, ())
        values = [case_values[item.key] for _, case_values in cases if item.key in case_values]
        if values:
            member_means.append(item.aggregate(values))
            every_value.extend(values)
    macro = _mean(member_means) if member_means else None
    micro = item.aggregate(every_value) if every_value else None
    return Aggregate(macro, micro, len(member_means), len(every_value))


def _mean(values: Sequence[float]) -> float:
    total = 0.0
    for value in values:  # in order, as every mean of the reports is summed
        total += value
    return total / len(values)


# --- comparing and gating -----------------------------------------------------------------
