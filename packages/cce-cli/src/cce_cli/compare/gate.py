"""The pass/fail gate of a ranking change, shared by `cce diff` and `cce relevance --compare`.

Why it exists: a pull request that changes ranking should fail the way a failing test
does when it makes labeled queries worse. The gate owns the three rules and their
wording (docs/gating.md#the-gate):

- `--fail-on-significant`: a compared metric whose mean moved in the worse direction
  with an adjusted p below alpha;
- `--fail-on-query-regression [METRICS]`: a paired query worse by more than
  `--regression-tolerance` on any compared metric, or on the metrics listed;
- `--min METRIC=VALUE`: the head's aggregate below a floor.

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

import argparse
import math
import os
from collections.abc import Callable, Sequence
from typing import Final

import attrs

from cce_cli.compare.pairing import DiffGroup
from cce_cli.errors import CliError
from cce_cli.output import display_text, number_text
from cce_metrics import METRICS, TOKEN_METRICS, Metric, metric
from cce_retrieval import format6, format6_signed
from cce_stats import BOOTSTRAP_CALIBRATED_N, CORRECTIONS

__all__ = [
    "GATE_FAILED",
    "QUERY_REGRESSION_FLAG",
    "GateSpec",
    "add_gate_arguments",
    "alpha_value",
    "bind_bare_regression_flag",
    "check_gate_metrics",
    "evaluate_gate",
    "gate_metric",
    "gate_spec",
    "minimum",
    "refuse_uncalibrated_gate",
]

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

    @property
    def active(self) -> bool:
        return self.fail_on_significant or self.fail_on_query_regression or bool(self.minimums)


QUERY_REGRESSION_FLAG: Final = "--fail-on-query-regression"
_REGRESSION_PREFIX: Final = "--fail-on-q"
"""The shortest abbreviation of the flag argparse would accept (no other flag shares it)."""
ALL_METRICS: Final = "all"
"""The value of `--fail-on-query-regression` that watches every compared metric, which
the bare flag means."""


def gate_metric(text: str) -> Metric:
    """The metric named by its name, key or printed label; ValueError naming them all.

    The labels are what a reader copies from the tables (`P@k`, `MRR`, `tok-IoU`); an
    exact spelling wins, then a unique case-insensitive one (`mrr`, `TOK-IOU`).
    """
    try:
        return metric(text)
    except ValueError as error:
        unknown = error
    every: tuple[Metric, ...] = (*METRICS, *TOKEN_METRICS)
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


def minimum(text: str) -> tuple[Metric, float]:
    """Parse a `--min METRIC=VALUE` argument (argparse type: errors are usage errors)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (e.g. mrr=0.6), got {text!r}")
    try:
        found = gate_metric(name.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    try:
        floor = float(value)
    except ValueError:
        floor = float("nan")
    if not math.isfinite(floor):
        raise argparse.ArgumentTypeError(
            f"the floor of {found.name} must be a number (e.g. {found.name}=0.6), got {value!r}"
        )
    return found, floor


def alpha_value(text: str) -> float:
    """Parse `--alpha` (argparse type): a significance level strictly between 0 and 1."""
    try:
        alpha = float(text)
    except ValueError:
        alpha = float("nan")
    if not 0.0 < alpha < 1.0:
        raise argparse.ArgumentTypeError(f"alpha must be between 0 and 1 (exclusive), got {text!r}")
    return alpha


def regression_metrics(text: str) -> tuple[Metric, ...] | None:
    """Parse the value of `--fail-on-query-regression` (argparse type): a comma list of
    metrics, or `all` (None: every compared metric)."""
    if text.strip() == ALL_METRICS:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma list of metrics (e.g. mrr,ndcg) or {ALL_METRICS}, got {text!r}"
        )
    chosen: list[Metric] = []
    for name in names:
        try:
            found = gate_metric(name)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if found not in chosen:
            chosen.append(found)
    return tuple(chosen)


def tolerance_value(text: str) -> float:
    """Parse `--regression-tolerance` (argparse type): a finite number, 0 or more."""
    try:
        tolerance = float(text)
    except ValueError:
        tolerance = float("nan")
    if not (math.isfinite(tolerance) and tolerance >= 0.0):
        raise argparse.ArgumentTypeError(
            f"the tolerance must be a number of 0 or more (e.g. 0.05), got {text!r}"
        )
    return tolerance


def _is_metric_list(token: str) -> bool:
    try:
        regression_metrics(token)
    except argparse.ArgumentTypeError:
        return False
    return True


def bind_bare_regression_flag(arguments: Sequence[str]) -> list[str]:
    """The arguments with a bare `--fail-on-query-regression` written `...=all`.

    The flag takes an optional value, and argparse gives an optional value the next
    word whatever it is, so `cce relevance --fail-on-query-regression code.jsonl`
    would lose its fixture file. The next word is the flag's value only when it reads
    as one: a list of known metrics, or a word that names no file and has no path or
    extension in it (so `mrr,bpref` is refused as a metric list, not opened as a file).
    Words after `--` are positional and left alone.
    """
    bound = list(arguments)
    for index, word in enumerate(bound):
        if word == "--":
            break
        # argparse also takes an unambiguous abbreviation of the flag.
        if not (word.startswith(_REGRESSION_PREFIX) and QUERY_REGRESSION_FLAG.startswith(word)):
            continue
        following = bound[index + 1] if index + 1 < len(bound) else None
        if following is not None and not following.startswith("-"):
            if _is_metric_list(following):
                continue
            looks_like_path = "/" in following or "." in following or os.sep in following
            if not looks_like_path and not os.path.exists(following):
                continue
        bound[index] = f"{word}={ALL_METRICS}"
    return bound


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the gate flags and the significance settings they use."""
    group = parser.add_argument_group("gate (exit 3 when it fails)")
    group.add_argument(
        "--fail-on-significant",
        action="store_true",
        help="fail when a metric got worse with an adjusted p below alpha",
    )
    group.add_argument(
        QUERY_REGRESSION_FLAG,
        metavar="METRICS",
        nargs="?",
        const=None,
        default=False,
        type=regression_metrics,
        help="fail when a paired query got worse on any compared metric, or on the comma "
        "list METRICS (e.g. mrr,ndcg)",
    )
    group.add_argument(
        "--regression-tolerance",
        metavar="DELTA",
        type=tolerance_value,
        default=None,
        help="with --fail-on-query-regression, a query fails only when it got worse by "
        "more than DELTA (default: 0)",
    )
    group.add_argument(
        "--min",
        metavar="METRIC=VALUE",
        type=minimum,
        action="append",
        default=[],
        dest="minimums",
        help="fail when the head's aggregate of METRIC is below VALUE (repeatable)",
    )
    group.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="holm",
        help="multiple-testing correction of the p-values over the metrics (default: holm)",
    )
    group.add_argument(
        "--alpha",
        type=alpha_value,
        default=0.05,
        help="significance level (default: 0.05)",
    )


def gate_spec(args: argparse.Namespace) -> GateSpec:
    """The gate the parsed arguments ask for; a tolerance without the rule it loosens
    is a usage error (exit 2)."""
    watched = args.fail_on_query_regression
    on = watched is not False
    tolerance = args.regression_tolerance
    if tolerance is not None and not on:
        raise CliError(
            f"--regression-tolerance only loosens {QUERY_REGRESSION_FLAG}; add that flag",
            exit_code=2,
        )
    return GateSpec(
        bool(args.fail_on_significant),
        on,
        tuple(args.minimums),
        regression_metrics=watched if on else None,
        regression_tolerance=0.0 if tolerance is None else float(tolerance),
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
    if not spec.fail_on_query_regression or spec.regression_metrics is None:
        return
    compared = {diffed.metric.key for diffed in group.metrics}
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
    tested = [item.n for item in group.metrics if item.result.p is not None]
    if not tested or min(tested) >= BOOTSTRAP_CALIBRATED_N:
        return
    n = min(tested)
    raise CliError(
        f"--fail-on-significant with --test bootstrap needs at least {BOOTSTRAP_CALIBRATED_N} "
        f"paired queries, got {n}: below that the percentile bootstrap's p falls under alpha "
        "far more often than alpha when nothing changed (about 10% of the time at alpha 0.05 "
        "with 10 queries); gate with --test t or --test randomization, or add queries "
        "(docs/gating.md#which-test-can-gate)"
    )


def evaluate_gate(
    spec: GateSpec,
    group: DiffGroup,
    head_aggregate: Callable[[Metric], float | None],
    *,
    head: str,
    correction: str,
    alpha: float,
) -> tuple[str, ...]:
    """Every reason the gate fails, in rule order then metric/case order; () = passed."""
    reasons: list[str] = []
    if spec.fail_on_significant:
        for item in group.metrics:
            p = item.p_adjusted
            if p is not None and p < alpha and item.moved_worse:
                reasons.append(
                    f"{item.metric.label} got significantly worse: mean delta "
                    f"{format6_signed(item.result.mean_delta)}, {correction}-adjusted p "
                    f"{format6(p)} < alpha {_alpha_text(alpha)}"
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
        elif value < floor:
            reasons.append(f"{floored.label} of {head} is {format6(value)}, below {flag}")
    return tuple(reasons)
