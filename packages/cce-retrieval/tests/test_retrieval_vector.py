"""Exact cosine ranking (docs/retrieval.md#cosine, docs/retrieval.md#vector-ranking): bit-identical
to the reference's left-to-right dot product."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.numeric import score_key
from cce_retrieval.vector import VectorIndex


def scalar_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The reference's `cosine`: plain dot product over min(len(a), len(b)) entries."""
    s = 0.0
    for i in range(min(len(a), len(b))):
        s += a[i] * b[i]
    return s


def _matrix(rows: Sequence[Sequence[float]]) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    matrix = np.zeros((len(rows), width), dtype=np.float64)
    for i, row in enumerate(rows):
        matrix[i, : len(row)] = row
    return matrix


def test_cosine_anchor() -> None:
    a = [0.6, 0.8] + [0.0] * 254
    b = [1.0] + [0.0] * 255
    vectors = VectorIndex(_matrix([b]), ["x"])
    assert vectors.cosines(a).tolist() == [0.6]


def test_empty_query_vector_gives_zero_cosines() -> None:
    vectors = VectorIndex(_matrix([[0.5, 0.5], [1.0, 0.0]]), ["a", "b"])
    assert vectors.cosines([]).tolist() == [0.0, 0.0]


def test_zero_chunk_index() -> None:
    vectors = VectorIndex(np.zeros((0, 0)), [])
    assert vectors.cosines([1.0, 2.0]).tolist() == []
    assert vectors.rank_by_cosine([1.0]) == []


def test_rank_keeps_every_chunk_rounded_key_then_chunk_id() -> None:
    rows = [[0.1], [-0.5], [0.0], [0.1000001], [0.1]]
    ids = ["e", "a", "b", "d", "c"]
    ranked = VectorIndex(_matrix(rows), ids).rank_by_cosine([1.0])
    # 0.1 and 0.1000001 share a 6-decimal key, so chunk id decides between c, d, e.
    assert [ids[i] for i, _ in ranked] == ["c", "d", "e", "b", "a"]
    assert ranked[-1][1] == -0.5


def test_query_longer_or_shorter_than_embeddings() -> None:
    rows = [[0.3, 0.4, 0.5], [0.3]]
    vectors = VectorIndex(_matrix(rows), ["a", "b"])
    for query in ([1.0], [1.0, 2.0, 3.0, 4.0, 5.0], [0.0, -1.0, 0.0]):
        assert vectors.cosines(query).tolist() == [scalar_cosine(query, r) for r in rows]


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(finite, max_size=12), min_size=1, max_size=20),
    st.lists(st.one_of(finite, st.just(0.0), st.just(-0.0)), max_size=14),
)
def test_cosines_are_bit_identical_to_the_scalar_loop(
    rows: list[list[float]], query: list[float]
) -> None:
    got = VectorIndex(_matrix(rows), [f"{i:04d}" for i in range(len(rows))]).cosines(query)
    assert got.tolist() == [scalar_cosine(query, row) for row in rows]


def test_bit_identity_on_long_random_vectors() -> None:
    # Long sums are where a BLAS-style reordering would show; 768 dims like real models.
    rng = random.Random(7)
    rows = [[rng.uniform(-1, 1) for _ in range(768)] for _ in range(40)]
    query = [rng.uniform(-1, 1) if rng.random() < 0.7 else 0.0 for _ in range(768)]
    vectors = VectorIndex(_matrix(rows), [f"{i:02d}" for i in range(40)])
    assert vectors.cosines(query).tolist() == [scalar_cosine(query, row) for row in rows]
    order = [i for i, _ in vectors.rank_by_cosine(query)]
    expected = sorted(range(40), key=lambda i: (-score_key(scalar_cosine(query, rows[i])), i))
    assert order == expected
