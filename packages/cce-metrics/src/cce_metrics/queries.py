"""Chunk-level IR metrics of one query, from relevance judgments (harness spec §4.1).

Why it exists: precision@k, recall, MRR and F1 have several textbook variants; the
reference engine picked specific ones (precision divides by k even when fewer results
came back, recall counts matched anchors rather than relevant results). This module
owns those definitions. It takes a boolean judgment matrix, so it knows nothing of
anchors, fixtures or retrieval and any eval tool can feed it its own judgments.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from cce_metrics.spans import TokenScore


@attrs.frozen(slots=True)
class QueryScore:
    """Every metric of one query; `tokens` is None when the query has no ranged anchor."""

    precision_at_k: float
    recall: float
    mrr: float
    f1: float
    first_relevant_rank: int | None
    relevant_retrieved: int
    tokens: TokenScore | None = None


def score_query(
    matches: Sequence[Sequence[bool]],
    n_anchors: int,
    k: int,
    tokens: TokenScore | None = None,
) -> QueryScore:
    """Score one query from its judgment matrix.

    `matches[i][j]` says whether result i (rank order) matches anchor j; each row has
    `n_anchors` entries. Only the first `min(len(matches), k)` results count. A result
    is relevant when it matches any anchor (several hits on one anchor each count); an
    anchor is matched when any counted result matches it.

    - precision@k = relevant results / k, even when fewer than k results came back;
    - recall = matched anchors / n_anchors (0.0 when there are no anchors);
    - MRR = 1 / rank of the first relevant result, or 0.0;
    - F1 = 2·P·R / (P + R), or 0.0 when P + R is 0.

    `tokens` (from `score_tokens`) is carried through unchanged. Raises ValueError when
    `k < 1`, `n_anchors < 0` or a row's length differs from `n_anchors`.
    """
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if n_anchors < 0:
        raise ValueError(f"n_anchors must not be negative, got {n_anchors}")
    anchor_matched = [False] * n_anchors
    relevant_retrieved = 0
    first_relevant_rank: int | None = None
    for rank, row in enumerate(matches[:k], start=1):
        if len(row) != n_anchors:
            raise ValueError(f"result {rank} has {len(row)} judgments, expected {n_anchors}")
        relevant = False
        for anchor, matched in enumerate(row):
            if matched:
                relevant = True
                anchor_matched[anchor] = True
        if relevant:
            relevant_retrieved += 1
            if first_relevant_rank is None:
                first_relevant_rank = rank
    matched_anchors = anchor_matched.count(True)
    precision = relevant_retrieved / k
    recall = 0.0 if n_anchors == 0 else matched_anchors / n_anchors
    mrr = 0.0 if first_relevant_rank is None else 1.0 / first_relevant_rank
    # Same operation order as the reference: (2·P)·R, then the division.
    f1 = 2.0 * precision * recall / (precision + recall) if precision + recall > 0.0 else 0.0
    return QueryScore(
        precision_at_k=precision,
        recall=recall,
        mrr=mrr,
        f1=f1,
        first_relevant_rank=first_relevant_rank,
        relevant_retrieved=relevant_retrieved,
        tokens=tokens,
    )
