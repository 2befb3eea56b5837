"""The value types every part of cce-retrieval shares: chunks, the index, search results.

Why it exists: the indexing half (walk, chunk, embed, store) produces an `Index` and the
retrieval half (BM25, vector, hybrid) consumes it; both sides and the CLI agree on these
shapes and on nothing else. Embeddings live in one float64 matrix on the index (row i is
chunk i) rather than on each chunk, so ranking is vectorised and a 50,000-chunk index
does not hold 12.8 million Python floats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float64]


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
    embeddings: FloatMatrix = attrs.field(factory=_empty_matrix)
    file_imports: dict[str, list[str]] = attrs.field(factory=dict)
    file_tokens: dict[str, int] = attrs.field(factory=dict)
    spec_version: str = SPEC_VERSION
    embedding_lengths: list[int] | None = None
    embedder_model: str | None = None
    embedding_dim: int | None = None
