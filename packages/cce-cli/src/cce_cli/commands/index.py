"""`cce index DIR`: build a directory's index and persist it (docs/index-store.md#cce-index).

Why it exists: this is the command that turns a source tree into the store every read
command uses. It owns the user-facing contract: embedder selection, the
`--allow-secrets` warning, the order of work (build → save store → fingerprint →
source list → sidecar → the build cache's record of the store → metrics event →
summary; or, when that record names the store already in place, walk → fingerprint →
source list → metrics event → summary), the byte-exact summary, and the error cases (a
missing directory, an aborted build or an unwritable store exit 1 and leave any previous
store untouched; fingerprint, source list and metrics failures are only warnings).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import os
import sys
import time

from cce_cli.commands.build_options import add_build_options
from cce_cli.errors import CliError
from cce_cli.evaluation.indexes import (
    add_protection_argument,
    build_or_reuse_or_fail,
    check_remote,
    check_server,
    is_unreachable,
    print_protection_notice,
)
from cce_cli.formats.event_log import write_index_event
from cce_cli.render.output import display_text, write_stdout
from cce_retrieval import (
    DEFAULT_PROTECTION,
    BuildResult,
    Embedder,
    StoreError,
    ascii_lower,
    describe_os_error,
    embedder_names,
    embedder_spec,
    fingerprint_path,
    redact_url,
    resolve_store_path,
    write_atomic,
    write_sidecar,
    write_sources,
    write_store,
)
from cce_retrieval.build.cache import StoreRecord
from cce_retrieval.build.pipeline import RecordedBuild
from cce_retrieval.build.processes import interrupts_deferred
from cce_retrieval.rank.derived import Bm25Factory
from cce_retrieval.store.fileio import keep_in_place
from cce_retrieval.store.fingerprint import fingerprint_document_of
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
)
from cce_retrieval.store.write import SavedStore, StoreStream, store_digest

ALLOW_SECRETS_WARNING = (
    "warning: --allow-secrets set — secret protection is DISABLED; "
    "sensitive files will be indexed and secrets stored verbatim"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", help="directory to index")
    parser.add_argument("--store", help="store path (default: DIR/.cce/index.json)")
    parser.add_argument(
        "--embedder",
        default="hash",
        help=f"one of {', '.join(embedder_names())} (default hash); any other name means hash",
    )
    parser.add_argument("--no-metrics", action="store_true", help="do not append to metrics.jsonl")
    parser.add_argument(
        "--allow-secrets",
        action="store_true",
        help="disable secret protection (sensitive files indexed, secrets kept verbatim)",
    )
    add_build_options(parser)
    add_protection_argument(parser, DEFAULT_PROTECTION)


def select_embedder(name: str) -> Embedder:
    """A registered embedder by case-insensitive name (any other name is hash).

    An embedder that talks to a server is checked first (its URL, then a health request)
    and announced on stderr, its URL's credentials redacted. A server that does not
    answer is "unreachable", as in the reference; any other failure keeps its cause.
    """
    spec = embedder_spec(ascii_lower(name), fallback=True)
    embedder = spec.factory(None, None)
    if not spec.remote:
        return embedder
    url = redact_url(str(getattr(embedder, "base_url", "")))
    server = "Ollama" if spec.name == "ollama" else f"the {spec.name} server"
    if callable(getattr(embedder, "check", None)):
        # Embedders with `check()` (OpenAI-compatible) report the server's own message.
        check_server(embedder, lambda: "", "nothing was indexed")
    else:
        failure = check_remote(embedder)
        if failure is not None and is_unreachable(failure):
            raise CliError(
                f"{spec.name} embedder selected but {server} is unreachable at {url}; "
                f"start {server} or index with the default hash embedder"
            )
        if failure is not None:
            raise CliError(
                f"{spec.name} embedder selected but the {server} health check at {url} "
                f"failed ({failure}); fix the server or index with the default hash embedder"
            )
    model = getattr(embedder, "model", "")
    print(f"using {spec.name} embedder ({model} @ {url})", file=sys.stderr)
    return embedder


def summary_lines(
    directory: str, store_path: str, result: BuildResult | RecordedBuild, elapsed: float
) -> str:
    """The stdout summary of docs/index-store.md#cce-index, labels padded to 18 columns."""
    rows = [
        ("files indexed", str(result.files_indexed)),
        ("files skipped", str(result.files_skipped)),
        ("sensitive skipped", str(result.sensitive_skipped)),
    ]
    if result.walk_errors > 0:
        rows.append(("walk errors", str(result.walk_errors)))
    rows += [
        ("total chunks", str(result.total_chunks)),
        ("embedder", result.embedder),
        ("store", display_text(store_path)),
        ("elapsed", f"{elapsed:.3f}s"),
    ]
    heading = f"Indexed {display_text(directory)}\n"
    return heading + "".join(f"  {label:<18}: {value}\n" for label, value in rows)


def walk_error_warning(count: int) -> str:
    noun = "directory" if count == 1 else "directories"
    return (
        f"warning: {count} {noun} could not be read; files under them were NOT indexed — "
        "the index may be incomplete and may differ across machines"
    )


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
        print(
            f"warning: could not write the store fingerprint: {describe_os_error(err)}",
            file=sys.stderr,
        )
    try:
        write_sources(store_path, directory, protect, result.sources)
    except OSError as err:
        print(
            f"warning: could not write the store's source list: {describe_os_error(err)}",
            file=sys.stderr,
        )


def _report(
    args: argparse.Namespace,
    directory: str,
    store_path: str,
    result: BuildResult | RecordedBuild,
    index_bytes: int,
    started: float,
) -> int:
    """The metrics event, the summary and the warnings that end every `cce index`."""
    if not args.no_metrics:
        write_index_event(
            store_path,
            directory,
            chunks=result.total_chunks,
            files_indexed=result.files_indexed,
            sensitive_skipped=result.sensitive_skipped,
            embedder=result.embedder,
            index_bytes=index_bytes,
            duration_ms=(time.perf_counter() - started) * 1000.0,
        )
    write_stdout(summary_lines(directory, store_path, result, time.perf_counter() - started))
    if result.walk_errors > 0:
        print(walk_error_warning(result.walk_errors), file=sys.stderr)
    print_protection_notice(result)
    return 0


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    directory: str | None = args.dir
    if directory is None:
        raise CliError("index requires a directory")
    if not os.path.isdir(directory):
        raise CliError(f"not a directory: {directory}")
    protection: str = args.protection
    if args.allow_secrets and protection != DEFAULT_PROTECTION:
        raise CliError("--allow-secrets and --protection strict contradict each other", 2)
    store_path = resolve_store_path(args.store, directory)
    embedder = select_embedder(args.embedder)
    protect = not args.allow_secrets
    if not protect:
        print(ALLOW_SECRETS_WARNING, file=sys.stderr)

    bm25 = _Bm25Start(store_path)
    stream = StoreStream(store_path)
    try:
        return _build_and_write(
            args, started, directory, store_path, embedder, protect, bm25, stream
        )
    finally:
        bm25.cancel()  # a staging started but never handed over (a failed or kept build)
        stream.discard()  # a store streamed but not put in place (a failed or kept build)


def _build_and_write(
    args: argparse.Namespace,
    started: float,
    directory: str,
    store_path: str,
    embedder: Embedder,
    protect: bool,
    bm25: _Bm25Start,
    stream: StoreStream,
) -> int:
    protection: str = args.protection
    result = build_or_reuse_or_fail(
        directory,
        embedder,
        protect,
        args,
        protection,
        lambda record: _recorded_store_in_place(record, store_path),
        bm25,
        stream,
    )
    if isinstance(result, RecordedBuild):
        remove_dead_staging(store_path)  # no sidecar write follows to remove them
        kept = SavedStore(result.record.size, result.record.sha256)
        _write_beside_store(store_path, directory, protect, protection, result, kept)
        return _report(args, directory, store_path, result, kept.size, started)
    # A stream that fails to close is dropped: the store is then written the usual way.
    streamed = (
        None if result.store_stream is None else result.store_stream.close_array(result.index)
    )
    current, unchanged = _store_in_place(result, store_path, streamed)
    if current:
        bm25.cancel()  # the sidecar in place is this store's: BM25's parts are not needed
        remove_dead_staging(store_path)  # and no sidecar write follows to remove them
    # The syncer is shut down last: the helper's writes hand their fsyncs to it.
    with (
        concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="cce-sidecar-sync") as syncer,
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cce-sidecar") as helper,
    ):
        # What the sidecar holds depends on the index alone, so it is computed and its
        # parts written (under staging names) while the store's bytes go to disk; only
        # the renames to the store's digest and the manifest wait for the store.
        staging = None
        if not current:
            staging = helper.submit(_stage_sidecar, result, store_path, syncer, bm25.take())
        try:
            if unchanged is not None:
                saved = unchanged
            elif streamed is not None:
                saved = stream.commit()
            else:
                saved = write_store(result.index, store_path, result.store_chunks)
        except StoreError as err:
            if staging is not None and (staged := staging.result()) is not None:
                staged.discard()
            raise CliError(f"{err} (any previous store there is unchanged)") from err
    _write_beside_store(store_path, directory, protect, protection, result, saved)
    # The sidecar only speeds up later reads; without it they parse index.json. Staging
    # that failed is not tried again: the same directory or index would fail it again.
    staged = None if staging is None else staging.result()
    if current != saved.sha256 and (staging is None or staged is not None):
        with contextlib.suppress(OSError, ValueError):
            write_sidecar(result.index, store_path, saved.sha256, saved.size, staged=staged)
    # Last, once everything beside the store is written: the next `cce index` of exactly
    # these files may then find this store in place without building.
    result.remember_store(saved.sha256, saved.size)
    return _report(args, directory, store_path, result, saved.size, started)
