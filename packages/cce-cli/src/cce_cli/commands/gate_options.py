"""The gate's command-line flags, shared by `cce relevance --compare` and `cce diff`.

Why it exists: the flags (`--fail-on-significant`, `--fail-on-query-regression`, `--min`,
`--regression-tolerance`, `--correction`, `--alpha`) parse into the one `GateSpec` the
gate itself (`cce_cli.compare.gate`) judges by; parsing them is the commands' business,
so argparse stays above the comparison layer (docs/gating.md).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from typing import Final

from cce_cli.compare.gate import QUERY_REGRESSION_FLAG, GateSpec, gate_metric
from cce_cli.errors import CliError
from cce_metrics import Metric
from cce_stats import CORRECTIONS

__all__ = [
    "add_gate_arguments",
    "alpha_value",
    "bind_bare_regression_flag",
    "gate_spec",
    "minimum",
]

_REGRESSION_PREFIX: Final = "--fail-on-q"
"""The shortest abbreviation of the flag argparse would accept (no other flag shares it)."""
ALL_METRICS: Final = "all"
"""The value of `--fail-on-query-regression` that watches every compared metric, which
the bare flag means."""


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


def gating_metrics(text: str) -> tuple[Metric, ...]:
    """Parse `--gate-metrics` (argparse type): a comma list of metrics, in order."""
    chosen = regression_metrics(text)
    if chosen is None:
        raise argparse.ArgumentTypeError(
            f"name the gating metrics (e.g. ndcg,mrr); {ALL_METRICS} is the default, got {text!r}"
        )
    return chosen


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
        "--gate-metrics",
        metavar="METRICS",
        type=gating_metrics,
        default=None,
        help="the metrics --fail-on-significant tests (comma list, e.g. ndcg,mrr; the "
        "correction runs over these alone); the first is the primary metric the headline "
        "counts and orders use (default: every compared metric; the first shown)",
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
        help="fail when the head's aggregate of METRIC is below VALUE, or above it for a "
        "metric where lower is better such as first-hit-tokens (repeatable)",
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
        gate_metrics=getattr(args, "gate_metrics", None),
    )
