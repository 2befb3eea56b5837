"""One call that indexes a directory into a persisted store: `persist_index`.

Why it exists: persisting is a protocol, not a write. The build may stream the store's
bytes as it goes, BM25's sidecar parts are laid out in a forked child as soon as the
build's token counts are in, the other parts are staged while the store's bytes reach
the disk, and only the renames to the store's digest wait for the store. A store the
build cache recorded for exactly these files is kept in place without building, and a
store whose bytes are already there is kept as it is. Every step that fails leaves any
previous store whole (docs/index-store.md#cce-index). Callers (the `cce index` command,
or any tool that wants a store) get all of that from one call and never touch the parts.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable

import attrs

from cce_retrieval.build.cache import BuildCache, StoreRecord
from cce_retrieval.build.outcomes import ProgressCallback
from cce_retrieval.build.pipeline import BuildResult, RecordedBuild, build_index, build_or_reuse
from cce_retrieval.build.processes import interrupts_deferred
from cce_retrieval.embed.hashing import Embedder
from cce_retrieval.protect.strict import DEFAULT_PROTECTION
from cce_retrieval.rank.derived import Bm25Factory
from cce_retrieval.store.fileio import describe_os_error, keep_in_place, write_atomic
from cce_retrieval.store.fingerprint import fingerprint_document_of, fingerprint_path
from cce_retrieval.store.paths import StoreError
from cce_retrieval.store.sidecar import (
    Bm25Staging,
    StagedSidecar,
    current_sidecar_chunks,
    has_sidecar_manifest,
    remove_dead_staging,
    sidecar_is_current,
    stage_index_sidecar,
    start_bm25_staging,
    store_holds,
    write_sidecar,
)
from cce_retrieval.store.sources import write_sources
from cce_retrieval.store.write import SavedStore, StoreStream, store_digest, write_store

Warn = Callable[[str], None]
"""Receives each warning `persist_index` meets (a line without the `warning: ` prefix)."""


@attrs.frozen
class PersistedIndex:
    """What `persist_index` did: the build (or the cache's record of one, when the store
    these files make was found in place) and the store now at the path."""

    build: BuildResult | RecordedBuild
    store: SavedStore

    @property
    def reused(self) -> bool:
        """Whether nothing was built: the store the cache recorded was kept as it is."""
        return isinstance(self.build, RecordedBuild)


def persist_index(
    directory: str,
    embedder: Embedder,
    store_path: str,
    *,
    protect: bool = True,
    protection: str = DEFAULT_PROTECTION,
    jobs: int = 1,
    cache: BuildCache | None = None,
    progress: ProgressCallback | None = None,
    warn: Warn | None = None,
) -> PersistedIndex:
    """Index `directory` into the store at `store_path`, with its fingerprint, source
    list and sidecar beside it.

    `jobs`, `cache` and `progress` are as for `build_index`; with a `cache`, a store the
    cache recorded for exactly these files is kept in place when it is there, sidecar
    and all. A fingerprint or source list that cannot be written is a warning (`warn`;
    dropped when None); so is a sidecar, silently, since readers rebuild it. Raises
    `BuildError` when the build fails and `StoreError` when the store cannot be
    written; either way any previous store at the path is untouched.
    """
    bm25 = _Bm25Start(store_path)
    stream = StoreStream(store_path)
    try:
        if cache is None:
            result: BuildResult | RecordedBuild = build_index(
                directory,
                embedder,
                protect=protect,
                protection=protection,
                jobs=jobs,
                progress=progress,
                store_text=True,
                bm25_ready=bm25,
            )
        else:
            result = build_or_reuse(
                directory,
                embedder,
                protect,
                reuse=lambda record: _recorded_store_in_place(record, store_path),
                cache=cache,
                jobs=jobs,
                progress=progress,
                protection=protection,
                bm25_ready=bm25,
                store_stream=stream,
            )
        if isinstance(result, RecordedBuild):
            remove_dead_staging(store_path)  # no sidecar write follows to remove them
            kept = SavedStore(result.record.size, result.record.sha256)
            _write_beside_store(store_path, directory, protect, protection, result, kept, warn)
            return PersistedIndex(result, kept)
        saved, sidecar = _write_built(result, store_path, bm25, stream)
        _write_beside_store(store_path, directory, protect, protection, result, saved, warn)
        sidecar.finish(result, store_path, saved)
        # Last, once everything beside the store is written: the next build of exactly
        # these files may then find this store in place without building.
        result.remember_store(saved.sha256, saved.size)
        return PersistedIndex(result, saved)
    finally:
        bm25.cancel()  # a staging started but never handed over (a failed or kept build)
        stream.discard()  # a store streamed but not put in place (a failed or kept build)


class _Bm25Start:
    """Starts BM25's sidecar parts (`start_bm25_staging`) when the build's token counts
    are in (`build_index(bm25_ready=...)`): the process is single-threaded then, so
    they are laid out in a forked process while the build and the store finish."""

    def __init__(self, store_path: str) -> None:
        self._store_path = store_path
        self._staging: Bm25Staging | None = None

    def __call__(self, lay_out: Bm25Factory) -> None:
        # A Ctrl-C is held until the staging is kept here, where `cancel` reaches it: a
        # child forked a moment before would otherwise write its parts unseen.
        with interrupts_deferred(), contextlib.suppress(OSError):
            # On OSError, `_stage_sidecar` starts them itself.
            self._staging = start_bm25_staging(lay_out, self._store_path)

    def take(self) -> Bm25Staging | None:
        """The started staging, handed to whoever waits for it from now on."""
        staging, self._staging = self._staging, None
        return staging

    def cancel(self) -> None:
        """Stop a staging nobody took and remove its parts (they will not be used)."""
        staging = self.take()
        if staging is not None:
            staging.cancel()


@attrs.define
class _SidecarPlan:
    """The sidecar of a store being written: the digest whose sidecar is already in place
    (then nothing is staged), and the parts being staged otherwise."""

    current: str | None
    staging: concurrent.futures.Future[StagedSidecar | None] | None = None

    def finish(self, result: BuildResult, store_path: str, saved: SavedStore) -> None:
        """Rename the staged parts to the store's digest and write the manifest. The
        sidecar only speeds up later reads; without it they parse index.json. Staging
        that failed is not tried again: the same directory or index would fail it again."""
        staged = None if self.staging is None else self.staging.result()
        if self.current != saved.sha256 and (self.staging is None or staged is not None):
            with contextlib.suppress(OSError, ValueError):
                write_sidecar(result.index, store_path, saved.sha256, saved.size, staged=staged)


def _write_built(
    result: BuildResult, store_path: str, bm25: _Bm25Start, stream: StoreStream
) -> tuple[SavedStore, _SidecarPlan]:
    """Put the built store in place (streamed, kept, or written) while the sidecar's
    parts are staged; the plan then finishes the sidecar once the store is in place."""
    # A stream that fails to close is dropped: the store is then written the usual way.
    streamed = (
        None if result.store_stream is None else result.store_stream.close_array(result.index)
    )
    current, unchanged = _store_in_place(result, store_path, streamed)
    if current:
        bm25.cancel()  # the sidecar in place is this store's: BM25's parts are not needed
        remove_dead_staging(store_path)  # and no sidecar write follows to remove them
    plan = _SidecarPlan(current)
    # The syncer is shut down last: the helper's writes hand their fsyncs to it.
    with (
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="cce-sidecar-sync") as syncer,
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cce-sidecar") as helper,
    ):
        # What the sidecar holds depends on the index alone, so it is computed and its
        # parts written (under staging names) while the store's bytes go to disk; only
        # the renames to the store's digest and the manifest wait for the store.
        if not current:
            plan.staging = helper.submit(_stage_sidecar, result, store_path, syncer, bm25.take())
        try:
            if unchanged is not None:
                saved = unchanged
            elif streamed is not None:
                saved = stream.commit()
            else:
                saved = write_store(result.index, store_path, result.store_chunks)
        except StoreError:
            if plan.staging is not None and (staged := plan.staging.result()) is not None:
                staged.discard()
            raise
    return saved, plan


def _stage_sidecar(
    result: BuildResult,
    store_path: str,
    syncer: concurrent.futures.Executor,
    bm25: Bm25Staging | None,
) -> StagedSidecar | None:
    """The sidecar's parts, written under staging names; None if they could not be (the
    store is complete without them, and the next reader rebuilds them)."""
    try:
        return stage_index_sidecar(result.index, store_path, syncer, bm25)
    except (OSError, ValueError):
        return None


def _store_in_place(
    result: BuildResult, store_path: str, streamed: SavedStore | None
) -> tuple[str | None, SavedStore | None]:
    """What of this build's store is already on disk: the digest whose sidecar is in
    place, and the store itself when the file there holds exactly its bytes (then kept
    as it is, `keep_in_place`). `streamed` is the store the build streamed, if it did.

    Re-indexing an unchanged tree makes the same store bytes; only made chunk text makes
    their digest cheap enough to check before writing.
    """
    if streamed is None and result.store_chunks is None:
        return None, None
    # Hashing the store costs as much as writing it: only when some manifest is there
    # (BM25's parts staged by this very build have made the directory already).
    if not has_sidecar_manifest(store_path):
        return None, None
    predicted = streamed or store_digest(result.index, result.store_chunks)
    if not sidecar_is_current(store_path, predicted.sha256, predicted.size):
        return None, None
    return predicted.sha256, (predicted if _kept_in_place(store_path, predicted) else None)


def _kept_in_place(store_path: str, store: SavedStore) -> bool:
    """Whether the file at `store_path` holds exactly `store`'s bytes and was kept as it
    is (`keep_in_place`); if not, it is written as any store is."""
    if not store_holds(store_path, store.sha256, store.size):
        return False
    try:
        keep_in_place(store_path)
    except OSError:
        return False  # written after all, failing (or not) as any write
    return True


def _recorded_store_in_place(record: StoreRecord, store_path: str) -> bool:
    """Whether the store the build cache recorded for these files is the one on disk,
    sidecar and all (which must hold as many chunks as the record says); it is then kept
    in place and nothing is built."""
    if current_sidecar_chunks(store_path, record.sha256, record.size) != record.total_chunks:
        return False
    return _kept_in_place(store_path, SavedStore(record.size, record.sha256))


def _write_beside_store(
    store_path: str,
    directory: str,
    protect: bool,
    protection: str,
    result: BuildResult | RecordedBuild,
    saved: SavedStore,
    warn: Warn | None,
) -> None:
    """The fingerprint and the source record beside a store that is in place; a failure
    of either is a warning."""
    try:
        document = fingerprint_document_of(
            result.embedder,
            result.embed_dim,
            saved.sha256,
            redaction=protect,
            protection=protection,
        )
        write_atomic(fingerprint_path(store_path), document)
    except OSError as err:
        if warn is not None:
            warn(f"could not write the store fingerprint: {describe_os_error(err)}")
    try:
        write_sources(store_path, directory, protect, result.sources)
    except OSError as err:
        if warn is not None:
            warn(f"could not write the store's source list: {describe_os_error(err)}")
