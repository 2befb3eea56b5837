"""The sidecar's parts as bytes: flat columns, `.npy` arrays and the manifest of one index.

Why it exists: what the sidecar holds is a function of the index alone; this module
turns an index (and its BM25 layout) into the named parts a reader memory-maps, and the
manifest that lists them (docs/index-store.md#sidecar). Writing them is `staging`'s job.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.model import EmbeddingMatrix, Index, SparseEmbeddings
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import bm25_and_ranks
from cce_retrieval.rank.graph import ImportGraph

SIDECAR_SCHEMA: Final = "cce.sidecar/v3"
"""v2 kept sparse embeddings as their cells (`SparseEmbeddings`); v3 also records each
part's SHA-256 in the manifest. A sidecar of an earlier schema is rebuilt."""


def sidecar_dir(store_path: str) -> str:
    """`<store>.sidecar`, beside the store file."""
    return store_path + ".sidecar"


def _blob(values: Iterable[str]) -> tuple[list[bytes], npt.NDArray[np.int64]]:
    """`values` as UTF-8 blocks to concatenate, and the offset of each value in them."""
    encoded = [value.encode("utf-8", "surrogatepass") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    blocks = [b"".join(encoded[first : first + 4096]) for first in range(0, len(encoded), 4096)]
    return blocks, offsets


def _table(values: Sequence[str]) -> tuple[list[str], npt.NDArray[np.int32]]:
    table: dict[str, int] = {}
    codes = np.fromiter((table.setdefault(v, len(table)) for v in values), np.int32, len(values))
    return list(table), codes


def npy_bytes(array: npt.NDArray[np.generic]) -> Iterator[bytes | memoryview]:
    """The `.npy` file of `array` (format 1.0/2.0 header, then the raw C-order data)."""
    contiguous = np.ascontiguousarray(array)
    header = {
        "descr": np.lib.format.dtype_to_descr(contiguous.dtype),
        "fortran_order": False,
        "shape": contiguous.shape,
    }
    buffer = _HeaderBuffer()
    np.lib.format.write_array_header_2_0(buffer, header)
    yield buffer.data
    yield memoryview(contiguous.reshape(-1).view(np.uint8))  # type: ignore[arg-type]  # no copy


class TransposedNpy:
    """The `.npy` bytes of `matrix.T` (float64, C order): the matrix's own memory when it
    is laid out that way, else produced a few dimensions at a time, so a million-row
    matrix is never transposed in memory at once."""

    _DIMS_PER_PIECE = 8

    def __init__(self, matrix: npt.NDArray[np.float64]) -> None:
        self._matrix = matrix
        rows, width = matrix.shape if matrix.ndim == 2 else (0, 0)
        self._width = width
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(np.float64)),
            "fortran_order": False,
            "shape": (width, rows),
        }
        buffer = _HeaderBuffer()
        np.lib.format.write_array_header_2_0(buffer, header)
        self._header = buffer.data
        self.size = len(self._header) + rows * width * 8

    def __iter__(self) -> Iterator[bytes | memoryview]:
        yield self._header
        by_dimension = self._matrix.T
        if by_dimension.dtype == np.float64 and by_dimension.flags.c_contiguous:
            # A build's matrix is laid out by dimension already (`build._stack`): its
            # memory is the data, written as it is, with no copy to allocate and fill.
            yield memoryview(by_dimension.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
            return
        for first in range(0, self._width, self._DIMS_PER_PIECE):
            block = self._matrix[:, first : first + self._DIMS_PER_PIECE]
            yield np.ascontiguousarray(block.T, dtype=np.float64).tobytes()


class _HeaderBuffer:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


@attrs.frozen(slots=True, eq=False)
class SidecarParts:
    """Everything a sidecar holds, computed from an index but not yet written.

    Made by `prepare_sidecar`, which needs only the index, so it can run while the store
    itself is being written; `write_sidecar` then only writes files.
    """

    blobs: dict[str, list[bytes]]
    arrays: dict[str, npt.NDArray[np.generic]]
    embeddings: EmbeddingMatrix
    manifest: dict[str, object]
    """The manifest without the store's digest, size and the parts' file names."""


@attrs.frozen(slots=True, eq=False)
class _Parts:
    """Some of a sidecar's parts and manifest fields."""

    blobs: dict[str, list[bytes]]
    arrays: dict[str, npt.NDArray[np.generic]]
    fields: dict[str, object]


def column_parts(index: Index) -> _Parts:
    """The parts that hold the chunks' own fields and the import graph (no BM25)."""
    graph = ImportGraph.build([c.file_path for c in index.chunks], index.file_imports)
    chunks = index.chunks
    paths, path_codes = _table([c.file_path for c in chunks])
    kinds, kind_codes = _table([f"{c.chunk_type}\0{c.kind}\0{c.language}" for c in chunks])
    ids, ids_offsets = _blob(c.chunk_id for c in chunks)
    content, content_offsets = _blob(c.content for c in chunks)
    numbers = np.fromiter(
        (n for c in chunks for n in (c.start_line, c.end_line, c.token_count)),
        dtype=np.int64,
        count=3 * len(chunks),
    ).reshape(len(chunks), 3)
    return _Parts(
        {"ids": ids, "content": content},
        {
            "numbers": numbers,
            "path_codes": path_codes,
            "kind_codes": kind_codes,
            "ids_offsets": ids_offsets,
            "content_offsets": content_offsets,
        },
        {"paths": paths, "kinds": kinds, "graph_edges": sorted(graph.edges)},
    )


def bm25_parts(bm25_index: Bm25Index, id_ranks: npt.NDArray[np.int64]) -> _Parts:
    """The parts that hold the BM25 statistics and the chunk-id ranks. Raises ValueError
    when the terms are not numbered in first-occurrence order."""
    bm25 = bm25_index.arrays()
    terms = list(bm25.term_ids)
    if any(bm25.term_ids[t] != i for i, t in enumerate(terms)):
        raise ValueError("BM25 term ids are not in first-occurrence order")
    # Tokens are runs of ASCII word bytes, so one newline-joined text holds them all.
    terms_blob = "\n".join(terms).encode("ascii")
    return _Parts(
        {"terms": [terms_blob]},
        {
            "bm25_offsets": bm25.offsets,
            "bm25_docs": bm25.posting_docs,
            "bm25_freqs": bm25.posting_freqs,
            "bm25_doc_lengths": bm25.doc_lengths,
            "id_ranks": id_ranks,
        },
        {"bm25_avgdl": bm25.avgdl, "terms": len(terms)},
    )


def manifest_document(
    index: Index, columns: _Parts, bm25_fields: dict[str, object]
) -> dict[str, object]:
    rows, width = index.embeddings.shape if index.embeddings.ndim == 2 else (0, 0)
    return {
        "chunks": len(index.chunks),
        "embedding_rows": rows,
        "embedding_width": width,
        "embedder": index.embedder,
        "spec_version": index.spec_version,
        "embedding_lengths": index.embedding_lengths,
        "embedder_model": index.embedder_model,
        "embedding_dim": index.embedding_dim,
        "file_imports": index.file_imports,
        "file_tokens": index.file_tokens,
        "paths": columns.fields["paths"],
        "kinds": columns.fields["kinds"],
        "bm25_avgdl": bm25_fields["bm25_avgdl"],
        "terms": bm25_fields["terms"],
        "graph_edges": columns.fields["graph_edges"],
    }


_SPARSE_BELOW: Final = 1 / 3
"""A dense matrix with fewer non-zero cells than this share is stored as its cells (12
bytes a cell against 8 for every dense one: then well under half the size)."""


def stored_embeddings(index: Index) -> EmbeddingMatrix:
    """The embeddings as the sidecar keeps them: sparse when they are mostly zeros (an
    index parsed from `index.json` has a dense matrix even for hash embeddings)."""
    if isinstance(index.embeddings, SparseEmbeddings):
        return index.embeddings
    rows = index.embeddings.shape[0] if index.embeddings.ndim == 2 else 0
    dense = index.embeddings[:rows]
    if dense.ndim != 2 or not dense.size:
        return dense
    bits = np.ascontiguousarray(dense, dtype=np.float64).reshape(-1).view(np.uint64)
    nonzero = np.count_nonzero(bits)
    return SparseEmbeddings.from_dense(dense) if nonzero < _SPARSE_BELOW * dense.size else dense


def prepare_sidecar(index: Index) -> SidecarParts:
    """The sidecar of `index`, in memory (the BM25 statistics from the build's counts when
    it offered them). Raises ValueError when they are not in first-occurrence order."""
    bm25 = bm25_parts(*bm25_and_ranks(index))
    columns = column_parts(index)
    return SidecarParts(
        {**columns.blobs, **bm25.blobs},
        {**columns.arrays, **bm25.arrays},
        stored_embeddings(index),
        manifest_document(index, columns, bm25.fields),
    )


SPARSE_PARTS: Final = ("embedding_starts", "embedding_rows", "embedding_values")
"""The parts of sparse embeddings (`SparseEmbeddings`), which replace `embeddings_by_dim`."""


PART_ORDER: Final = (
    "ids",
    "content",
    "embeddings_by_dim",
    *SPARSE_PARTS,
    "numbers",
    "path_codes",
    "kind_codes",
    "ids_offsets",
    "content_offsets",
    "bm25_offsets",
    "bm25_docs",
    "bm25_freqs",
    "bm25_doc_lengths",
    "id_ranks",
    "terms",
)
"""The parts in the manifest's order (whatever order they are written in); a sidecar has
either `embeddings_by_dim` or the sparse parts."""
