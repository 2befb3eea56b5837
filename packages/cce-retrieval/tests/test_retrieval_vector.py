"""Exact cosine ranking (docs/retrieval.md#cosine, docs/retrieval.md#vector-ranking): bit-identical
to the reference's left-to-right dot product."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.model import SparseEmbeddings
from cce_retrieval.parity.numeric import score_key
from cce_retrieval.rank.vector import VectorIndex


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


# --- embeddings held as their non-zero cells ----------------------------------------------

mostly_zero = st.one_of(st.just(0.0), st.just(0.0), st.just(0.0), st.just(-0.0), finite)


def _bits(values: Sequence[float] | np.ndarray) -> list[int]:
    bits: list[int] = np.asarray(values, dtype=np.float64).view(np.uint64).tolist()
    return bits


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.lists(mostly_zero, min_size=9, max_size=9), min_size=1, max_size=25),
    st.lists(mostly_zero, max_size=12),
)
def test_sparse_cosines_are_bit_identical_to_the_dense_ones_and_the_scalar_loop(
    rows: list[list[float]], query: list[float]
) -> None:
    ids = [f"{i:04d}" for i in range(len(rows))]
    dense = VectorIndex(_matrix(rows), ids)
    sparse_matrix = SparseEmbeddings.from_dense(_matrix(rows))
    sparse = VectorIndex(sparse_matrix, ids)
    got = sparse.cosines(query)
    assert _bits(got) == _bits(dense.cosines(query))
    assert _bits(got) == _bits([scalar_cosine(query, row) for row in rows])
    assert sparse.rank_by_cosine(query) == dense.rank_by_cosine(query)
    # The cells are the matrix: -0.0 kept, +0.0 dropped.
    assert _bits(np.asarray(sparse_matrix).reshape(-1)) == _bits(_matrix(rows).reshape(-1))
    assert len(sparse_matrix.values) == sum(1 for row in rows for v in row if _bits([v])[0])


def test_a_non_finite_query_entry_reaches_every_chunk_as_in_the_dense_sum() -> None:
    rows = [[0.5, 0.0], [0.0, 0.0], [-0.0, 2.0]]
    ids = ["a", "b", "c"]
    sparse = VectorIndex(SparseEmbeddings.from_dense(_matrix(rows)), ids)
    for query in ([float("inf"), 1.0], [float("nan"), 0.0], [1.0, float("-inf")]):
        with np.errstate(invalid="ignore"):
            want = VectorIndex(_matrix(rows), ids).cosines(query)
            got = sparse.cosines(query)
        assert np.array_equal(got, want, equal_nan=True)
        assert np.isnan(got).tolist() == np.isnan(want).tolist()
        assert np.isnan(want).any()  # 0.0 * inf: the zero cells count here


def test_sparse_rows_read_back_as_the_dense_matrix() -> None:
    rng = np.random.default_rng(11)
    dense = rng.standard_normal((300, 16)) * (rng.random((300, 16)) < 0.1)
    dense[7, 3] = -0.0
    cells = SparseEmbeddings.from_dense(dense)
    assert cells.shape == (300, 16) and len(cells) == 300 and cells.ndim == 2
    assert cells.dense().T.flags.c_contiguous  # laid out by dimension, as scoring reads it
    assert cells[10:250].tobytes() == dense[10:250].tobytes()
    assert cells[-1].tobytes() == dense[-1].tobytes()
    assert cells[7].view(np.uint64)[3] == np.float64(-0.0).view(np.uint64)
    assert cells[290:999].shape == (10, 16) and cells[5:2].shape == (0, 16)
    assert cells.tolist() == dense.tolist()
    assert cells[True].tobytes() == dense[True].tobytes()  # a mask, as numpy reads a bool
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(cells, copy=False)
    assert np.asarray(cells, dtype=np.float32).dtype == np.float32
    for dim in range(16):
        rows, values = cells.column(dim)
        assert rows.tolist() == sorted(set(rows.tolist()))  # ascending, each row once
        assert values.tobytes() == dense[rows.astype(np.int64), dim].tobytes()
