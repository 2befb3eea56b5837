"""How a command gets its index: build a corpus in memory, or open a persisted store.

Why it exists: `cce index`, `cce conformance`, `cce search` and `cce relevance` all
turn a build or load failure into the same `CliError`, and the two read commands pick
the query embedder from the name the store records, refusing a store whose embedder
fails its health check (a server that does not answer: never mixing embedding spaces).
Each command keeps only its own wording of that refusal, built from the embedder's
registered description, never from its name. `embedder_failure` and `remote_problem` are
shared with `cce index`: a setting that cannot work is an error of its own, and a health
check that fails says why (refused connection, HTTP status, garbage body, deadline),
with the URL's credentials redacted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from cce_cli.errors import CliError
from cce_cli.output import display_text
from cce_retrieval import (
    EmbedderMisconfigured,
    EmbedderModelMissing,
    EmbedderUnavailable,
    EmbeddingSpaceError,
    StoreError,
    check_embedder,
    embedder_spec,
    load_store,
    non_unit_vectors_notice,
    query_embedder,
    repair_stale_fingerprint,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_cli.evaluation.building import BuildOptions, BuildSettings
    from cce_retrieval import (
        BuildResult,
        Embedder,
        EmbedderSpec,
        Index,
        PersistedIndex,
        ProgressCallback,
        QueryEmbedder,
        RecordedBuild,
    )

_Built = TypeVar("_Built")

# The build's names (chunker, grammars, build cache, progress bars) are imported where a
# build runs: `cce search` opens a store and should not pay for them.


def build_or_fail(
    directory: str,
    embedder: Embedder,
    protect: bool = True,
    build: BuildOptions | None = None,
    protection: str | None = None,
) -> BuildResult:
    """`build_index`, with a build failure (e.g. an embedder error) as a `CliError`.

    `build` carries the shared build options (`--jobs`, `--no-cache`, `--progress`);
    without it the build is serial and uncached. `protection` (else `build.protection`,
    else the default) selects reference or strict secret protection.
    """
    from cce_cli.evaluation.building import BuildSettings
    from cce_retrieval import DEFAULT_PROTECTION

    if protection is None:
        protection = (build.protection if build is not None else None) or DEFAULT_PROTECTION
    if build is None:
        settings = BuildSettings(jobs=1, cache=None, progress=False)
    else:
        settings = build.settings(protect, embedder, protection)
    return _build_with(settings, directory, embedder, protect, protection)


def _build_with(
    settings: BuildSettings,
    directory: str,
    embedder: Embedder,
    protect: bool,
    protection: str,
) -> BuildResult:
    """`build_index` with the worker count and cache `settings` chose, via `_run_build`."""
    from cce_retrieval import build_index

    return _run_build(
        settings,
        lambda progress: build_index(
            directory,
            embedder,
            protect=protect,
            protection=protection,
            jobs=settings.jobs,
            cache=settings.cache,
            progress=progress,
        ),
    )


def _run_build(
    settings: BuildSettings, build: Callable[[ProgressCallback | None], _Built]
) -> _Built:
    """`build(progress)` under the progress bar `settings` ask for, a build failure as a
    `CliError`; the cache pruned afterwards when the build missed in it."""
    from cce_cli.evaluation.building import progress_bar
    from cce_retrieval import BuildError

    try:
        with progress_bar(settings.progress, "indexing") as progress:
            result = build(progress)
    except BuildError as err:
        raise CliError(str(err)) from None
    if settings.cache is not None and settings.cache.misses:
        settings.cache.prune()
    return result


def persist_or_fail(
    directory: str,
    embedder: Embedder,
    store_path: str,
    protect: bool,
    build: BuildOptions,
    protection: str,
    warn: Callable[[str], None],
) -> PersistedIndex:
    """`persist_index` with the shared build options `build`, for `cce index`: a build
    failure, or a store that cannot be written, is a `CliError` (any previous store is
    then unchanged)."""
    from cce_retrieval import StoreError, persist_index

    settings = build.settings(protect, embedder, protection)
    try:
        return _run_build(
            settings,
            lambda progress: persist_index(
                directory,
                embedder,
                store_path,
                protect=protect,
                protection=protection,
                jobs=settings.jobs,
                cache=settings.cache,
                progress=progress,
                warn=warn,
            ),
        )
    except StoreError as err:
        raise CliError(f"{err} (any previous store there is unchanged)") from err


PROTECTION_NOTICE: Final = "strict-protection"
"""The name under which the build cache remembers the `--protection strict` notice."""

NAMED_FILES: Final = 5
"""Files the notice names before "and N more"."""


def protection_notice(
    result: BuildResult | RecordedBuild, paths: Sequence[str] | None = None
) -> str | None:
    """Under reference protection, the one line saying what strict protection would add,
    naming `paths` (the files behind it) when given."""
    from cce_retrieval import DEFAULT_PROTECTION

    if result.protection != DEFAULT_PROTECTION or not (
        result.strict_redactions or result.strict_skips
    ):
        return None
    named = ""
    if paths:
        shown = ", ".join(display_text(path) for path in paths[:NAMED_FILES])
        more = len(paths) - NAMED_FILES
        named = f" (in {shown}{f' and {more} more' if more > 0 else ''})"
    return (
        f"warning: --protection strict would also redact {result.strict_redactions} "
        f"secret(s) and skip {result.strict_skips} credential file(s) that the default "
        f"protection kept{named}; re-run with --protection strict to leave them out"
    )


def print_protection_notice(result: BuildResult | RecordedBuild, verbose: bool = False) -> None:
    """Print the notice once per corpus: the build cache remembers what it said for these
    files' content (under these settings and this version of cce), and a later run of
    the same corpus stays quiet unless `verbose`. Without a cache it is always printed.

    A build reused from the cache (`RecordedBuild`) knows from its walk which files
    strict protection would skip, not which it would redact in; it shows what the build
    that recorded the store said, when the cache kept that."""
    from cce_retrieval import RecordedBuild

    recorded = isinstance(result, RecordedBuild)
    names_known = not recorded or result.strict_redactions == 0
    notice = protection_notice(result, result.strict_paths if names_known else None)
    if notice is None:
        return
    cache, key = result.cache, result.corpus_key
    if cache is None or key is None:
        print(notice, file=sys.stderr)
        return
    shown = cache.get_notice(key, PROTECTION_NOTICE)
    if recorded and shown is not None:
        notice = shown
    if shown != notice or verbose or (recorded and shown is None):
        print(notice, file=sys.stderr)
    if shown is None or (shown != notice and not recorded):
        cache.put_notice(key, PROTECTION_NOTICE, notice)


Refusal = Callable[["EmbedderSpec", "EmbedderUnavailable"], str]
"""(the store's embedder, why its health check failed) → the command's error message."""


def embedder_failure(embedder: object) -> EmbedderUnavailable | None:
    """Why an embedder cannot be used, or None when its health check passed (or it has
    none). A setting that cannot work (a malformed base URL, a missing optional package)
    is a `CliError` of its own."""
    try:
        check_embedder(embedder)
    except EmbedderMisconfigured as err:
        raise CliError(str(err)) from None
    except EmbedderUnavailable as err:
        return err
    return None


def remote_problem(spec: EmbedderSpec, failure: EmbedderUnavailable) -> str:
    """ "Ollama is unreachable at URL", or the failed health check with its cause."""
    if failure.unreachable:
        return f"{spec.server} is unreachable at {failure.where}"
    return f"{spec.health_check} at {failure.where} failed ({failure})"


def capitalize(text: str) -> str:
    """`text` with its first letter upper-case (the rest as it is, unlike `str.capitalize`),
    for a registered remedy that starts a sentence."""
    return text[:1].upper() + text[1:]


def open_store(path: str, refusal: Refusal) -> tuple[Index, QueryEmbedder]:
    """Load the store at `path` and the query embedder its recorded name calls for.

    The exact recorded name selects a registered embedder (an unknown name means hash);
    one with a health check is checked first (`embedder_failure`), and when that fails,
    `refusal(spec, failure)` is the error message. A store that records a model is
    queried with that model; another one is refused (never mixing embedding spaces).
    """
    try:
        index = load_store(path)
    except StoreError as err:
        raise CliError(str(err)) from None
    repaired = repair_stale_fingerprint(index, path)
    if repaired is not None:
        print(repaired, file=sys.stderr)
    try:
        embedder = query_embedder(index)
    except EmbedderModelMissing as err:
        raise CliError(
            f"the store {path} was built with the {err.embedder} embedder but records no "
            f"model: set {err.model_env} to the model it was built with, or re-index it with "
            f"`cce index <dir> --embedder {err.embedder} --model NAME_OR_PATH`"
        ) from None
    except (EmbeddingSpaceError, EmbedderMisconfigured) as err:
        raise CliError(str(err)) from None
    failure = embedder_failure(embedder)
    if failure is not None:
        raise CliError(refusal(embedder_spec(index.embedder, fallback=True), failure))
    notice = non_unit_vectors_notice(index)
    if notice is not None:
        print(notice, file=sys.stderr)
    return index, embedder


def walk_error_warnings(walk_errors: int, gitignore_errors: int = 0) -> list[str]:
    """The warnings for a walk's errors: the reference's line for what it could not read
    (files under it were not indexed), and one for the `.gitignore` files among them that
    were refused (a FIFO, a device, over 8 MiB): those were ignored, so their directories
    were indexed as if they had none (docs/hostile-input.md#special-files-in-the-corpus)."""
    warnings = []
    unread = walk_errors - gitignore_errors
    if unread > 0:
        noun = "directory" if unread == 1 else "directories"
        warnings.append(
            f"warning: {unread} {noun} could not be read; files under them were NOT indexed — "
            "the index may be incomplete and may differ across machines"
        )
    if gitignore_errors > 0:
        files, pronoun = ("file", "it") if gitignore_errors == 1 else ("files", "they")
        were = "was" if gitignore_errors == 1 else "were"
        warnings.append(
            f"warning: {gitignore_errors} .gitignore {files} could not be read (not a regular "
            f"file, or larger than 8 MiB) and {were} ignored; files {pronoun} would have "
            "excluded were indexed"
        )
    return warnings
