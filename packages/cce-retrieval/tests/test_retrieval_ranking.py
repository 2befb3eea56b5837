"""`ranked_prefix` orders exactly like keying every score, on the values that break it
most easily: ties at the rounding boundary, duplicates, negatives and -0.0."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.rank.order import ranked_prefix, score_keys, top_order

# Scores a hair either side of a 6-decimal rounding boundary, plus exact repeats.
_BOUNDARY = st.integers(-3_000_000, 3_000_000).flatmap(
    lambda m: st.sampled_from(
        [
            (m + 0.5) / 1e6,
            np.nextafter((m + 0.5) / 1e6, np.inf),
            np.nextafter((m + 0.5) / 1e6, -np.inf),
            m / 1e6,
            -0.0,
        ]
    )
)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.one_of(_BOUNDARY, st.floats(-40.0, 40.0)), min_size=0, max_size=400),
    limit=st.integers(1, 25),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_prefix_equals_the_fully_keyed_order(
    values: list[float], limit: int, seed: int
) -> None:
    scores = np.asarray(values, dtype=np.float64)
    id_ranks = np.random.default_rng(seed).permutation(len(values)).astype(np.int64)
    expected = top_order(score_keys(scores), id_ranks, limit)
    assert ranked_prefix(scores, id_ranks, limit).tolist() == expected.tolist()


def test_a_large_tie_at_the_cut_is_broken_by_chunk_id() -> None:
    # 1,000 scores with one key; the first 10 by id rank must come back, in id order.
    scores = np.full(1_000, 0.25, dtype=np.float64)
    scores[::7] = np.nextafter(0.25, 0.0)  # a different double, the same key
    id_ranks = np.arange(1_000, dtype=np.int64)[::-1].copy()
    got = ranked_prefix(scores, id_ranks, 10)
    assert got.tolist() == list(range(999, 989, -1))
    assert got.tolist() == top_order(score_keys(scores), id_ranks, 10).tolist()


@settings(max_examples=300, deadline=None)
@given(
    positives=st.lists(st.one_of(_BOUNDARY, st.floats(1e-9, 40.0)), min_size=0, max_size=60),
    zeros=st.integers(0, 2_000),
    negatives=st.lists(st.floats(-40.0, -1e-9), min_size=0, max_size=30),
    limit=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_prefix_of_mostly_zero_scores_equals_the_fully_keyed_order(
    positives: list[float], zeros: int, negatives: list[float], limit: int, seed: int
) -> None:
    # Cosines against a query are mostly 0.0: the k-th largest is then looked for among
    # the positive scores alone, as long as there are k of them, and must be the same.
    rng = np.random.default_rng(seed)
    scores = np.asarray([*positives, *([0.0] * zeros), *([-0.0] * (zeros // 3)), *negatives])
    scores = scores[rng.permutation(len(scores))]
    id_ranks = rng.permutation(len(scores)).astype(np.int64)
    expected = top_order(score_keys(scores), id_ranks, limit)
    assert ranked_prefix(scores, id_ranks, limit).tolist() == expected.tolist()
