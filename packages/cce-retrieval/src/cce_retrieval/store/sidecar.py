"""The binary sidecar beside a store: what `index.json` holds, in formats made for loading.

Why it exists: parsing a large `index.json` (turning embedding text back into floats,
building a Python object per value) and rebuilding BM25 from every chunk's text costs
seconds per process, for a query that runs in milliseconds. `index.json` stays the
source of truth, byte-identical to the reference; this module keeps, beside it, the
same data and the derived BM25 statistics as numpy arrays and flat byte columns that
load by memory-mapping, so `cce search` reads only what a query touches.

Layout (docs/index-store.md#sidecar): a directory `<store>.sidecar/` holding, per store
digest `D` (the SHA-256 of the store's bytes), files `D-<part>.npy` / `D-<part>.bin`
and, written last, the manifest `D.json` naming every part with its byte size. A
sidecar is used only when the store's current bytes hash to `D` and every part has the
recorded size; otherwise the store is parsed the ordinary way and the sidecar rebuilt.
Each part is written atomically (temp file, fsync, rename) and parts of a digest never
change once written, so a run killed at any moment leaves either a complete sidecar
or one without a manifest, which is never trusted.

Owns: `prepare_sidecar`, `stage_sidecar`, `start_bm25_staging` (`Bm25Staging`),
`stage_index_sidecar` and `write_sidecar`, `remove_dead_staging`, `sidecar_is_current`,
`has_sidecar_manifest`, `store_holds`, `load_store` (the store with its sidecar),
`sidecar_dir`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import itertools
import json
import mmap
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, cast

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.build.processes import Forked, run_forked
from cce_retrieval.model import EmbeddingMatrix, FloatMatrix, Index, SparseEmbeddings
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import Bm25Factory, RetrievalIndex, bm25_and_ranks, prime
from cce_retrieval.rank.graph import ImportGraph
from cce_retrieval.store.chunks import StoredChunks, StoredColumns
from cce_retrieval.store.fileio import (
    describe_os_error,
    is_running,
    write_atomic,
    write_atomic_parts,
)
from cce_retrieval.store.load import parse_index
from cce_retrieval.store.paths import StoreError

SIDECAR_SCHEMA: Final = "cce.sidecar/v2"
"""v2 keeps sparse embeddings as their cells (`SparseEmbeddings`); a v1 sidecar is rebuilt."""
_STATUS_SUFFIX: Final = ".status.json"
_HASH_BLOCK: Final = 1 << 22


def sidecar_dir(store_path: str) -> str:
    """`<store>.sidecar`, beside the store file."""
    return store_path + ".sidecar"


def file_sha256(path: str) -> tuple[str, int]:
    """(SHA-256 hex, size) of a file, read in blocks. Raises OSError."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


# ---------------------------------------------------------------------------------------
# Columns: strings as one UTF-8 blob plus offsets; repeated strings as a table + codes
# ---------------------------------------------------------------------------------------


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


def _npy_bytes(array: npt.NDArray[np.generic]) -> Iterator[bytes | memoryview]:
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


class _TransposedNpy:
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


def _column_parts(index: Index) -> _Parts:
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


def _bm25_parts(bm25_index: Bm25Index, id_ranks: npt.NDArray[np.int64]) -> _Parts:
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


def _manifest(index: Index, columns: _Parts, bm25_fields: dict[str, object]) -> dict[str, object]:
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


def _embedding_rows(index: Index) -> EmbeddingMatrix:
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
    bm25 = _bm25_parts(*bm25_and_ranks(index))
    columns = _column_parts(index)
    return SidecarParts(
        {**columns.blobs, **bm25.blobs},
        {**columns.arrays, **bm25.arrays},
        _embedding_rows(index),
        _manifest(index, columns, bm25.fields),
    )


_STAGED_PREFIX: Final = ".staged."
_staging_sequence = itertools.count()


@attrs.frozen(slots=True, eq=False)
class StagedSidecar:
    """A sidecar's parts written (or being written) under staging names in its directory,
    before the store's digest is known; `write_sidecar` renames them into place.

    A run killed before then leaves only staging files, which no manifest names and the
    next sidecar write deletes.
    """

    directory: str
    manifest: dict[str, object]
    """`SidecarParts.manifest` (the parts' arrays are not kept once written)."""
    parts: dict[str, tuple[str, int]]
    """Part name → (file name after the digest's `D-`, byte size)."""
    staged_names: dict[str, str]
    """Part name → its staging file's name."""
    pending: list[concurrent.futures.Future[None]]

    def settle(self) -> None:
        """Wait for every part to be on disk; raises the first write's error."""
        for done in self.pending:
            done.result()

    def discard(self) -> None:
        """Wait for the writes, then remove every staging file (the store was not saved)."""
        for done in self.pending:
            with contextlib.suppress(Exception):
                done.result()
        for name in self.staged_names.values():
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, name))
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)  # only if staging made it and nothing else is there


_SPARSE_PARTS: Final = ("embedding_starts", "embedding_rows", "embedding_values")
"""The parts of sparse embeddings (`SparseEmbeddings`), which replace `embeddings_by_dim`."""

_PART_ORDER: Final = (
    "ids",
    "content",
    "embeddings_by_dim",
    *_SPARSE_PARTS,
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


class _Stager:
    """Writes parts under staging names into `staged`, each part's fsync and rename on
    `syncer` while the next part is written (without one, before it)."""

    def __init__(self, store_path: str, syncer: concurrent.futures.Executor | None) -> None:
        directory = sidecar_dir(store_path)
        os.makedirs(directory, exist_ok=True)
        self.staged = StagedSidecar(directory, {}, {}, {}, [])
        self._syncer = syncer

    def _write(self, file: str, name: str, pieces: Iterable[bytes | memoryview], size: int) -> None:
        staged = self.staged
        staged_name = f"{_STAGED_PREFIX}{os.getpid()}.{next(_staging_sequence)}.{file}"
        done = write_atomic_parts(os.path.join(staged.directory, staged_name), pieces, self._syncer)
        if done is not None:
            staged.pending.append(done)
        staged.parts[name] = (file, size)
        staged.staged_names[name] = staged_name

    def embeddings(self, matrix: EmbeddingMatrix) -> None:
        if isinstance(matrix, SparseEmbeddings):
            cells = (matrix.starts, matrix.rows, matrix.values)
            self.parts({}, dict(zip(_SPARSE_PARTS, cells, strict=True)))
            return
        transposed = _TransposedNpy(matrix)
        self._write("embeddings_by_dim.npy", "embeddings_by_dim", transposed, transposed.size)

    def parts(
        self, blobs: dict[str, list[bytes]], arrays: dict[str, npt.NDArray[np.generic]]
    ) -> None:
        for name, blocks in blobs.items():
            self._write(f"{name}.bin", name, blocks, sum(map(len, blocks)))
        for name, array in arrays.items():
            pieces = list(_npy_bytes(array))
            self._write(f"{name}.npy", name, pieces, sum(map(len, pieces)))


def stage_sidecar(
    store_path: str, prepared: SidecarParts, syncer: concurrent.futures.Executor
) -> StagedSidecar:
    """Write the parts of `prepared` beside `store_path` under staging names.

    Needs no store digest, so it runs while the store itself is written. Each part's
    fsync and rename run on `syncer` while the next part is written. Raises OSError.
    """
    stager = _Stager(store_path, syncer)
    try:
        # The largest part first: its sync overlaps everything written after it.
        stager.embeddings(prepared.embeddings)
        stager.parts(prepared.blobs, prepared.arrays)
    except BaseException:
        stager.staged.discard()
        raise
    return attrs.evolve(stager.staged, manifest=prepared.manifest)


@attrs.frozen(slots=True)
class StagedBm25:
    """BM25's sidecar parts, written under staging names (`StagedSidecar` has the rest)."""

    directory: str
    parts: dict[str, tuple[str, int]]
    staged_names: dict[str, str]
    fields: dict[str, object]
    """The manifest fields the BM25 parts give (`_bm25_parts`)."""

    def discard(self) -> None:
        """Remove the staging files (they will not be used)."""
        StagedSidecar(self.directory, {}, self.parts, self.staged_names, []).discard()


def _stage_bm25(lay_out: Bm25Factory, store_path: str) -> StagedBm25:
    stager = _Stager(store_path, None)
    try:
        bm25 = _bm25_parts(*lay_out())
        stager.parts(bm25.blobs, bm25.arrays)
    except BaseException:
        stager.staged.discard()
        raise
    staged = stager.staged
    return StagedBm25(staged.directory, staged.parts, staged.staged_names, bm25.fields)


class Bm25Staging:
    """BM25's sidecar parts being laid out and written apart (`start_bm25_staging`)."""

    def __init__(self, forked: Forked[StagedBm25], store_path: str) -> None:
        self._forked = forked
        self._store_path = store_path

    def result(self) -> StagedBm25:
        """Wait for the staged parts. Raises OSError, or ValueError as `_bm25_parts`."""
        return self._forked.result()

    def cancel(self) -> None:
        """Stop, and remove what was staged: a child is killed at once and its staging
        files deleted; work on a thread is waited for, then discarded."""
        if self._forked.pid is None:
            with contextlib.suppress(Exception):
                self._forked.result().discard()
            return
        self._forked.cancel()
        # Collected, the child no longer runs: its staging files (and the temporary file
        # of a write it was killed in) are a dead writer's.
        remove_dead_staging(self._store_path)
        with contextlib.suppress(OSError):
            os.rmdir(sidecar_dir(self._store_path))  # only if staging made it, now empty


def remove_dead_staging(store_path: str) -> None:
    """Delete the staging files (and their temporaries) beside `store_path` whose writer
    is no longer running.

    A run killed after staging leaves them, and the next sidecar write removes them; a
    run that writes no sidecar (the one in place is already its store's) calls this
    instead. Files of a process still running (another `cce index` of this store) stay.
    """
    directory = sidecar_dir(store_path)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        staged = name[1:] if name.startswith(f".{_STAGED_PREFIX}") else name
        if not staged.startswith(_STAGED_PREFIX):
            continue
        writer = staged[len(_STAGED_PREFIX) :].split(".", 1)[0]
        if writer.isdigit() and not is_running(int(writer)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def start_bm25_staging(lay_out: Bm25Factory, store_path: str) -> Bm25Staging:
    """Start laying out BM25 (`lay_out`: `bm25_and_ranks` of an index, or the factory a
    build offers, `build_index(bm25_ready=...)`) and writing its sidecar parts beside
    `store_path` under staging names, in a forked process (`run_forked`: a thread where
    a fork is not safe). `Bm25Staging.result` or `.cancel` must follow.

    Started as a build's token counts are in, BM25 (the longest part of a build's end)
    runs beside the interpreter lock instead of sharing it. The child's BM25 stays in
    the child: no index gets it. Raises OSError when no child can be started.
    """
    return Bm25Staging(run_forked(functools.partial(_stage_bm25, lay_out, store_path)), store_path)


def stage_index_sidecar(
    index: Index,
    store_path: str,
    syncer: concurrent.futures.Executor,
    bm25: Bm25Staging | None = None,
) -> StagedSidecar:
    """`stage_sidecar(store_path, prepare_sidecar(index), syncer)`, sooner: BM25 is laid
    out and written apart (`bm25`, from `start_bm25_staging`, else started here) while
    the parts that do not need it are computed and written (the embedding matrix, the
    largest, on `syncer` meanwhile).

    Raises OSError, or ValueError as `prepare_sidecar` does; nothing staged is left then.
    """
    bm25_staging = bm25 or start_bm25_staging(functools.partial(bm25_and_ranks, index), store_path)
    staged: StagedSidecar | None = None
    try:
        stager = _Stager(store_path, syncer)
        staged = stager.staged
        # Writing the matrix is system calls, which hold no interpreter lock: on the
        # syncer, beside the columns' work here, rather than before it.
        matrix_written = syncer.submit(stager.embeddings, _embedding_rows(index))
        try:
            columns = _column_parts(index)
            stager.parts(columns.blobs, columns.arrays)
        finally:
            # Never left running: what follows a failure removes what was staged.
            concurrent.futures.wait([matrix_written])
        matrix_written.result()
    except BaseException:
        bm25_staging.cancel()
        if staged is not None:
            staged.discard()
        raise
    try:
        laid_out = bm25_staging.result()
    except BaseException:
        staged.discard()
        raise
    _take_bm25(staged, laid_out)
    return attrs.evolve(staged, manifest=_manifest(index, columns, laid_out.fields))


def _take_bm25(staged: StagedSidecar, bm25: StagedBm25) -> None:
    staged.parts.update(bm25.parts)
    staged.staged_names.update(bm25.staged_names)


def write_sidecar(
    index: Index,
    store_path: str,
    store_sha256: str,
    store_size: int,
    prepared: SidecarParts | None = None,
    staged: StagedSidecar | None = None,
) -> str:
    """Write the sidecar of the store at `store_path` (whose bytes hash to `store_sha256`).

    `prepared` is `prepare_sidecar(index)` when the caller made it already; `staged` is
    `stage_sidecar` of it when its parts are already written, and then only the renames
    and the manifest are left. The manifest goes last, once every part is in place.
    Returns the manifest path. Raises OSError; callers treat a failure as harmless (the
    store itself is complete, and the next reader rebuilds the sidecar).
    """
    if staged is None:
        if prepared is None:
            prepared = prepare_sidecar(index)
        with concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="cce-sidecar") as syncer:
            staged = stage_sidecar(store_path, prepared, syncer)
    try:
        staged.settle()
        directory = staged.directory
        prefix = store_sha256
        parts: dict[str, dict[str, object]] = {}
        for name, (file, size) in staged.parts.items():
            target = f"{prefix}-{file}"
            os.replace(
                os.path.join(directory, staged.staged_names[name]),
                os.path.join(directory, target),
            )
            parts[name] = {"file": target, "bytes": size}
    except BaseException:
        staged.discard()
        raise
    manifest = {
        "schema": SIDECAR_SCHEMA,
        "store_sha256": store_sha256,
        "store_size": store_size,
        **staged.manifest,
        "parts": {name: parts[name] for name in _PART_ORDER if name in parts},
    }
    manifest_path = os.path.join(directory, f"{prefix}.json")
    write_atomic(manifest_path, json.dumps(manifest, ensure_ascii=False).encode("utf-8"))
    _remove_other_digests(directory, prefix)
    return manifest_path


def sidecar_is_current(store_path: str, store_sha256: str, store_size: int) -> bool:
    """Whether the sidecar beside `store_path` already describes a store with this digest
    and size, by the checks a reader makes: rewriting it would write the same bytes."""
    try:
        _read_manifest(sidecar_dir(store_path), store_sha256, store_size)
    except _Untrusted:
        return False
    return True


def has_sidecar_manifest(store_path: str) -> bool:
    """Whether the sidecar directory beside `store_path` holds any store's manifest.

    A directory listing: without one, no digest can be current (`sidecar_is_current`),
    so a caller need not hash a store to ask. Staging files alone (a sidecar being
    written, or BM25's parts staged early in this build) do not count.
    """
    try:
        names = os.listdir(sidecar_dir(store_path))
    except OSError:
        return False
    return any(_is_manifest_name(name) for name in names)


def _is_manifest_name(name: str) -> bool:
    digest, dot, suffix = name.partition(".")
    return (
        dot == "."
        and suffix == "json"
        and len(digest) == 64
        and all(c in "0123456789abcdef" for c in digest)
    )


def current_sidecar_chunks(store_path: str, store_sha256: str, store_size: int) -> int | None:
    """How many chunks the sidecar beside `store_path` holds when it is current for this
    digest and size (`sidecar_is_current`), else None."""
    try:
        chunks = _read_manifest(sidecar_dir(store_path), store_sha256, store_size).get("chunks")
    except _Untrusted:
        return None
    return chunks if type(chunks) is int else None


def _remove_other_digests(directory: str, keep: str) -> None:
    """Delete parts and manifests of other digests (never this one's)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if not entry.name.startswith(keep):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


class _Untrusted(Exception):
    """The sidecar is missing, incomplete or of another store: parse `index.json`."""


def _read_manifest(directory: str, digest: str, size: int) -> dict[str, object]:
    path = os.path.join(directory, f"{digest}.json")
    try:
        with open(path, "rb") as handle:
            manifest = json.loads(handle.read())
    except (OSError, ValueError, RecursionError) as err:  # RecursionError: hostile nesting
        raise _Untrusted from err
    if (
        not isinstance(manifest, dict)
        or manifest.get("schema") != SIDECAR_SCHEMA
        or manifest.get("store_sha256") != digest
        or manifest.get("store_size") != size
        or not isinstance(manifest.get("parts"), dict)
    ):
        raise _Untrusted
    for part in manifest["parts"].values():
        try:
            actual = os.stat(os.path.join(directory, str(part["file"]))).st_size
        except (OSError, KeyError, TypeError) as err:
            raise _Untrusted from err
        if actual != part["bytes"]:
            raise _Untrusted
    return manifest


def _kind_triple(text: str) -> tuple[str, str, str]:
    chunk_type, kind, language = text.split("\0")
    return chunk_type, kind, language


def _check_columns(columns: StoredColumns, n: int) -> None:
    """Every column has n entries (n + 1 offsets) and every code names a table entry."""
    if not (
        columns.numbers.shape == (n, 3)
        and columns.path_codes.shape == (n,)
        and columns.kind_codes.shape == (n,)
        and columns.ids_at.shape == (n + 1,)
        and columns.content_at.shape == (n + 1,)
    ):
        raise _Untrusted
    if n and (
        int(columns.path_codes.max()) >= len(columns.paths)
        or int(columns.kind_codes.max()) >= len(columns.kinds)
        or int(columns.path_codes.min()) < 0
        or int(columns.kind_codes.min()) < 0
        or int(columns.ids_at[-1]) != len(columns.ids)
        or int(columns.content_at[-1]) != len(columns.content)
    ):
        raise _Untrusted


def _sidecar_index(directory: str, manifest: dict[str, object]) -> Index:
    parts = manifest["parts"]
    assert isinstance(parts, dict)

    def array(name: str) -> npt.NDArray[np.generic]:
        path = os.path.join(directory, str(parts[name]["file"]))
        try:
            loaded: npt.NDArray[np.generic] = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as err:
            # A damaged header fails in numpy's header parser in many ways (ValueError,
            # SyntaxError, tokenize's TokenError on a NUL byte, ...): all mean distrust.
            raise _Untrusted from err
        return loaded

    def blob(name: str) -> mmap.mmap | bytes:
        path = os.path.join(directory, str(parts[name]["file"]))
        try:
            with open(path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size == 0:
                    return b""
                return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as err:
            raise _Untrusted from err

    n = int(str(manifest["chunks"]))
    kinds = tuple(_kind_triple(str(k)) for k in manifest["kinds"])  # type: ignore[attr-defined]
    columns = StoredColumns(
        ids=blob("ids"),
        ids_at=array("ids_offsets"),  # type: ignore[arg-type]
        content=blob("content"),
        content_at=array("content_offsets"),  # type: ignore[arg-type]
        numbers=array("numbers"),  # type: ignore[arg-type]
        path_codes=array("path_codes"),  # type: ignore[arg-type]
        kind_codes=array("kind_codes"),  # type: ignore[arg-type]
        paths=tuple(str(p) for p in manifest["paths"]),  # type: ignore[attr-defined]
        kinds=kinds,
    )
    _check_columns(columns, n)
    chunks = StoredChunks(columns)
    rows = int(str(manifest["embedding_rows"]))
    width = int(str(manifest["embedding_width"]))
    if rows != n:  # a store holds one embedding per chunk
        raise _Untrusted
    embeddings: EmbeddingMatrix
    if "embeddings_by_dim" in parts:
        by_dim = array("embeddings_by_dim")
        if by_dim.shape != (width, rows) or by_dim.dtype != np.float64:
            raise _Untrusted
        embeddings = by_dim.T  # type: ignore[assignment]
    else:
        embeddings = _sparse_embeddings(rows, width, *(array(name) for name in _SPARSE_PARTS))
    lengths = manifest["embedding_lengths"]
    model, dim = manifest["embedder_model"], manifest["embedding_dim"]
    index = Index(
        embedder=str(manifest["embedder"]),
        chunks=chunks,
        embeddings=embeddings,
        file_imports={str(k): list(v) for k, v in manifest["file_imports"].items()},  # type: ignore[attr-defined]
        file_tokens={str(k): int(v) for k, v in manifest["file_tokens"].items()},  # type: ignore[attr-defined]
        spec_version=str(manifest["spec_version"]),
        embedding_lengths=None if lengths is None else [int(x) for x in lengths],  # type: ignore[attr-defined]
        embedder_model=None if model is None else str(model),
        embedding_dim=None if dim is None else int(str(dim)),
    )
    terms_text = bytes(blob("terms")).decode("ascii")
    terms = terms_text.split("\n") if terms_text else []
    term_ids = dict(zip(terms, range(len(terms)), strict=True))
    if len(term_ids) != int(str(manifest["terms"])):
        raise _Untrusted
    id_ranks = array("id_ranks")
    bm25 = Bm25Index(
        term_ids,
        array("bm25_offsets"),  # type: ignore[arg-type]
        array("bm25_docs"),  # type: ignore[arg-type]
        array("bm25_freqs"),  # type: ignore[arg-type]
        array("bm25_doc_lengths"),  # type: ignore[arg-type]
        float(str(manifest["bm25_avgdl"])),
        id_ranks,  # type: ignore[arg-type]
    )
    if id_ranks.shape != (n,) or bm25.n_docs != n:
        raise _Untrusted
    raw_edges = manifest["graph_edges"]

    def graph() -> ImportGraph:
        return ImportGraph([(str(a), str(b)) for a, b in raw_edges])  # type: ignore[attr-defined]

    derived = RetrievalIndex(index, bm25, id_ranks, graph)  # type: ignore[arg-type]
    prime(index, derived)
    return index


def _sparse_embeddings(
    rows: int,
    width: int,
    starts: npt.NDArray[np.generic],
    cell_rows: npt.NDArray[np.generic],
    values: npt.NDArray[np.generic],
) -> SparseEmbeddings:
    """The sparse parts as a matrix, once they hold what `SparseEmbeddings` promises:
    offsets from 0 to the last cell, never decreasing, each dimension's rows in range
    and strictly ascending, and finite values. A part that breaks one would fail or
    mis-score a query, so the sidecar is distrusted here instead."""
    cells = int(values.shape[0]) if values.ndim == 1 else -1
    if (
        rows < 0
        or width < 0
        or starts.shape != (width + 1,)
        or starts.dtype != np.int64
        or values.dtype != np.float64
        or cell_rows.shape != (cells,)
        or cell_rows.dtype not in (np.dtype(np.uint32), np.dtype(np.int64))
    ):
        raise _Untrusted
    offsets = cast(npt.NDArray[np.int64], starts)
    chunk_rows = cast(npt.NDArray[np.integer], cell_rows)
    # Compared, never subtracted: a difference of int64 offsets can wrap around.
    if (
        int(offsets[0]) != 0
        or int(offsets[-1]) != cells
        or bool(np.any(offsets[1:] < offsets[:-1]))
    ):
        raise _Untrusted
    if cells and (int(chunk_rows.min()) < 0 or int(chunk_rows.max()) >= rows):
        raise _Untrusted
    if not bool(np.isfinite(values).all()):  # embeddings are finite; a nan would rank
        raise _Untrusted
    ascending = chunk_rows[1:] > chunk_rows[:-1]
    firsts = offsets[1:-1]
    ascending[firsts[(firsts > 0) & (firsts < cells)] - 1] = True  # a new dimension begins
    if not bool(ascending.all()):
        raise _Untrusted
    return SparseEmbeddings(rows, width, offsets, chunk_rows, cast(FloatMatrix, values))


_SETTLED_NS: Final = 2_000_000_000
"""A store must have been untouched this long before it was hashed for the digest to be
remembered by its file status (below): a write in the same clock tick as the hash could
otherwise leave the status unchanged."""


def _status(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _remembered_digest(directory: str, st: os.stat_result) -> str | None:
    """The digest recorded for a store with exactly this file status, if any.

    Replacing a store (a rename) gives it a new inode, and writing it in place changes
    its change time, which no program can set back; so an equal status means the bytes
    are the ones that were hashed, as git trusts its index for unchanged files.
    """
    status = _status(st)
    try:
        entries = [e.path for e in os.scandir(directory) if e.name.endswith(_STATUS_SUFFIX)]
    except OSError:
        return None
    for entry in entries:
        try:
            with open(entry, "rb") as handle:
                record = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):  # RecursionError: hostile nesting
            continue
        if (
            isinstance(record, dict)
            and record.get("status") == status
            and isinstance(record.get("sha256"), str)
            and os.path.basename(entry) == record["sha256"] + _STATUS_SUFFIX
        ):
            return str(record["sha256"])
    return None


def _remember_digest(directory: str, digest: str, st: os.stat_result, hashed_at_ns: int) -> None:
    """Record `digest` for the store's status `st`, when that status is settled."""
    if hashed_at_ns - max(st.st_mtime_ns, st.st_ctime_ns) < _SETTLED_NS:
        return
    record = {"schema": SIDECAR_SCHEMA, "sha256": digest, "status": _status(st)}
    with contextlib.suppress(OSError):
        write_atomic(
            os.path.join(directory, digest + _STATUS_SUFFIX), json.dumps(record).encode("utf-8")
        )


@attrs.frozen(slots=True)
class _FileDigest:
    """A store file's SHA-256 and the status it had; `hashed_at_ns` is set when the digest
    was computed now (not remembered) from a file that did not change while read."""

    sha256: str
    status: os.stat_result
    hashed_at_ns: int | None

    def remember(self, directory: str) -> None:
        """Record the digest for this status (`_remember_digest`), if it was just made."""
        if self.hashed_at_ns is not None:
            _remember_digest(directory, self.sha256, self.status, self.hashed_at_ns)


def _file_digest(path: str, directory: str) -> _FileDigest:
    """The digest of the store at `path`: remembered for its status, else hashed. Raises
    OSError."""
    before = os.stat(path)
    remembered = _remembered_digest(directory, before)
    if remembered is not None:
        return _FileDigest(remembered, before, None)
    hashed_at = time.time_ns()
    digest, _ = file_sha256(path)
    changed = _status(os.stat(path)) != _status(before)
    # Changed while being read: the digest is not recorded, and the next run hashes again.
    return _FileDigest(digest, before, None if changed else hashed_at)


def store_holds(store_path: str, store_sha256: str, store_size: int) -> bool:
    """Whether the file at `store_path` already holds exactly the bytes of this digest and
    size, so writing them again would change nothing; False on any doubt or OS error.

    Costs a stat when the sidecar directory remembers the digest for the file's status,
    else one read of the file (the digest is then remembered, once the file's status is
    settled, as `load_store` does)."""
    directory = sidecar_dir(store_path)
    try:
        if os.stat(store_path).st_size != store_size:
            return False
        found = _file_digest(store_path, directory)
    except OSError:
        return False
    if found.sha256 != store_sha256 or found.status.st_size != store_size:
        return False
    found.remember(directory)
    return True


def load_store(path: str) -> Index:
    """The store at `path`, from its sidecar when that matches the store's bytes.

    The store is hashed unless its file status is the one recorded when it was last
    hashed (`_remembered_digest`). When the sidecar does not match, `index.json` is
    parsed (any failure is the usual StoreError) and the sidecar rebuilt, best effort:
    a read-only directory just means no sidecar.
    """
    directory = sidecar_dir(path)
    try:
        found = _file_digest(path, directory)
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    try:
        manifest = _read_manifest(directory, found.sha256, found.status.st_size)
        index = _sidecar_index(directory, manifest)
    except (_Untrusted, KeyError, TypeError, ValueError, AttributeError):
        pass
    else:
        found.remember(directory)
        return index
    # The sidecar is keyed by the digest of exactly the bytes parsed here.
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise StoreError("load", path, describe_os_error(err)) from err
    index = parse_index(data, path)
    with contextlib.suppress(OSError, ValueError):
        write_sidecar(index, path, hashlib.sha256(data).hexdigest(), len(data))
    return index
