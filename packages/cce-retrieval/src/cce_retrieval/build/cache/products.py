"""What one file's build makes, as the cache keeps it: chunks, term counts, embedding cells,
and the record of a whole build's store.

Why it exists: the build, its workers and the cache exchange these values; they are
plain frozen types so that a cache hit is the very value the build would compute.
"""

from __future__ import annotations

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.model import Chunk, FloatMatrix
from cce_retrieval.rank.order import IntArray


@attrs.frozen(slots=True)
class FileOutcome:
    """What the build derives from one file: chunks, imports, token estimate, vectors.

    `embeddings` has one row per chunk (zero-padded to the widest), `lengths` the true
    length of each row; None when the embedding was not computed here (a non-hash
    embedder embeds after chunking, across files).
    """

    chunks: tuple[Chunk, ...]
    imports: tuple[str, ...]
    file_tokens: int
    embeddings: FloatMatrix | None = None
    lengths: tuple[int, ...] | None = None
    terms: TermCounts | None = None
    strict_redactions: int = 0
    """What strict protection added (strict) or would add (reference) to this file."""
    store_text: bytes | None = None
    """This file's run of chunk objects in `index.json` (`store_write.chunk_array_text`),
    made beside the embeddings so the store writer only joins bytes."""


@attrs.frozen(slots=True, eq=False)
class TermCounts:
    """Each chunk's distinct tokens and counts (BM25's input), against a file-local vocabulary.

    Chunk c owns `distinct[c]` consecutive entries; entry e is token `vocabulary[entry_terms[e]]`
    occurring `entry_counts[e]` times; `lengths[c]` is chunk c's token count.
    """

    vocabulary: tuple[str, ...]
    entry_terms: IntArray
    entry_counts: IntArray
    distinct: IntArray
    lengths: IntArray


@attrs.frozen(slots=True, eq=False)
class SparseRows:
    """Embedding rows as their non-zero cells: `where` holds row-major flat positions in
    a `rows` x `width` matrix, `values` the cells. Hash vectors are ~90% zeros, so this
    is how they travel from workers and out of cache entries."""

    rows: int
    width: int
    where: npt.NDArray[np.uint32]
    values: npt.NDArray[np.float64]

    @classmethod
    def of(cls, matrix: FloatMatrix) -> SparseRows:
        """The non-zero cells of a 2-D `matrix`, by bit pattern (a -0.0 is kept)."""
        flat = np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1)
        where = np.flatnonzero(flat.view(np.uint64)).astype(np.uint32)
        return cls(matrix.shape[0], matrix.shape[1], where, flat[where])

    def dense(self) -> FloatMatrix:
        flat = np.zeros(self.rows * self.width, dtype=np.float64)
        flat[self.where] = self.values
        return flat.reshape(self.rows, self.width)


@attrs.frozen(slots=True)
class StoreRecord:
    """The store a build of one exact set of files made, and the counts it printed.

    Kept under the files' corpus key (`BuildCache.corpus_key`) once the store is on
    disk, so that a later `cce index` of the same files can recognise that store there
    (by its digest) without reading a single file entry.
    """

    sha256: str
    size: int
    total_chunks: int
    strict_redactions: int
    embedder: str
    embed_dim: int
