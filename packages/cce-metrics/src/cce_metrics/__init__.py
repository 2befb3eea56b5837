"""cce-metrics: retrieval-quality metrics from relevance judgments.

Why it exists: scoring a ranked result list is independent of how the results were
produced and of how the expectations were written down. This package takes judgments
(which result matched which expected item, which lines were expected and which came
back) and returns the chunk-level metrics (precision@k, recall, MRR, F1), token-weighted
span metrics, and their averages, exactly as the CCE reference engine computes them;
rank-sensitive metrics over graded anchors (nDCG, average precision, hit, R-precision);
reading-cost metrics over rankings with token counts (`recall@NNNNt`, `first-hit-tokens`);
and `evaluate(qrels, run, metrics)` with TREC run/qrels files for tools that hold plain
judgments. Every metric is declared once in `cce_metrics.registry`. It depends on attrs
only, so any eval tool can use it for its own results.
"""

from __future__ import annotations

from cce_metrics.averages import MacroAverages, TokenAverages, macro_average, token_average
from cce_metrics.cost import (
    COST_DEPTH,
    DEFAULT_BUDGETS,
    FIRST_HIT_CAP,
    FIRST_HIT_TOKENS,
    budget_recall,
    evaluate_cost,
    first_hit_tokens,
    first_hit_tokens_metric,
    recall_curve,
    recall_within_budget,
    score_reading,
    tokens_to_first_hit,
)
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
from cce_metrics.reading import Reading, reading, reading_of_ranking, reading_of_texts
from cce_metrics.registry import (
    CHUNK,
    COST,
    COST_METRICS,
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
from cce_metrics.tokens import ESTIMATOR, TOKENIZER_ID, Tokenizer, estimate_tokens, rust_lines
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
    "COST",
    "COST_DEPTH",
    "COST_METRICS",
    "DEFAULT_BUDGETS",
    "ESTIMATOR",
    "EXPECTED_GAIN",
    "FIRST_HIT_CAP",
    "FIRST_HIT_TOKENS",
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
    "Reading",
    "Span",
    "TieRule",
    "TokenAverages",
    "TokenScore",
    "Tokenizer",
    "TrecFormatError",
    "anchor_gains",
    "anchor_profile",
    "average_precision_at_k",
    "budget_recall",
    "estimate_tokens",
    "evaluate",
    "evaluate_cost",
    "first_hit_tokens",
    "first_hit_tokens_metric",
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
    "reading",
    "reading_of_ranking",
    "reading_of_texts",
    "recall_curve",
    "recall_within_budget",
    "rust_lines",
    "score_query",
    "score_reading",
    "score_tokens",
    "seq_sum",
    "token_average",
    "tokens_to_first_hit",
    "write_qrels",
    "write_run",
]
