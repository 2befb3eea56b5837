"""The scope of the multiple-testing correction of `--by-tag`: each tag, or every tag × metric.

Why it exists: with `--by-tag` every tag gets its own tests of every metric. Adjusting
within each tag (the default, `tag`) controls the error rate of one tag's claims; a
reader scanning every tag for a significant row makes tags × metrics claims, and only
adjusting over that whole family (`family`) holds the stated alpha for them. This
module owns the second scope: it collects the decision p of every tag × metric, adjusts
them once, and gives each group its share back (docs/statistics.md#tags-and-the-family).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from cce_cli.compare.pairing import DiffGroup, DiffReport
from cce_stats import adjust_p_values

__all__ = ["TAG_SCOPES", "adjust_tag_family", "family_size"]

TAG_SCOPES: Final = ("tag", "family")
"""`--tag-correction`: within each tag (default), or over every tag × metric at once."""


def family_size(groups: Sequence[DiffGroup]) -> int:
    """How many tests the family of every tag × metric holds."""
    return sum(len(group.metrics) for group in groups)


def adjust_tag_family(report: DiffReport, scope: str) -> DiffReport:
    """`report` with its per-tag p's adjusted over `scope`: "tag" leaves each tag's own
    adjustment; "family" adjusts every tag's metrics' decision p's together, once. The
    overall group keeps its own family (the metrics compared over every query)."""
    if report.tags is None or scope == "tag":
        return attrs.evolve(report, tag_scope=scope)
    decision = [item.result.decision_p for group in report.tags for item in group.metrics]
    adjusted = iter(adjust_p_values(decision, report.correction))
    tags = tuple(
        attrs.evolve(
            group,
            metrics=tuple(attrs.evolve(item, p_adjusted=next(adjusted)) for item in group.metrics),
        )
        for group in report.tags
    )
    return attrs.evolve(report, tags=tags, tag_scope=scope)
