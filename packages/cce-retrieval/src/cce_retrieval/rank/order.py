"""Vectorised ranking order shared by BM25 and cosine ranking
(docs/retrieval.md#rounding-and-score-keys, docs/retrieval.md#bm25,
docs/retrieval.md#vector-ranking).

Why it exists: both single-signal rankings sort by the 6-decimal rounded score
(`numeric.score_key`) descending, then chunk id ascending, with store order as the last
resort; over tens of thousands of chunks that has to be numpy, not a Python sort. This
module owns the vectorised `score_key`, the chunk-id tie-break ranks (computed once per
index) and the partial top-k ordering (`top_order`, and `ranked_prefix`, which keys only
the values that can reach the prefix).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def score_keys(values: FloatArray) -> IntArray:
    """Vectorised `numeric.score_key` for finite values: round half away from zero of x * 1e6."""
    scaled = values * 1_000_000.0
    magnitude = np.abs(scaled)
    floor = np.floor(magnitude)
    rounded = np.where((magnitude - floor) >= 0.5, floor + 1.0, floor)
    return np.copysign(rounded, scaled).astype(np.int64)


def id_order_ranks(chunk_ids: Sequence[str]) -> IntArray:
    """Position of each document in (chunk_id asc, store order) order: the tie-break key.

    Sorting by this rank equals a stable sort by chunk id, so duplicate ids fall back to
    store order (docs/retrieval.md#determinism).
    """
    order = sorted(range(len(chunk_ids)), key=chunk_ids.__getitem__)
    ranks = np.empty(len(chunk_ids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(chunk_ids), dtype=np.int64)
    return ranks


def top_order(keys: IntArray, id_ranks: IntArray, limit: int | None = None) -> IntArray:
    """Positions of `keys` ordered by key desc, then id rank asc; only the first `limit`.

    With a limit, a linear-time partition first keeps every position whose key reaches
    the limit-th best key (all boundary ties included), so the full sort runs on a few
    hundred entries instead of the whole corpus; the result is the same prefix.
    """
    n = len(keys)
    if limit is not None and limit <= 0:
        return np.zeros(0, dtype=np.int64)
    if limit is None or limit >= n:
        return np.lexsort((id_ranks, -keys)).astype(np.int64)
    negated = -keys
    threshold = np.partition(negated, limit - 1)[limit - 1]
    near = np.flatnonzero(negated <= threshold)
    order = near[np.lexsort((id_ranks[near], negated[near]))]
    return order[:limit].astype(np.int64)


def ranked_prefix(values: FloatArray, id_ranks: IntArray, limit: int | None) -> IntArray:
    """`top_order(score_keys(values), id_ranks, limit)`, rounding only near the top.

    Rounding every score to its key is most of a ranking's cost over a large corpus, yet
    only the first `limit` positions are asked for. Keys are monotone in the values, so
    every position of that prefix has a key at least the key of `t`, the limit-th
    largest value, hence a value of at least `t - 1e-6` (a key m needs x * 1e6 >= m - 0.5,
    and key(t) >= t * 1e6 - 0.5). Only positions above that bound, with a margin for the
    rounding of `x * 1e6` itself, are keyed and ordered; the result is the same prefix.
    """
    n = len(values)
    if limit is None or limit <= 0 or 4 * limit >= n:
        return top_order(score_keys(values), id_ranks, limit)
    kth_largest = _kth_largest(values, limit)
    margin = 2e-6 + abs(kth_largest) * 1e-9
    near = np.flatnonzero(values >= kth_largest - margin)
    order = top_order(score_keys(values[near]), id_ranks[near], limit)
    return near[order]


def _kth_largest(values: FloatArray, k: int) -> float:
    """The `k`-th largest of `values` (1 <= k <= len(values)).

    numpy's selection slows down about fifteenfold on heavily tied input, and a corpus's
    cosines against a query are mostly 0.0 (a hash vector shares no bucket with most
    chunks). When at least `k` values are positive, the `k` largest are among them, so
    the selection runs on those alone and finds the same value.
    """
    positive = values[values > 0.0]
    if len(positive) >= k:
        values = positive
    return float(np.partition(values, len(values) - k)[len(values) - k])
