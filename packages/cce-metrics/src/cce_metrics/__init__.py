"""cce-metrics: retrieval-quality metrics from relevance judgments.

Why it exists: scoring a ranked result list is independent of how the results were
produced and of how the expectations were written down. This package takes judgments
(which result matched which expected item, which lines were expected and which came
back) and returns the chunk-level metrics (precision@k, recall, MRR, F1), token-weighted
span metrics, and their averages, exactly as the CCE reference engine computes them. Every metric is
declared once in `cce_metrics.registry`. It
depends on attrs only, so any eval tool can use it for its own results.
"""

from __future__ import annotations

from cce_metrics.averages import MacroAverages, TokenAverages, macro_average, token_average
from cce_metrics.queries import QueryScore, score_query
from cce_metrics.registry import (
    CHUNK,
    METRICS,
    TOKEN,
    TOKEN_METRICS,
    Judgment,
    Metric,
    MetricRegistry,
    judgment,
    mean,
    metric,
)
from cce_metrics.spans import LineWeights, Span, TokenScore, score_tokens
from cce_metrics.summation import seq_sum
from cce_metrics.tokens import TOKENIZER_ID, estimate_tokens, rust_lines

__all__ = [
    "CHUNK",
    "METRICS",
    "TOKEN",
    "TOKENIZER_ID",
    "TOKEN_METRICS",
    "Judgment",
    "LineWeights",
    "MacroAverages",
    "Metric",
    "MetricRegistry",
    "QueryScore",
    "Span",
    "TokenAverages",
    "TokenScore",
    "estimate_tokens",
    "judgment",
    "macro_average",
    "mean",
    "metric",
    "rust_lines",
    "score_query",
    "score_tokens",
    "seq_sum",
    "token_average",
]
