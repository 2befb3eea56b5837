"""`cce plan REPORT.json`: the command's arguments, turned into one frozen `PlanRequest`.

Why it exists: the plan itself (reading the pilot, sizing at the gate's effective
alpha, the text and JSON renderings) is `cce_cli.runs.plan`'s, which reads no
`argparse.Namespace`; this module declares the flags, checks their values (usage
errors, exit 2) and prints what the plan renders (docs/statistics.md#sizing).
"""

from __future__ import annotations

import argparse
import math

from cce_cli.compare.gate import gate_metric
from cce_cli.output import write_stdout
from cce_cli.runs.plan import PLAN_FORMATS, SMALLEST_DELTA, PlanRequest, plan_text
from cce_stats import CORRECTIONS

__all__ = ["configure", "plan_request", "run"]


def _delta(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be a number > 0 (e.g. 0.05), got {text!r}")
    if value < SMALLEST_DELTA:
        raise argparse.ArgumentTypeError(
            f"must be at least {SMALLEST_DELTA:g}, got {text!r}: reports carry scores to 6 "
            "decimals, so a smaller mean change cannot be seen in them"
        )
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, got {text!r}")
    return value


def _metric_keys(text: str) -> tuple[str, ...]:
    """Parse `--gate-metrics` (argparse type): a comma list of metric names, keys or the
    labels the tables print, as metric keys in the order given, each once."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected a comma list of metrics (e.g. mrr,ndcg), got {text!r}"
        )
    keys: list[str] = []
    for name in names:
        try:
            key = gate_metric(name).key
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if key not in keys:
            keys.append(key)
    return tuple(keys)


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce plan`'s arguments."""
    parser.add_argument(
        "report",
        metavar="REPORT.json",
        help="a pilot: `cce relevance --json` output, or `cce diff --format json` output",
    )
    parser.add_argument(
        "--compare",
        metavar="A,B",
        help="the report's two backends to pair (B minus A); optional when it has exactly two",
    )
    parser.add_argument(
        "--delta",
        type=_delta,
        default=0.05,
        help="the mean delta to detect, in metric units (default: 0.05)",
    )
    parser.add_argument(
        "--power",
        type=_probability,
        default=0.8,
        help="the chance of detecting it when it is real (default: 0.8)",
    )
    parser.add_argument(
        "--alpha",
        type=_probability,
        default=0.05,
        help="the gate's two-sided level, before its correction (default: 0.05)",
    )
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="holm",
        help="the gate's correction over the gated metrics (default: holm, the gate's); "
        "each metric is sized at the effective alpha it gives (none: at --alpha)",
    )
    parser.add_argument(
        "--gate-metrics",
        metavar="METRICS",
        type=_metric_keys,
        default=None,
        help="the comma list of metrics the gate tests (default: every compared metric); "
        "only they are planned, and their count sizes the correction",
    )
    parser.add_argument(
        "--format", choices=PLAN_FORMATS, default="text", help="output format (default: text)"
    )


def plan_request(args: argparse.Namespace) -> PlanRequest:
    """The plan the parsed arguments ask for."""
    return PlanRequest(
        str(args.report),
        compare=args.compare,
        delta=float(args.delta),
        power=float(args.power),
        alpha=float(args.alpha),
        correction=str(args.correction),
        gated_metrics=args.gate_metrics,
        format=str(args.format),
    )


def run(args: argparse.Namespace) -> int:
    """Read the pilot, plan every gated metric, print the plan."""
    write_stdout(plan_text(plan_request(args)))
    return 0
