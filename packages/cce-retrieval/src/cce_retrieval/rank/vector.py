"""Cosine ranking of every chunk against a query vector (docs/retrieval.md#cosine,
docs/retrieval.md#vector-ranking).

Why it exists: the vector signal of hybrid search and the whole of the `vector` backend.
The reference's cosine is a plain left-to-right dot product over `min(len(a), len(b))`
entries, and the 6-decimal rounded cosine decides ranks, so the sum must be that exact
double. `matrix @ vector` does not guarantee it (BLAS blocks and reorders the sum), so
this module keeps a transposed, contiguous copy of the embedding matrix (one row per
dimension) and adds one dimension at a time, in increasing dimension order, to a
per-chunk accumulator: for every chunk that is the reference's scalar loop. An index
whose embeddings are held as non-zero cells (`SparseEmbeddings`) is scored the same
way, adding each dimension's cells to their chunks' accumulators only. The transposed
matrix (`VectorIndex`) is built once per index; `rank_by_cosine` ranks every chunk by
rounded cosine descending, then chunk id ascending, then store order. For an embedder
whose vectors are scaled (any but hash), a chunk without a vector (an empty or all-zero
row: docs/retrieval.md#vectors-with-no-direction) is left out of the order; the hash
embedder's zero vectors keep the reference's cosine of 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cce_retrieval.model import EmbeddingMatrix, SparseEmbeddings
from cce_retrieval.rank.order import FloatArray, IntArray, id_order_ranks, ranked_prefix


class VectorIndex:
    """The embeddings of one corpus, transposed for exact per-dimension accumulation."""

    def __init__(
        self,
        embeddings: EmbeddingMatrix,
        chunk_ids: Sequence[str],
        id_ranks: IntArray | None = None,
        *,
        skip_vectorless: bool = False,
    ) -> None:
        """`skip_vectorless`: leave chunks whose row is all zeros out of every ranking
        (an embedder whose vectors are scaled to unit length, where such a row means the
        chunk has no vector)."""
        n_chunks = len(chunk_ids)
        if embeddings.ndim != 2 or embeddings.shape[0] != n_chunks:
            # A zero-chunk index (or one built without vectors) has nothing to multiply.
            embeddings = np.zeros((n_chunks, 0), dtype=np.float64)
        self.n_chunks = n_chunks
        self.dim = int(embeddings.shape[1])
        # One of the two: the cells as they are, or the dense matrix one row per dimension.
        self._sparse: SparseEmbeddings | None = None
        self._by_dimension: FloatArray | None = None
        if isinstance(embeddings, SparseEmbeddings):
            self._sparse = embeddings
        else:
            self._by_dimension = np.ascontiguousarray(embeddings.T, dtype=np.float64)
        self._id_ranks = id_order_ranks(chunk_ids) if id_ranks is None else id_ranks
        self._ranked: IntArray | None = None
        """The chunks a ranking may return, in store order; None for every chunk."""
        if skip_vectorless:
            present = self._rows_with_a_value()
            if not present.all():
                self._ranked = np.flatnonzero(present).astype(np.int64)

    def _rows_with_a_value(self) -> npt.NDArray[np.bool_]:
        """Per chunk: whether its vector holds a non-zero value."""
        present = np.zeros(self.n_chunks, dtype=bool)
        if self._by_dimension is not None:
            if self.dim:
                present = (self._by_dimension != 0.0).any(axis=0)
        elif self._sparse is not None:
            for i in range(self.dim):
                rows, values = self._sparse.column(i)
                present[rows[values != 0.0]] = True
        return present

    def cosines(self, qvec: Sequence[float]) -> FloatArray:
        """`cosine(qvec, chunk_embedding)` for every chunk, in store order, bit-exact.

        Rows shorter than the matrix are zero-padded by the store; their padding adds
        `q[i] * 0.0 = ±0.0`, which never changes a sum (see below), so each chunk still
        gets the sum over `min(len(q), len(its embedding))` terms.
        """
        sums = np.zeros(self.n_chunks, dtype=np.float64)
        for i in range(min(len(qvec), self.dim)):
            q_i = float(qvec[i])
            # Skipping q[i] == 0.0 is exact: the skipped term is ±0.0 for every finite
            # entry. The accumulator starts at +0.0 and can never become -0.0 (x + y is
            # -0.0 only when both are -0.0, and an exact cancellation rounds to +0.0), and
            # adding ±0.0 to +0.0 or to any non-zero double returns it unchanged. Hash query
            # vectors have a handful of non-zero entries, so this loop is short.
            if q_i == 0.0:
                continue
            if self._by_dimension is not None:
                sums += self._by_dimension[i] * q_i
                continue
            assert self._sparse is not None
            rows, values = self._sparse.column(i)
            if math.isfinite(q_i):
                # The same per-chunk addition for the cells there are; the others are +0.0,
                # whose term (±0.0) would leave their sums unchanged, as above.
                sums[rows] += values * q_i
            else:
                column = np.zeros(self.n_chunks, dtype=np.float64)
                column[rows] = values
                sums += column * q_i  # 0.0 * inf is nan: every chunk's term counts here
        return sums

    def rank(self, qvec: Sequence[float], limit: int | None = None) -> tuple[IntArray, FloatArray]:
        """Chunks ordered by rounded cosine desc, chunk id asc; plus cosines in store order.

        Without `limit` every chunk is ordered; with it, only the first `limit` (same prefix).
        Chunks without a vector (`skip_vectorless`) are not in the order.
        """
        cos = self.cosines(qvec)
        if self._ranked is None:
            return ranked_prefix(cos, self._id_ranks, limit), cos
        ranked = self._ranked
        return ranked[ranked_prefix(cos[ranked], self._id_ranks[ranked], limit)], cos

    def rank_by_cosine(self, qvec: Sequence[float]) -> list[tuple[int, float]]:
        """The reference's `rank_by_cosine`: (chunk index, raw cosine) for every chunk."""
        order, cos = self.rank(qvec)
        return list(zip(order.tolist(), cos[order].tolist(), strict=True))
