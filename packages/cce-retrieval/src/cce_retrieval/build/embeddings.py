"""The index's embeddings: hash cells stacked by dimension, or a model's vectors in batches.

Why it exists: hash embeddings are mostly zeros and are kept as their non-zero cells
(`SparseEmbeddings`), stacked straight from what each file sent; other embedders are
asked in batches of 64 and their vectors checked, and cached vectors are reused only
when a live vector has their width, so an index never mixes two embedding spaces.
Freed memory is handed back to the operating system before the store is written.
"""

from __future__ import annotations

import itertools
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
from cce_retrieval.embed.unit import directionless, unit_rows, why_not_unit
from cce_retrieval.model import (
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
    """Embed with a non-hash embedder, in batches across files; reuse cached vectors
    only when they have the width of a live one. `keys` are the files' cache keys when
    there is a cache.

    The files without entries are embedded first; the first of their vectors (or, when
    every file has an entry, one chunk embedded to ask) is the live width, and a file
    whose cached vectors have another width is embedded again: a server that now
    serves another model must not leave its old vectors in the new store. Before the
    matrix is made, every vector must have one width (`one_width`).

    Fresh vectors are scaled to unit length (`cce_retrieval.embed.unit`) before they are
    cached or stored; cached ones were scaled when they were made (the cache's salt holds
    the code's digest, so an entry never predates this rule). A vector of zeros only has
    no direction: it is kept as the empty vector, the chunk's "no vector"
    (`BuildResult.vectorless_chunks` counts them).
    """
    made = _embed_outcomes(
        embedder, outcomes, [i for i, o in enumerate(outcomes) if not _cached(o)]
    )
    reusable = [i for i, outcome in enumerate(outcomes) if _cached(outcome)]
    cached_widths = {i: _cached_widths(outcomes[i]) for i in reusable}
    if any(cached_widths.values()):
        live = next((len(v) for vectors in made.values() for v in vectors if v), None)
        if live is None:
            live = _probe_width(embedder, outcomes, reusable)
        stale = [i for i in reusable if cached_widths[i] - {live}]
        made.update(_embed_outcomes(embedder, outcomes, stale))
    vectors: list[list[float]] = []
    for i, outcome in enumerate(outcomes):
        if i in made:
            vectors.extend(made[i])
            continue
        assert outcome.embeddings is not None and outcome.lengths is not None
        for row, length in zip(outcome.embeddings, outcome.lengths, strict=True):
            vectors.append(row[:length].tolist())
    one_width(embedder, vectors)
    if cache is not None:
        for i, part in sorted(made.items()):
            width = max((len(v) for v in part), default=0)
            matrix = np.zeros((len(part), width), dtype=np.float64)
            for row, vector in enumerate(part):
                matrix[row, : len(vector)] = vector
            entry = attrs.evolve(
                outcomes[i], embeddings=matrix, lengths=tuple(len(v) for v in part)
            )
            cache.put(keys[i], entry)
    return embedding_matrix(vectors)


def _cached(outcome: FileOutcome) -> bool:
    return outcome.embeddings is not None and outcome.lengths is not None


def _cached_widths(outcome: FileOutcome) -> set[int]:
    """The widths of an entry's non-empty vectors (empty ones, for empty chunks, have none)."""
    return {length for length in outcome.lengths or () if length}


def _embed_outcomes(
    embedder: Embedder, outcomes: Sequence[FileOutcome], which: Sequence[int]
) -> dict[int, list[list[float]]]:
    """The unit-length vectors of the chunks of `outcomes[i]` for each i in `which`, in
    one run of batches (the empty vector for one with no direction); BuildError naming
    the chunk whose vector cannot be scaled (NaN, infinity, a length out of range)."""
    chunks = [chunk for i in which for chunk in outcomes[i].chunks]
    if not chunks:
        return {i: [] for i in which}
    matrix, lengths = embed_contents(embedder, [chunk.content for chunk in chunks])
    refused = unit_rows(matrix, lengths)
    if refused is not None:
        chunk = chunks[refused]
        raise BuildError(
            f"embedder '{embedder.name}' returned a vector that cannot be scaled to unit "
            f"length for chunk {chunk.chunk_id} ({chunk.file_path} lines {chunk.start_line}-"
            f"{chunk.end_line}): {why_not_unit(matrix[refused])}. Aborting the index; "
            "nothing was written."
        )
    widths = lengths or [matrix.shape[1] if matrix.ndim == 2 else 0] * len(chunks)
    if matrix.ndim == 2:
        # No direction, no vector: stored empty, so one width still holds for the rest.
        blanks = directionless(matrix)
        widths = [0 if blank else width for blank, width in zip(blanks, widths, strict=True)]
    rows = iter(zip(matrix, widths, strict=True))
    made: dict[int, list[list[float]]] = {}
    for i in which:
        made[i] = [
            row[:width].tolist() for row, width in itertools.islice(rows, len(outcomes[i].chunks))
        ]
    return made


def _probe_width(embedder: Embedder, outcomes: Sequence[FileOutcome], cached: Sequence[int]) -> int:
    """The width of a live vector: one cached chunk with a non-empty vector, embedded now."""
    for i in cached:
        outcome = outcomes[i]
        for chunk, length in zip(outcome.chunks, outcome.lengths or (), strict=True):
            if length:
                matrix, lengths = embed_contents(embedder, [chunk.content])
                return lengths[0] if lengths is not None else int(matrix.shape[1])
    return 0


def one_width(embedder: Embedder, vectors: Sequence[Sequence[float]]) -> None:
    """BuildError unless every non-empty vector has the same width: the last check
    before a store is made, so a store never holds two embedding spaces."""
    widths = sorted({len(vector) for vector in vectors if vector})
    if len(widths) > 1:
        raise BuildError(
            f"embedder '{embedder.name}' gave vectors of {len(widths)} widths "
            f"({', '.join(map(str, widths))}) for one index; they cannot share one store. "
            "Aborting the index; nothing was written."
        )
