"""The pass/fail gate of a ranking change, shared by `cce diff` and `cce relevance --compare`.

Why it exists: a pull request that changes ranking should fail the way a failing test
does when it makes labeled queries worse. The gate owns the three rules and their
wording (docs/gating.md#the-gate):

- `--fail-on-significant`: a compared metric whose mean moved in the worse direction
  with an adjusted p below alpha; with `--gate-metrics`, only the named metrics are
  tested and the correction runs over them alone (`gating_tests`);
- `--fail-on-query-regression [METRICS]`: a paired query worse by more than
  `--regression-tolerance` on any compared metric, or on the metrics listed;
- `--min METRIC=VALUE`: the head's aggregate below a floor; for a metric where lower is
  better (`first-hit-tokens`) the bound is a ceiling: the aggregate above it fails.

Metrics are named by their name, key or the label the tables print (`P@k`,
`tok-IoU`). A floor or a regression list on a metric the compared reports lack is a
usage error (exit 2) that says how to add the metric, not a failed gate: the
build should not go red for a question the reports cannot answer.

It returns one reason per failure; the commands print them on stderr and exit 3.
It also refuses (exit 1) a significance gate whose p is known to be too small for
the number of paired queries: the percentile bootstrap below
`cce_stats.BOOTSTRAP_CALIBRATED_N` (docs/gating.md#which-test-can-gate).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Final

import attrs

from cce_cli.compare.pairing import DiffGroup, DiffReport, MetricDiff, finite_or_none
from cce_cli.errors import CliError
from cce_cli.output import display_text, number_text
from cce_metrics import COST_METRICS, METRICS, TOKEN_METRICS, Metric, metric
from cce_retrieval import format6, format6_signed
from cce_stats import BOOTSTRAP_CALIBRATED_N, adjust_p_values

__all__ = [
    "GATE_FAILED",
    "QUERY_REGRESSION_FLAG",
    "STEP_SUMMARY_ENV",
    "GateSpec",
    "append_step_summary",
    "check_gate_metrics",
    "evaluate_gate",
    "gate_metric",
    "gate_scope",
    "gating_tests",
    "refuse_uncalibrated_gate",
    "report_gate",
]

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

GATE_FAILED: Final = 3
"""Exit status of a command whose gate failed."""


@attrs.frozen(slots=True)
class GateSpec:
    """Which gate rules are on; `minimums` pairs a metric with its floor."""

    fail_on_significant: bool = False
    fail_on_query_regression: bool = False
    minimums: tuple[tuple[Metric, float], ...] = ()
    regression_metrics: tuple[Metric, ...] | None = None
    """The metrics `--fail-on-query-regression` watches; None = every compared one."""
    regression_tolerance: float = 0.0
    """How much worse a query may get on a watched metric before the gate fails."""
    gate_metrics: tuple[Metric, ...] | None = None
    """`--gate-metrics`: the metrics `--fail-on-significant` tests, the first of them the
    primary one the reviewer views order by; None = every compared metric."""

    @property
    def active(self) -> bool:
        return self.fail_on_significant or self.fail_on_query_regression or bool(self.minimums)


QUERY_REGRESSION_FLAG: Final = "--fail-on-query-regression"


def gate_metric(text: str) -> Metric:
    """The metric named by its name, key or printed label; ValueError naming them all.

    The labels are what a reader copies from the tables (`P@k`, `MRR`, `tok-IoU`); an
    exact spelling wins, then a unique case-insensitive one (`mrr`, `TOK-IOU`).
    """
    try:
        return metric(text)
    except ValueError as error:
        unknown = error
    every: tuple[Metric, ...] = (*METRICS, *TOKEN_METRICS, *COST_METRICS)
    for found in every:
        if text == found.label:
            return found
    folded = text.casefold()
    matches = {
        found.key
        for found in every
        if folded in (found.name.casefold(), found.key.casefold(), found.label.casefold())
    }
    if len(matches) == 1:
        return next(found for found in every if found.key in matches)
    raise ValueError(
        f"{unknown} (or a label the tables print: {', '.join(m.label for m in every)})"
    )


def _how_to_add(item: Metric) -> str:
    if item.key in TOKEN_METRICS:
        return (
            "token metrics need expected anchors with line ranges (path@START-END) in the fixtures"
        )
    if item.default:
        return f"{item.label} is in every report cce writes; the report was written elsewhere"
    return f"add it with `cce relevance --metrics {item.name}`"


def check_gate_metrics(
    spec: GateSpec,
    group: DiffGroup,
    head_aggregate: Callable[[Metric], float | None],
    head: str,
) -> None:
    """Refuse (exit 2) a floor the head lacks, or a watched metric not compared.

    A missing metric is a question the reports cannot answer, not a regression, so it
    is a usage error that says how to add the metric rather than a failed gate.
    """
    for item, floor in spec.minimums:
        if head_aggregate(item) is None:
            raise CliError(
                f"--min {item.name}={number_text(floor)}: {head} has no {item.label}; "
                f"{_how_to_add(item)}",
                exit_code=2,
            )
    compared = {diffed.metric.key for diffed in group.metrics}
    for item in spec.gate_metrics or ():
        if item.key not in compared:
            raise CliError(
                f"--gate-metrics {item.name}: the compared sides do not both have "
                f"{item.label}; {_how_to_add(item)}",
                exit_code=2,
            )
    if not spec.fail_on_query_regression or spec.regression_metrics is None:
        return
    for item in spec.regression_metrics:
        if item.key not in compared:
            raise CliError(
                f"{QUERY_REGRESSION_FLAG} {item.name}: the compared sides do not both have "
                f"{item.label}; {_how_to_add(item)}",
                exit_code=2,
            )


def _alpha_text(alpha: float) -> str:
    return number_text(alpha)


def refuse_uncalibrated_gate(spec: GateSpec, group: DiffGroup, test: str) -> None:
    """Raise CliError (exit 1) when `--fail-on-significant` would act on a bootstrap p
    from fewer than `BOOTSTRAP_CALIBRATED_N` paired queries.

    Below that n the percentile bootstrap calls about 10% of no-change comparisons
    significant at alpha 0.05 (n = 10), so such a gate would block sound changes at
    twice its stated rate. The report without the gate stays available: its interval
    still describes the size of a difference.
    """
    if not spec.fail_on_significant or test != "bootstrap":
        return
    blocking = [
        item
        for item in group.metrics
        if item.result.p is not None and item.result.n < BOOTSTRAP_CALIBRATED_N
    ]
    if not blocking:
        return
    # Each metric is tested on its own paired queries (token metrics on fewer; a
    # suite's member-level test on its members), so the message names the metrics
    # that block and their own n.
    by_n: dict[int, list[str]] = {}
    for item in blocking:
        by_n.setdefault(item.result.n, []).append(item.metric.label)
    counts = " and ".join(f"{n} ({', '.join(labels)})" for n, labels in by_n.items())
    raise CliError(
        f"--fail-on-significant with --test bootstrap needs at least {BOOTSTRAP_CALIBRATED_N} "
        f"paired queries per gated metric, got {counts}: below that the percentile "
        "bootstrap's p falls under alpha far more often than alpha when nothing changed "
        "(about 10% of the time at alpha 0.05 with 10 queries); gate with --test t or "
        "--test randomization, or add queries "
        "(docs/gating.md#which-test-can-gate)"
    )


def gating_tests(
    spec: GateSpec, group: DiffGroup, correction: str
) -> list[tuple[MetricDiff, float | None]]:
    """The metrics `--fail-on-significant` tests, each with the adjusted p it is judged
    by: every compared metric with the report's adjusted p, or, with `--gate-metrics`,
    the named ones (in the order named) with p adjusted over those alone."""
    if spec.gate_metrics is None:
        return [(item, item.p_adjusted) for item in group.metrics]
    chosen = [found for wanted in spec.gate_metrics if (found := group.metric(wanted.key))]
    # The decision p, as the report's own correction uses (docs/statistics.md).
    raw = [finite_or_none(item.result.decision_p) for item in chosen]
    return list(zip(chosen, adjust_p_values(raw, correction), strict=True))


def with_verdict(
    report: DiffReport, spec: GateSpec, reasons: tuple[str, ...], correction: str
) -> DiffReport:
    """`report` carrying the verdict of the gate `spec`: active, its failure `reasons`,
    the metrics it names and what `--fail-on-significant` tested (`gate_scope`)."""
    return attrs.evolve(
        report,
        gate_active=True,
        gate_reasons=reasons,
        gate_metrics=tuple(item.key for item in spec.gate_metrics or ()),
        gate_scope=gate_scope(spec, report.overall, correction),
    )


def gate_scope(spec: GateSpec, group: DiffGroup, correction: str) -> str | None:
    """What `--fail-on-significant` tested, for the output: "nDCG@k and MRR
    (holm-adjusted over these 2)"; None without `--gate-metrics` (every metric)."""
    if not spec.fail_on_significant or spec.gate_metrics is None:
        return None
    labels = [item.metric.label for item, _ in gating_tests(spec, group, correction)]
    named = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    adjusted = (
        "unadjusted" if correction == "none" else f"{correction}-adjusted over these {len(labels)}"
    )
    return f"--fail-on-significant tested {named} ({adjusted})"


def evaluate_gate(
    spec: GateSpec,
    group: DiffGroup,
    head_aggregate: Callable[[Metric], float | None],
    *,
    head: str,
    correction: str,
    alpha: float,
    mean: str = "mean",
) -> tuple[str, ...]:
    """Every reason the gate fails, in rule order then metric/case order; () = passed.

    `mean` names the tested mean in the significance reason ("macro mean" for a suite).
    """
    reasons: list[str] = []
    if spec.fail_on_significant:
        over = "" if spec.gate_metrics is None else " over the gating metrics"
        for item, p in gating_tests(spec, group, correction):
            if p is not None and p < alpha and item.moved_worse:
                reasons.append(
                    f"{item.metric.label} got significantly worse: {mean} delta "
                    f"{format6_signed(item.result.mean_delta)}, {correction}-adjusted p"
                    f"{over} {format6(p)} < alpha {_alpha_text(alpha)}"
                )
    if spec.fail_on_query_regression:
        watched = spec.regression_metrics
        # Scores are compared at the 6 decimals reports carry, so a delta of exactly
        # the tolerance is within it however the subtraction rounds.
        allowed = spec.regression_tolerance + 5e-7 if spec.regression_tolerance else 0.0
        for item in group.metrics:
            if watched is not None and item.metric not in watched:
                continue
            for row in item.rows:
                if item.worse(row) and abs(row.delta) > allowed:
                    reasons.append(
                        f"query {display_text(row.id)} got worse on {item.metric.label}: "
                        f"{format6(row.base)} -> {format6(row.head)} "
                        f"({format6_signed(row.delta)})"
                    )
    for floored, floor in spec.minimums:
        value = head_aggregate(floored)
        flag = f"--min {floored.name}={number_text(floor)}"
        if value is None:
            reasons.append(f"{head} has no {floored.label} to hold to {flag}")
        elif floored.higher_is_better and value < floor:
            reasons.append(f"{floored.label} of {head} is {format6(value)}, below {flag}")
        elif not floored.higher_is_better and value > floor:
            # A lower-is-better metric (a cost in tokens): the bound is a ceiling.
            reasons.append(f"{floored.label} of {head} is {format6(value)}, above {flag}")
    return tuple(reasons)


def append_step_summary(markdown: str) -> None:
    """Append `markdown` to the file `GITHUB_STEP_SUMMARY` names, if it names one."""
    target = os.environ.get(STEP_SUMMARY_ENV, "")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown)
    except OSError as error:
        cause = error.strerror or str(error)
        raise CliError(
            f"could not append the job summary to {target} ({STEP_SUMMARY_ENV}): {cause}"
        ) from None


def report_gate(reasons: tuple[str, ...]) -> int:
    """Print one stderr line per gate reason; the exit status the gate gives."""
    if not reasons:
        return 0
    sys.stdout.flush()
    for reason in reasons:
        print(f"gate failed: {reason}", file=sys.stderr)
    return GATE_FAILED
