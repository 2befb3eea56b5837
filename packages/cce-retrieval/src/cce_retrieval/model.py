"""The value types every part of cce-retrieval shares: chunks, the index, search results.

Why it exists: the indexing half (walk, chunk, embed, store) produces an `Index` and the
retrieval half (BM25, vector, hybrid) consumes it; both sides and the CLI agree on these
shapes and on nothing else. Embeddings live in one float64 matrix on the index (row i is
chunk i) rather than on each chunk, so ranking is vectorised and a 50,000-chunk index
does not hold 12.8 million Python floats. A matrix that is mostly zeros (the hash
embedder's: about 90%) may instead be a `SparseEmbeddings`, its non-zero cells only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float64]


@attrs.frozen(slots=True, eq=False)
class SparseEmbeddings:
    """An `n_rows` x `width` float64 matrix held as its non-zero cells, by dimension.

    The cells of dimension d are rows `rows[starts[d]:starts[d + 1]]` (ascending, each
    once) with values `values[starts[d]:starts[d + 1]]`; every other cell is +0.0. A cell
    counts as non-zero by its bit pattern, so a -0.0 is kept as a cell.

    Why: a hash embedding has about 25 non-zero entries in 256, so the dense matrix of a
    stdlib index (72k chunks) is 147 MB of which 133 MB are zeros, and at a million
    chunks it is 2 GB. Grouped by dimension, cosine scoring touches only the cells of
    the query's non-zero dimensions (`vector.VectorIndex`), and the sidecar stores the
    cells as they are. Code that wants the matrix itself gets it from `dense`,
    `np.asarray` or row slices (`matrix[a:b]`, `matrix[i]`), which build it on demand.
    """

    n_rows: int
    width: int
    starts: npt.NDArray[np.int64]
    rows: npt.NDArray[np.integer]
    values: FloatMatrix

    @classmethod
    def from_cells(
        cls,
        n_rows: int,
        width: int,
        cell_rows: npt.NDArray[np.integer],
        dims: npt.NDArray[np.integer],
        values: FloatMatrix,
    ) -> SparseEmbeddings:
        """The matrix whose non-zero cells are (`cell_rows[i]`, `dims[i]`) = `values[i]`,
        given in row-major order (by row, then by dimension)."""
        # Stable, so each dimension's rows stay ascending (numpy sorts small ints by radix).
        order = np.argsort(dims.astype(np.uint16 if width <= 1 << 16 else np.int64), kind="stable")
        starts = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(dims, minlength=width)[:width], out=starts[1:])
        row_type = np.uint32 if n_rows <= 1 << 32 else np.int64
        return cls(
            n_rows,
            width,
            starts,
            cell_rows[order].astype(row_type, copy=False),
            np.ascontiguousarray(values[order], dtype=np.float64),
        )

    @classmethod
    def from_dense(cls, matrix: FloatMatrix) -> SparseEmbeddings:
        """The non-zero cells of a 2-D `matrix`."""
        rows, width = matrix.shape
        flat = np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1)
        positions = np.flatnonzero(flat.view(np.uint64))  # -0.0 is a cell
        cell_rows, dims = np.divmod(positions, width) if width else (positions, positions)
        return cls.from_cells(rows, width, cell_rows, dims, flat[positions])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.width)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype[np.float64]:
        return np.dtype(np.float64)

    def __len__(self) -> int:
        return self.n_rows

    def column(self, dim: int) -> tuple[npt.NDArray[np.integer], FloatMatrix]:
        """The rows and values of dimension `dim`'s non-zero cells."""
        first, end = int(self.starts[dim]), int(self.starts[dim + 1])
        return self.rows[first:end], self.values[first:end]

    def dense(self) -> FloatMatrix:
        """The matrix, laid out one dimension after another (its transpose is C-ordered)."""
        by_dimension = np.zeros((self.width, self.n_rows), dtype=np.float64)
        dims = np.repeat(np.arange(self.width), np.diff(self.starts))
        by_dimension[dims, self.rows] = self.values
        return by_dimension.T

    def row_block(self, first: int, end: int) -> FloatMatrix:
        """Rows `first` to `end` (exclusive) as a dense, C-ordered matrix."""
        first, end = max(first, 0), min(end, self.n_rows)
        block = np.zeros((max(end - first, 0), self.width), dtype=np.float64)
        if end <= first:
            return block
        for dim in range(self.width):
            rows, values = self.column(dim)
            lo, hi = np.searchsorted(rows, (first, end))
            block[rows[lo:hi].astype(np.int64) - first, dim] = values[lo:hi]
        return block

    def __getitem__(self, key: int | slice | tuple[int | slice, ...]) -> FloatMatrix:
        """`matrix[key]` as the dense matrix gives it; rows (`matrix[i]`, `matrix[a:b]`)
        are made from the cells alone, anything else from `dense`."""
        if isinstance(key, slice) and key.step in (None, 1):
            first, end, _ = key.indices(self.n_rows)
            return self.row_block(first, end)
        if isinstance(key, int) and not isinstance(key, bool):
            row = key + self.n_rows if key < 0 else key
            if not 0 <= row < self.n_rows:
                raise IndexError(f"row {key} out of range for {self.n_rows} rows")
            one: FloatMatrix = self.row_block(row, row + 1)[0]
            return one
        picked: FloatMatrix = self.dense()[key]
        return picked

    def __array__(
        self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
    ) -> FloatMatrix:
        if copy is False:
            raise ValueError("sparse embeddings cannot be read as an array without a copy")
        matrix = self.dense()
        return matrix if dtype is None else matrix.astype(dtype)

    def tolist(self) -> list[list[float]]:
        rows: list[list[float]] = self.dense().tolist()
        return rows


EmbeddingMatrix = FloatMatrix | SparseEmbeddings
"""An index's embeddings: dense, or as non-zero cells (`SparseEmbeddings`)."""


@attrs.frozen(slots=True)
class Chunk:
    """One indexed span of a file, with the persisted fields of the store
    (docs/index-store.md#chunk-fields)."""

    chunk_id: str
    file_path: str
    start_line: int
    end_line: int
    chunk_type: str
    kind: str
    language: str
    content: str
    token_count: int

    def __reduce__(self) -> tuple[type[Chunk], tuple[str, str, int, int, str, str, str, str, int]]:
        # Build workers send every chunk back to the main process: the field tuple
        # pickles in a third of the time of attrs' per-field state dict, and loads by one
        # `__init__` call instead of a `__setattr__` per field.
        return Chunk, (
            self.chunk_id,
            self.file_path,
            self.start_line,
            self.end_line,
            self.chunk_type,
            self.kind,
            self.language,
            self.content,
            self.token_count,
        )


@attrs.frozen(slots=True)
class SearchResult:
    """One ranked row (docs/retrieval.md#data-model); `score` is the raw, unrounded double."""

    rank: int
    chunk_id: str
    file_path: str
    start_line: int
    end_line: int
    chunk_type: str
    kind: str
    score: float
    content: str

    @classmethod
    def from_chunk(cls, chunk: Chunk, score: float, rank: int = 0) -> SearchResult:
        return cls(
            rank=rank,
            chunk_id=chunk.chunk_id,
            file_path=chunk.file_path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            chunk_type=chunk.chunk_type,
            kind=chunk.kind,
            score=score,
            content=chunk.content,
        )


def _empty_matrix() -> FloatMatrix:
    return np.zeros((0, 0), dtype=np.float64)


SPEC_VERSION: Final = "1.0"
"""The store format version every index this engine builds records."""


@attrs.define(slots=False, eq=False)
class Index:
    """An indexed corpus: chunks in store order plus what the store persists beside them.

    `embeddings[i]` is chunk i's vector; a store chunk with no embedding is a zero row
    (its cosine with anything is 0.0, exactly like the reference's empty vector), and
    `embedding_lengths[i]` keeps its true length. Derived structures (BM25 postings,
    import graph) are built on first use and cached; they are never persisted.

    `embedder_model` and `embedding_dim` record the embedding space of an index built by
    an embedder with models (None for the hash embedder, whose store bytes stay the
    reference's); a query must be embedded in the same space
    (docs/backends.md#embedding-space).
    """

    embedder: str
    chunks: Sequence[Chunk]
    embeddings: EmbeddingMatrix = attrs.field(factory=_empty_matrix)
    file_imports: dict[str, list[str]] = attrs.field(factory=dict)
    file_tokens: dict[str, int] = attrs.field(factory=dict)
    spec_version: str = SPEC_VERSION
    embedding_lengths: list[int] | None = None
    embedder_model: str | None = None
    embedding_dim: int | None = None
