"""Which mean a suite comparison tests, and testing it: macro, micro or member-level.

Why it exists: a suite's headline and its `--min` floors use the **macro** mean (the
mean of the members' mean deltas), while pooling every query tests the **micro**
mean, another number: with members of 300, 10 and 10 queries the pooled test can call
a change better that the table shows worse. This module owns the choice and the tests
behind it (docs/statistics.md#query-level-versus-member-level-inference):

- `macro` (the default): each query weighted 1 / (members × its member's queries),
  through `cce_stats.macro_paired_test` (a weighted t with its interval, or a weighted
  sign-flip randomization); the effect size is the macro mean's (`macro_effect_size`);
- `micro`: every query pooled, the ordinary paired test (what the comparison did
  before the choice existed);
- unit `member`: the members' mean deltas are the unit (`member_level_test`), the
  evidence for a claim about repositories outside the suite.

It re-tests a `DiffReport` whose rows carry `member/case-id` ids; the adjusted p's are
recomputed over the same family (the metrics of each group) from the decision p's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Sequence
from typing import Final

import attrs

from cce_cli.compare.pairing import DiffGroup, DiffReport, MetricDiff, QueryDelta
from cce_cli.errors import CliError
from cce_stats import (
    MACRO_TESTS,
    PairedTestResult,
    adjust_p_values,
    effect_size_dz,
    macro_effect_size,
    macro_paired_test,
    member_level_test,
    member_means,
)

__all__ = [
    "SUITE_MEANS",
    "SUITE_UNITS",
    "check_suite_inference",
    "deltas_by_member",
    "resolve_suite_mean",
    "retest_suite",
    "tested_mean",
]

SUITE_MEANS: Final = ("macro", "micro")
"""`--mean`: the mean of the members' means (default), or the mean over every query."""
SUITE_UNITS: Final = ("query", "member")
"""`--unit`: queries (default) or the members' mean deltas as the unit of the test."""


def resolve_suite_mean(mean: str | None, min_aggregate: str | None) -> str:
    """The one mean a suite comparison names: `--mean`, else `--min-aggregate` (floors
    and test then agree), else macro. Both given and different: a usage error (exit 2)."""
    if mean is not None and min_aggregate is not None and mean != min_aggregate:
        raise CliError(
            f"--mean {mean} and --min-aggregate {min_aggregate} name different means; the "
            "headline, the test, its interval and the floors use one mean, so pass one of them",
            exit_code=2,
        )
    return mean or min_aggregate or "macro"


def check_suite_inference(mean: str, unit: str, test: str) -> None:
    """Refuse (exit 2) a combination with no test: a macro mean tested query by query
    needs a weighted form of the test (t, randomization); member-level inference
    tests the members' means, whose mean is the macro mean."""
    if unit == "member":
        if mean != "macro":
            raise CliError(
                "--unit member tests the members' mean deltas, whose mean is the macro "
                f"mean; drop --mean {mean} (or test every query pooled with --unit query)",
                exit_code=2,
            )
        return
    if mean == "macro" and test not in MACRO_TESTS:
        raise CliError(
            f"--test {test} has no macro-weighted form for a suite's macro mean; use "
            f"--test {' or --test '.join(MACRO_TESTS)}, --unit member (the test over the "
            "members' mean deltas) or --mean micro (every query pooled)",
            exit_code=2,
        )


def _member_of(case_id: str, members: Container[str]) -> str | None:
    """The member whose `name/` prefixes `case_id` (the longest, should names nest).

    Only the text before one of the id's slashes can be such a name, so those are
    looked up, longest first, rather than every member tried against every id."""
    end = case_id.rfind("/")
    while end >= 0:
        if case_id[:end] in members:
            return case_id[:end]
        end = case_id.rfind("/", 0, end)
    return None


def _by_member(
    item: MetricDiff, members: Sequence[str], value_of: Callable[[QueryDelta], float]
) -> dict[str, list[float]]:
    """`value_of` each of `item`'s rows, grouped by member in member order (a member
    without a paired query on it has an empty list)."""
    grouped: dict[str, list[float]] = {name: [] for name in members}
    for row in item.rows:
        owner = _member_of(row.id, grouped)
        if owner is not None:
            grouped[owner].append(value_of(row))
    return grouped


def _delta(row: QueryDelta) -> float:
    return row.delta


def deltas_by_member(item: MetricDiff, members: Sequence[str]) -> list[list[float]]:
    """`item`'s per-query deltas grouped by member, in member order; members without a
    paired query on it are left out (they have no mean)."""
    return [deltas for deltas in _by_member(item, members, _delta).values() if deltas]


def _retested(
    item: MetricDiff, members: Sequence[str], unit: str, test: str
) -> tuple[PairedTestResult, float | None]:
    grouped = deltas_by_member(item, members)
    if not grouped:
        return item.result, item.effect_size
    if unit == "member":
        return member_level_test(grouped, test), effect_size_dz(member_means(grouped))
    return macro_paired_test(grouped, test), macro_effect_size(grouped)


def _retest_group(
    group: DiffGroup, members: Sequence[str], unit: str, test: str, correction: str
) -> DiffGroup:
    tested = [(item, *_retested(item, members, unit, test)) for item in group.metrics]
    adjusted = adjust_p_values([result.decision_p for _, result, _ in tested], correction)
    return attrs.evolve(
        group,
        metrics=tuple(
            attrs.evolve(item, result=result, effect_size=effect, p_adjusted=p_adjusted)
            for (item, result, effect), p_adjusted in zip(tested, adjusted, strict=True)
        ),
    )


def retest_suite(report: DiffReport, mean: str, unit: str = "query") -> DiffReport:
    """`report` (a suite's, `members` set) with every metric tested on `mean` and
    `unit`; micro over queries keeps the pooled tests as they are. The report then
    names its mean and unit for the renderings."""
    members = report.members
    if members is None:
        return report
    check_suite_inference(mean, unit, report.test)
    if mean == "micro" and unit == "query":
        return attrs.evolve(report, mean=mean, unit=unit)
    overall = _retest_group(report.overall, members, unit, report.test, report.correction)
    tags = None
    if report.tags is not None:
        tags = tuple(
            _retest_group(group, members, unit, report.test, report.correction)
            for group in report.tags
        )
    return attrs.evolve(report, overall=overall, tags=tags, mean=mean, unit=unit)


# --- how the renderings name the tested mean -------------------------------------------


def tested_on(report: DiffReport) -> str:
    """What the paired test ran on, as the headings say it ("on the per-query deltas"
    for a comparison that is not a suite's)."""
    if report.mean is None:
        return "on the per-query deltas"
    if report.unit == "member":
        return (
            "on the members' mean deltas (members as the unit: evidence about members "
            "outside the suite)"
        )
    if report.mean == "macro":
        return (
            "of the macro mean, each member counting once (a query weighs 1 / (members × "
            "its member's queries))"
        )
    return "on the per-query deltas pooled over every member (the micro mean)"


def mean_note(report: DiffReport) -> str:
    """ ", macro mean" (or micro, or member means) for a verdict's parenthesis; "" when
    the comparison is not a suite's."""
    if report.mean is None:
        return ""
    if report.unit == "member":
        return ", member means as the unit"
    return f", {report.mean} mean"


def tested_mean(report: DiffReport) -> str | None:
    """The mean the deltas average, as headings name it: "macro" or "micro" (member
    means as the unit average to the macro mean); None when not a suite's."""
    if report.mean is None:
        return None
    return report.mean if report.unit == "query" else "macro"


def mean_heading(report: DiffReport) -> str:
    """The heading of the mean-delta column: "mean delta", or "macro mean delta"."""
    mean = tested_mean(report)
    return "mean delta" if mean is None else f"{mean} mean delta"


def side_mean(report: DiffReport, item: MetricDiff, side: str) -> float | None:
    """A side's ("base" or "head") mean of `item` over the paired queries, the same mean
    the delta is (macro: the mean of the members' means), so head − base is the delta."""
    members = report.members

    def values_of(row: QueryDelta) -> float:
        return row.base if side == "base" else row.head

    if members is None or (report.mean == "micro" and report.unit == "query"):
        values = [values_of(row) for row in item.rows]
        return item.metric.average(values) if values else None
    grouped = _by_member(item, members, values_of)
    averaged = [item.metric.average(values) for values in grouped.values() if values]
    means = [mean for mean in averaged if mean is not None]
    return math.fsum(means) / len(means) if means else None
