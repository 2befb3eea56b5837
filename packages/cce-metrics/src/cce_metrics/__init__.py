"""cce-metrics: retrieval-quality metrics from relevance judgments.

Why it exists: scoring a ranked result list is independent of how the results were
produced and of how the expectations were written down. This package takes judgments
(which result matched which expected item, which lines were expected and which came
back) and returns the chunk-level metrics (precision@k, recall, MRR, F1), token-weighted
span metrics, and their averages, exactly as the CCE reference engine computes them;
rank-sensitive metrics over graded anchors (nDCG, average precision, hit, R-precision);
and `evaluate(qrels, run, metrics)` with TREC run/qrels files for tools that hold plain
judgments. Every metric is declared once in `cce_metrics.registry`. It depends on attrs
only, so any eval tool can use it for its own results.
"""

from __future__ import annotations

from cce_metrics.averages import MacroAverages, TokenAverages, macro_average, token_average
from cce_metrics.evaluation import (
    Evaluation,
    Measure,
    TieRule,
    evaluate,
    parse_measure,
    rank_documents,
)
from cce_metrics.queries import QueryScore, score_query
from cce_metrics.ranked import (
    EXPECTED_GAIN,
    GRADED_EXPECTED_GAIN,
    SECONDARY_GAIN,
    GainProfile,
    anchor_gains,
    anchor_profile,
    average_precision_at_k,
    hit_at_k,
    ndcg_at_k,
    r_precision_at_k,
)
from cce_metrics.registry import (
    CHUNK,
    METRICS,
    TOKEN,
    TOKEN_METRICS,
    UNIT_INTERVAL,
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
from cce_metrics.trec import (
    TrecFormatError,
    format_qrels,
    format_run,
    parse_qrels,
    parse_run,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)

__all__ = [
    "CHUNK",
    "EXPECTED_GAIN",
    "GRADED_EXPECTED_GAIN",
    "METRICS",
    "SECONDARY_GAIN",
    "TOKEN",
    "TOKENIZER_ID",
    "TOKEN_METRICS",
    "UNIT_INTERVAL",
    "Evaluation",
    "GainProfile",
    "Judgment",
    "LineWeights",
    "MacroAverages",
    "Measure",
    "Metric",
    "MetricRegistry",
    "QueryScore",
    "Span",
    "TieRule",
    "TokenAverages",
    "TokenScore",
    "TrecFormatError",
    "anchor_gains",
    "anchor_profile",
    "average_precision_at_k",
    "estimate_tokens",
    "evaluate",
    "format_qrels",
    "format_run",
    "hit_at_k",
    "judgment",
    "macro_average",
    "mean",
    "metric",
    "ndcg_at_k",
    "parse_measure",
    "parse_qrels",
    "parse_run",
    "r_precision_at_k",
    "rank_documents",
    "read_qrels",
    "read_run",
    "rust_lines",
    "score_query",
    "score_tokens",
    "seq_sum",
    "token_average",
    "write_qrels",
    "write_run",
]
