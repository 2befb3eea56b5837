"""The pass/fail gate of a ranking change, shared by `cce diff` and `cce relevance --compare`.

Why it exists: a pull request that changes ranking should fail the way a failing test
does when it makes labeled queries worse. The gate owns the three rules and their
wording (docs/gating.md#the-gate):

- `--fail-on-significant`: a compared metric whose mean moved in the worse direction
  with an adjusted p below alpha;
- `--fail-on-query-regression`: any paired query worse on any compared metric;
- `--min METRIC=VALUE`: the head's aggregate below a floor.

It returns one reason per failure; the commands print them on stderr and exit 3.
It also refuses (exit 1) a significance gate whose p is known to be too small for
the number of paired queries: the percentile bootstrap below
`cce_stats.BOOTSTRAP_CALIBRATED_N` (docs/gating.md#which-test-can-gate).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Final

import attrs

from cce_cli.compare.pairing import DiffGroup
from cce_cli.errors import CliError
from cce_metrics import Metric, metric
from cce_retrieval import format6, format6_signed
from cce_stats import BOOTSTRAP_CALIBRATED_N, CORRECTIONS

__all__ = [
    "GATE_FAILED",
    "GateSpec",
    "add_gate_arguments",
    "alpha_value",
    "evaluate_gate",
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

    @property
    def active(self) -> bool:
        return self.fail_on_significant or self.fail_on_query_regression or bool(self.minimums)


def minimum(text: str) -> tuple[Metric, float]:
    """Parse a `--min METRIC=VALUE` argument (argparse type: errors are usage errors)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (e.g. mrr=0.6), got {text!r}")
    try:
        found = metric(name.strip())
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


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the gate flags and the significance settings they use."""
    group = parser.add_argument_group("gate (exit 3 when it fails)")
    group.add_argument(
        "--fail-on-significant",
        action="store_true",
        help="fail when a metric got worse with an adjusted p below alpha",
    )
    group.add_argument(
        "--fail-on-query-regression",
        action="store_true",
        help="fail when any paired query got worse on any compared metric",
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
    """The gate the parsed arguments ask for."""
    return GateSpec(
        bool(args.fail_on_significant),
        bool(args.fail_on_query_regression),
        tuple(args.minimums),
    )


def _alpha_text(alpha: float) -> str:
    return f"{alpha:g}"


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
        for item in group.metrics:
            for row in item.rows:
                if item.worse(row):
                    reasons.append(
                        f"query {row.id} got worse on {item.metric.label}: "
                        f"{format6(row.base)} -> {format6(row.head)} "
                        f"({format6_signed(row.delta)})"
                    )
    for floored, floor in spec.minimums:
        value = head_aggregate(floored)
        flag = f"--min {floored.name}={floor:g}"
        if value is None:
            reasons.append(f"{head} has no {floored.label} to hold to {flag}")
        elif value < floor:
            reasons.append(f"{floored.label} of {head} is {format6(value)}, below {flag}")
    return tuple(reasons)
