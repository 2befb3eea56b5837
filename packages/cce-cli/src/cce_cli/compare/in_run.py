"""The gate of `cce relevance --compare A,B`, over the run's own full-precision reports,
and the pull-request summary it appends.

Why it exists: a gated `--compare` must judge exactly the numbers the comparison printed,
with the rules `cce diff` applies to saved reports (`cce_cli.compare.gate`): floors only
on metrics the report shows, watched metrics it carries, a refusal of an uncalibrated
test, all before anything is written; and its job summary is the markdown `cce diff`
would append for the same two sides (docs/gating.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from cce_cli.compare.gate import (
    GateSpec,
    check_gate_metrics,
    evaluate_gate,
    refuse_uncalibrated_gate,
)
from cce_cli.compare.pairing import (
    diff_backend_reports,
    head_aggregate,
)
from cce_cli.evaluation.harness import BackendReport
from cce_cli.output import display_text
from cce_metrics import METRICS, Metric

__all__ = ["compare_gate"]


def compare_gate(
    spec: GateSpec,
    reports: Sequence[BackendReport],
    metrics: Sequence[Metric],
    *,
    test: str,
    correction: str,
    alpha: float,
) -> tuple[str, ...]:
    """The gate's reasons on `--compare A,B` (B is the head); () = passed or no gate.

    Evaluated before anything is written, so a gate refused as uncalibrated leaves
    no partial output behind.
    """
    if not spec.active:
        return ()
    base, head = reports
    group = diff_backend_reports(base, head, metrics, test=test, correction=correction)
    reported = {item.key for item in metrics}

    def aggregate(item: Metric) -> float | None:
        # Only what the report shows can hold a floor: the harness averages every
        # chunk metric, but `--metrics` decides which ones the report carries.
        if item.key in METRICS and item.key not in reported:
            return None
        return head_aggregate(head, item)

    check_gate_metrics(spec, group, aggregate, display_text(head.backend))
    refuse_uncalibrated_gate(spec, group, test)
    return evaluate_gate(
        spec,
        group,
        aggregate,
        head=display_text(head.backend),
        correction=correction,
        alpha=alpha,
    )
