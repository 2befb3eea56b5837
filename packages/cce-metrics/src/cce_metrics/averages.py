"""Per-backend aggregates of per-query scores (harness spec §4.2).

Why it exists: the reported averages must match the reference to the last bit, so the
summation order (case order, strictly left to right) and the divisor rules (macro
averages divide by max(n, 1); token averages only over queries that have a token
score) live here, once.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_metrics.queries import QueryScore
from cce_metrics.spans import TokenScore
from cce_metrics.summation import seq_sum


@attrs.frozen(slots=True)
class MacroAverages:
    """Unweighted means over queries of the chunk-level metrics."""

    precision_at_k: float
    recall: float
    mrr: float
    f1: float


@attrs.frozen(slots=True)
class TokenAverages:
    """Means of the token-level metrics over the `queries` queries that have them."""

    queries: int
    precision: float
    recall: float
    iou: float


def macro_average(scores: Sequence[QueryScore]) -> MacroAverages:
    """Mean of each chunk-level metric in the given (case) order; all 0.0 when empty."""
    divisor = max(len(scores), 1)
    return MacroAverages(
        precision_at_k=seq_sum(score.precision_at_k for score in scores) / divisor,
        recall=seq_sum(score.recall for score in scores) / divisor,
        mrr=seq_sum(score.mrr for score in scores) / divisor,
        f1=seq_sum(score.f1 for score in scores) / divisor,
    )


def token_average(scores: Sequence[QueryScore]) -> TokenAverages | None:
    """Mean token metrics over the scores that carry one; None when none does."""
    ranged: list[TokenScore] = [score.tokens for score in scores if score.tokens is not None]
    if not ranged:
        return None
    count = len(ranged)
    return TokenAverages(
        queries=count,
        precision=seq_sum(tokens.precision for tokens in ranged) / count,
        recall=seq_sum(tokens.recall for tokens in ranged) / count,
        iou=seq_sum(tokens.iou for tokens in ranged) / count,
    )
