"""The derived, query-independent structures of an index, built once and shared.

Why it exists: every backend needs the same structures of an `Index` - BM25 postings,
the transposed embedding matrix, the import graph, each file's chunk indices - and
building them costs far more than one query. `RetrievalIndex.build` is the explicit
build step: it takes a snapshot (the chunks as a tuple, copies of the matrix and the
import table), so a derived structure never disagrees with itself when the `Index` it
came from is changed afterwards. `retrieval_index` is the cache in front of it, keyed
on the index object and validated against a stamp of the index's fields, so an index
whose chunk list, embeddings or import table was replaced or resized is rebuilt rather
than served stale. A `RetrievalIndex` also keeps one BM25 view per (k1, b) it is asked
for.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence

import attrs

from cce_retrieval.embed.registry import embedder_spec
from cce_retrieval.model import Chunk, Index
from cce_retrieval.parity.text import ascii_lower
from cce_retrieval.rank.bm25 import BM25_B, BM25_K1, Bm25Index
from cce_retrieval.rank.graph import ImportGraph
from cce_retrieval.rank.order import FloatArray, IntArray, id_order_ranks
from cce_retrieval.rank.vector import VectorIndex
from cce_retrieval.store.chunks import StoredChunks

__all__ = [
    "RetrievalIndex",
    "bm25_and_ranks",
    "invalidate",
    "offer_bm25",
    "prime",
    "retrieval_index",
]


class RetrievalIndex:
    """Derived data of one snapshot of an `Index`, reused by every query and backend.

    Holds the BM25 postings, the transposed embedding matrix, the import graph, each
    file's chunk indices (store order) and lazily lowercased chunk contents and paths
    (lowercased only when a chunk becomes a candidate, so a 50,000-chunk index does not
    keep a second copy of every content).
    """

    def __init__(
        self,
        index: Index,
        bm25: Bm25Index | None = None,
        id_ranks: IntArray | None = None,
        graph: ImportGraph | Callable[[], ImportGraph] | None = None,
    ) -> None:
        """Derive everything from `index`; `bm25`, `id_ranks` and `graph` may come
        ready-made from the store's sidecar (docs/index-store.md#sidecar)."""
        stored = index.chunks if isinstance(index.chunks, StoredChunks) else None
        # A sidecar's chunks are immutable already; any other list is snapshotted.
        self.chunks: Sequence[Chunk] = stored if stored is not None else tuple(index.chunks)
        chunk_ids: Sequence[str] = (
            stored.chunk_ids() if stored is not None else [c.chunk_id for c in self.chunks]
        )
        offered = _OFFERED.pop(index, None)
        if bm25 is None and offered is not None and offered[0] == _Stamp.of(index):
            bm25, id_ranks = offered[1]()
        if id_ranks is None:
            id_ranks = id_order_ranks(chunk_ids)
        if bm25 is None:
            bm25 = Bm25Index.build([c.content for c in self.chunks], chunk_ids, id_ranks)
        self.id_ranks = id_ranks
        self.bm25 = bm25
        # VectorIndex keeps its own transposed copy (none when the sidecar's matrix is
        # already by dimension); the graph copies what it resolves.
        self.vectors = VectorIndex(
            index.embeddings,
            chunk_ids,
            id_ranks,
            skip_vectorless=not embedder_spec(index.embedder, fallback=True).unit_vectors,
        )
        if graph is None:
            paths = (
                [stored.file_path(i) for i in range(len(stored))]
                if stored is not None
                else [c.file_path for c in self.chunks]
            )
            imports = {path: list(modules) for path, modules in index.file_imports.items()}
            graph = functools.partial(ImportGraph.build, paths, imports)
        self._graph: ImportGraph | Callable[[], ImportGraph] = graph
        self._chunks_by_file: dict[str, list[int]] | None = None
        self._bm25_views: dict[tuple[float, float], Bm25Index] = {(BM25_K1, BM25_B): self.bm25}
        self._content_lower: dict[int, str] = {}
        self._path_lower: dict[int, str] = {}

    @property
    def graph(self) -> ImportGraph:
        """The import graph, resolved on first use (only graph expansion needs it)."""
        if not isinstance(self._graph, ImportGraph):
            self._graph = self._graph()
        return self._graph

    @property
    def chunks_by_file(self) -> dict[str, list[int]]:
        """Each file's chunk indices in store order, made on first use."""
        if self._chunks_by_file is None:
            if isinstance(self.chunks, StoredChunks):
                self._chunks_by_file = self.chunks.indices_by_file()
            else:
                by_file: dict[str, list[int]] = {}
                for i, chunk in enumerate(self.chunks):
                    by_file.setdefault(chunk.file_path, []).append(i)
                self._chunks_by_file = by_file
        return self._chunks_by_file

    @classmethod
    def build(cls, index: Index) -> RetrievalIndex:
        """Build the derived data of `index` now, without consulting or filling the cache."""
        return cls(index)

    def bm25_with(self, k1: float, b: float) -> Bm25Index:
        """The BM25 statistics scored with `k1` and `b` (postings shared, norms per pair)."""
        key = (k1, b)
        view = self._bm25_views.get(key)
        if view is None:
            view = self._bm25_views[key] = self.bm25.with_parameters(k1, b)
        return view

    def content_lower(self, idx: int) -> str:
        text = self._content_lower.get(idx)
        if text is None:
            text = self._content_lower[idx] = ascii_lower(self.chunks[idx].content)
        return text

    def path_lower(self, idx: int) -> str:
        text = self._path_lower.get(idx)
        if text is None:
            text = self._path_lower[idx] = ascii_lower(self.chunks[idx].file_path)
        return text

    def cosines(self, qvec: Sequence[float]) -> FloatArray:
        """Cosine of every chunk with `qvec`; all 0.0 for an empty query vector."""
        return self.vectors.cosines(qvec)


@attrs.frozen(slots=True)
class _Stamp:
    """What must be unchanged for a cached `RetrievalIndex` to still describe an index."""

    chunks: int
    n_chunks: int
    embeddings: int
    shape: tuple[int, ...]
    file_imports: int
    n_imports: int

    @classmethod
    def of(cls, index: Index) -> _Stamp:
        return cls(
            id(index.chunks),
            len(index.chunks),
            id(index.embeddings),
            tuple(index.embeddings.shape),
            id(index.file_imports),
            len(index.file_imports),
        )


_CACHE: weakref.WeakKeyDictionary[Index, tuple[_Stamp, RetrievalIndex]] = (
    weakref.WeakKeyDictionary()
)


def retrieval_index(index: Index) -> RetrievalIndex:
    """The cached derived data of `index`: built on first use, dropped with the index.

    Rebuilt when a field it was derived from was replaced or changed length; after
    changing chunks in place, call `invalidate(index)` (or use `RetrievalIndex.build`).
    """
    stamp = _Stamp.of(index)
    entry = _CACHE.get(index)
    if entry is None or entry[0] != stamp:
        entry = _CACHE[index] = (stamp, RetrievalIndex(index))
    return entry[1]


Bm25Factory = Callable[[], tuple[Bm25Index, IntArray]]
_OFFERED: weakref.WeakKeyDictionary[Index, tuple[_Stamp, Bm25Factory]] = weakref.WeakKeyDictionary()


def offer_bm25(index: Index, factory: Bm25Factory) -> None:
    """Let the first `RetrievalIndex` of `index` take its BM25 (and chunk-id ranks) from
    `factory`, e.g. from token counts made while building, instead of re-tokenizing.

    Taken only while `index`'s fields are the ones it was offered with.
    """
    _OFFERED[index] = (_Stamp.of(index), factory)


def bm25_and_ranks(index: Index) -> tuple[Bm25Index, IntArray]:
    """`index`'s BM25 and chunk-id ranks without building the other derived structures.

    From the cached `RetrievalIndex` when there is one, else from what the build offered
    (kept for the first `RetrievalIndex`), else built from the chunks.
    """
    entry = _CACHE.get(index)
    stamp = _Stamp.of(index)
    if entry is not None and entry[0] == stamp:
        return entry[1].bm25, entry[1].id_ranks
    offered = _OFFERED.get(index)
    if offered is not None and offered[0] == stamp:
        made = offered[1]()
        _OFFERED[index] = (stamp, lambda: made)
        return made
    chunk_ids = [c.chunk_id for c in index.chunks]
    id_ranks = id_order_ranks(chunk_ids)
    bm25 = Bm25Index.build([c.content for c in index.chunks], chunk_ids, id_ranks)
    return bm25, id_ranks


def prime(index: Index, derived: RetrievalIndex) -> None:
    """Serve `derived` (made from `index`'s own data, e.g. its sidecar) for `index`."""
    _CACHE[index] = (_Stamp.of(index), derived)


def invalidate(index: Index) -> None:
    """Forget the cached derived data of `index`; the next query rebuilds it."""
    _CACHE.pop(index, None)
