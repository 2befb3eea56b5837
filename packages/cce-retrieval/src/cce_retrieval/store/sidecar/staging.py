"""Writing a sidecar: parts staged under temporary names, BM25 laid out in a forked child,
then renamed to the store's digest with the manifest last.

Why it exists: a store's sidecar must never be half-trusted. Parts are written under
staging names while the store's bytes reach the disk, BM25's parts in a forked helper
as soon as the build's token counts are in; only once the store is in place are they
renamed to its digest and the manifest written, so a run killed at any moment leaves
either a whole sidecar or one a reader never trusts (docs/index-store.md#sidecar).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import itertools
import json
import os
from collections.abc import Iterable, Iterator
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.build.processes import Forked, run_forked
from cce_retrieval.model import EmbeddingMatrix, Index, SparseEmbeddings
from cce_retrieval.rank.derived import Bm25Factory, bm25_and_ranks
from cce_retrieval.store.fileio import (
    is_running,
    write_atomic,
    write_atomic_parts,
)
from cce_retrieval.store.sidecar.digests import forget_verified_parts
from cce_retrieval.store.sidecar.parts import (
    PART_ORDER,
    SIDECAR_SCHEMA,
    SPARSE_PARTS,
    SidecarParts,
    TransposedNpy,
    bm25_parts,
    column_parts,
    manifest_document,
    npy_bytes,
    prepare_sidecar,
    sidecar_dir,
    stored_embeddings,
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
    parts: dict[str, tuple[str, int, str]]
    """Part name → (file name after the digest's `D-`, byte size, SHA-256 of its bytes)."""
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


def _hashed(
    pieces: Iterable[bytes | memoryview], digest: hashlib._Hash
) -> Iterator[bytes | memoryview]:
    """`pieces`, each added to `digest` as it is written: a part's SHA-256 costs no
    second read of its bytes."""
    for piece in pieces:
        digest.update(piece)
        yield piece


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
        digest = hashlib.sha256()
        done = write_atomic_parts(
            os.path.join(staged.directory, staged_name), _hashed(pieces, digest), self._syncer
        )
        if done is not None:
            staged.pending.append(done)
        staged.parts[name] = (file, size, digest.hexdigest())
        staged.staged_names[name] = staged_name

    def embeddings(self, matrix: EmbeddingMatrix) -> None:
        if isinstance(matrix, SparseEmbeddings):
            cells = (matrix.starts, matrix.rows, matrix.values)
            self.parts({}, dict(zip(SPARSE_PARTS, cells, strict=True)))
            return
        transposed = TransposedNpy(matrix)
        self._write("embeddings_by_dim.npy", "embeddings_by_dim", transposed, transposed.size)

    def parts(
        self, blobs: dict[str, list[bytes]], arrays: dict[str, npt.NDArray[np.generic]]
    ) -> None:
        for name, blocks in blobs.items():
            self._write(f"{name}.bin", name, blocks, sum(map(len, blocks)))
        for name, array in arrays.items():
            pieces = list(npy_bytes(array))
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
    parts: dict[str, tuple[str, int, str]]
    staged_names: dict[str, str]
    fields: dict[str, object]
    """The manifest fields the BM25 parts give (`bm25_parts`)."""

    def discard(self) -> None:
        """Remove the staging files (they will not be used)."""
        StagedSidecar(self.directory, {}, self.parts, self.staged_names, []).discard()


def _stage_bm25(lay_out: Bm25Factory, store_path: str) -> StagedBm25:
    stager = _Stager(store_path, None)
    try:
        bm25 = bm25_parts(*lay_out())
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
        """Wait for the staged parts. Raises OSError, or ValueError as `bm25_parts`."""
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
        matrix_written = syncer.submit(stager.embeddings, stored_embeddings(index))
        try:
            columns = column_parts(index)
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
    return attrs.evolve(staged, manifest=manifest_document(index, columns, laid_out.fields))


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
        # Parts of this digest are about to be replaced: what was verified of the old
        # files says nothing of the new ones.
        forget_verified_parts(directory, prefix)
        parts: dict[str, dict[str, object]] = {}
        for name, (file, size, sha256) in staged.parts.items():
            target = f"{prefix}-{file}"
            os.replace(
                os.path.join(directory, staged.staged_names[name]),
                os.path.join(directory, target),
            )
            parts[name] = {"file": target, "bytes": size, "sha256": sha256}
    except BaseException:
        staged.discard()
        raise
    manifest = {
        "schema": SIDECAR_SCHEMA,
        "store_sha256": store_sha256,
        "store_size": store_size,
        **staged.manifest,
        "parts": {name: parts[name] for name in PART_ORDER if name in parts},
    }
    manifest_path = os.path.join(directory, f"{prefix}.json")
    write_atomic(manifest_path, json.dumps(manifest, ensure_ascii=False).encode("utf-8"))
    _remove_other_digests(directory, prefix)
    return manifest_path


def _remove_other_digests(directory: str, keep: str) -> None:
    """Delete parts and manifests of other digests (never this one's)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if not entry.name.startswith(keep):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
