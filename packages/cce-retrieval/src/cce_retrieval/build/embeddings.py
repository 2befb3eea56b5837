"""The index's embeddings: hash cells stacked by dimension, or a model's vectors in batches.

Why it exists: hash embeddings are mostly zeros and are kept as their non-zero cells
(`SparseEmbeddings`), stacked straight from what each file sent; other embedders are
asked in batches of 64 and their vectors checked. Freed memory is handed back to the
operating system before the store is written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.build.cache import (
    BuildCache,
    FileOutcome,
    SparseRows,
)
from cce_retrieval.build.errors import BuildError
from cce_retrieval.embed.hashing import EMBED_DIM, Embedder, EmbedError, check_vectors
from cce_retrieval.embed.unit import unit_rows, why_not_unit
from cce_retrieval.model import (
    Chunk,
    FloatMatrix,
    SparseEmbeddings,
)
from cce_retrieval.store.load import embedding_matrix

EMBED_BATCH_SIZE: Final = 64


@runtime_checkable
class MatrixEmbedder(Protocol):
    """An embedder that can embed a whole corpus as one matrix (the hash fast path)."""

    def embed_matrix(self, texts: Sequence[str]) -> FloatMatrix: ...


def embed_in_batches(embedder: Embedder, contents: Sequence[str]) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(contents), EMBED_BATCH_SIZE):
        batch = list(contents[start : start + EMBED_BATCH_SIZE])
        try:
            got = embedder.try_embed_batch(batch)
        except EmbedError as err:
            raise BuildError(f"{err}. Aborting the index; nothing was written.") from err
        if len(got) != len(batch):
            raise BuildError(
                f"embedder '{embedder.name}' returned {len(got)} vector(s) for "
                f"{len(batch)} chunk(s) (chunks {start}..{start + len(batch) - 1}). "
                "Aborting the index; nothing was written."
            )
        vectors.extend(got)
    # Across batches too: one NaN or one odd dimension must not reach a store.
    try:
        check_vectors(vectors, contents, f"embedder '{embedder.name}'")
    except EmbedError as err:
        raise BuildError(f"{err}. Aborting the index; nothing was written.") from err
    return vectors


def embed_contents(
    embedder: Embedder, contents: Sequence[str]
) -> tuple[FloatMatrix, list[int] | None]:
    """Embed chunk contents in order: the (n, dim) matrix and ragged lengths if any."""
    if isinstance(embedder, MatrixEmbedder):
        return embedder.embed_matrix(contents), None
    return embedding_matrix(embed_in_batches(embedder, contents))


def release_free_memory() -> None:
    """Hand the heap's free pages back to the operating system (glibc's `malloc_trim`).

    A build reads, decodes and drops gigabytes of short-lived objects (file texts,
    worker results, cache entries); glibc keeps the freed pages, so the process's
    resident size stays at its high-water mark while the store is written, which at a
    million chunks is the difference between fitting in 8 GB or not. Elsewhere (or when
    the C library is not glibc) this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def stack_embeddings(parts: list[FloatMatrix | SparseRows], rows: int) -> SparseEmbeddings:
    """Per-file hash rows (`rows` of them in all) as one matrix of their non-zero cells;
    `parts` drops each part once its cells are taken.

    Hash vectors are about 90% zeros: the cells alone are a tenth of the dense matrix,
    which is never made (`SparseEmbeddings`; cosine scoring and the sidecar use the
    cells as they are).
    """
    # Cells as 32-bit rows and 16-bit dimensions: a third of the memory of flat 64-bit
    # positions, and every temporary here is new memory.
    row_type: np.dtype[np.integer] = np.dtype(np.uint32 if rows <= 1 << 32 else np.int64)
    cell_rows: list[npt.NDArray[np.integer]] = []
    dims: list[npt.NDArray[np.integer]] = []
    values: list[FloatMatrix] = []
    first = 0
    for i, part in enumerate(parts):
        cells = part if isinstance(part, SparseRows) else SparseRows.of(part)
        assert cells.width == EMBED_DIM or cells.rows == 0
        part_rows, part_dims = np.divmod(cells.where, EMBED_DIM)
        chunk_rows = part_rows.astype(row_type)
        chunk_rows += first
        cell_rows.append(chunk_rows)
        dims.append(part_dims.astype(np.uint16))
        values.append(cells.values)
        first += cells.rows
        parts[i] = _NO_ROWS
    assert first <= rows, f"{first} embedding rows for {rows} chunks"
    if not values:
        empty = np.zeros(0, dtype=np.uint16)
        return SparseEmbeddings.from_cells(
            rows, EMBED_DIM, empty, empty, np.zeros(0, dtype=np.float64)
        )
    return SparseEmbeddings.from_cells(
        rows, EMBED_DIM, np.concatenate(cell_rows), np.concatenate(dims), np.concatenate(values)
    )


_NO_ROWS: Final = np.zeros((0, EMBED_DIM), dtype=np.float64)


def embed_generic(
    embedder: Embedder,
    outcomes: list[FileOutcome],
    cache: BuildCache | None,
    keys: Sequence[bytes],
) -> tuple[FloatMatrix, list[int] | None]:
    """Embed with a non-hash embedder, in batches across files; reuse cached vectors.
    `keys` are the files' cache keys when there is a cache.

    Fresh vectors are scaled to unit length (`cce_retrieval.embed.unit`) before they are
    cached or stored; cached ones were scaled when they were made (the cache's salt holds
    the code's digest, so an entry never predates this rule).
    """
    vectors: list[list[float]] = []
    fresh: list[str] = []
    fresh_at: list[int] = []
    fresh_chunks: list[Chunk] = []
    for outcome in outcomes:
        if outcome.embeddings is not None and outcome.lengths is not None:
            for row, length in zip(outcome.embeddings, outcome.lengths, strict=True):
                vectors.append(row[:length].tolist())
        else:
            for chunk in outcome.chunks:
                fresh_at.append(len(vectors))
                fresh.append(chunk.content)
                fresh_chunks.append(chunk)
                vectors.append([])
    fresh_matrix, fresh_lengths = embed_contents(embedder, fresh)
    refused = unit_rows(fresh_matrix, fresh_lengths)
    if refused is not None:
        chunk = fresh_chunks[refused]
        raise BuildError(
            f"embedder '{embedder.name}' returned a vector that cannot be scaled to unit "
            f"length for chunk {chunk.chunk_id} ({chunk.file_path} lines {chunk.start_line}-"
            f"{chunk.end_line}): {why_not_unit(fresh_matrix[refused])}. Aborting the index; "
            "nothing was written."
        )
    widths = fresh_lengths or [fresh_matrix.shape[1] if fresh_matrix.ndim == 2 else 0] * len(fresh)
    for at, row, width in zip(fresh_at, fresh_matrix, widths, strict=True):
        vectors[at] = row[:width].tolist()
    if cache is not None:
        first = 0
        for key, outcome in zip(keys, outcomes, strict=True):
            count = len(outcome.chunks)
            if outcome.embeddings is None:
                part = vectors[first : first + count]
                width = max((len(v) for v in part), default=0)
                matrix = np.zeros((count, width), dtype=np.float64)
                for row, vector in enumerate(part):
                    matrix[row, : len(vector)] = vector
                entry = attrs.evolve(
                    outcome, embeddings=matrix, lengths=tuple(len(v) for v in part)
                )
                cache.put(key, entry)
            first += count
    return embedding_matrix(vectors)
