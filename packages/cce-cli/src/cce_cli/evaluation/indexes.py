"""How a command gets its index: build a corpus in memory, or open a persisted store.

Why it exists: `cce index`, `cce conformance`, `cce search` and `cce relevance` all
turn a build or load failure into the same `CliError`, and the two read commands pick
the query embedder from the name the store records, refusing an Ollama-built store
when Ollama does not answer (never mixing embedding spaces). Each command keeps only
its own wording of that refusal. `ollama_from_env` and `ollama_failure` are shared with
`cce index`: a malformed `CCE_OLLAMA_URL` is an error of its own, and a health check that
fails says why (refused connection, HTTP status, garbage body, deadline), with the URL's
credentials redacted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TypeVar

from cce_cli.errors import CliError
from cce_retrieval import (
    EmbeddingSpaceError,
    EmbedError,
    OllamaConfigError,
    OllamaUnreachable,
    StoreError,
    embedder_spec,
    load_store,
    query_embedder,
    redact_url,
    repair_stale_fingerprint,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_cli.commands.build_options import BuildSettings
    from cce_retrieval import (
        BuildResult,
        Embedder,
        Index,
        PersistedIndex,
        ProgressCallback,
        QueryEmbedder,
        RecordedBuild,
    )

_Built = TypeVar("_Built")

# The build's names (chunker, grammars, build cache, progress bars) are imported where a
# build runs: `cce search` opens a store and should not pay for them.


def add_protection_argument(parser: argparse.ArgumentParser, default: str | None) -> None:
    """`--protection reference|strict` for every command that builds an index."""
    from cce_retrieval import PROTECTIONS

    parser.add_argument(
        "--protection",
        choices=PROTECTIONS,
        default=default,
        help="secret protection: reference (default; byte-identical to the reference "
        "engine) or strict (also skips more credential files and redacts more secret "
        "shapes; docs/hostile-input.md#secrets)",
    )


def build_or_fail(
    directory: str,
    embedder: Embedder,
    protect: bool = True,
    args: argparse.Namespace | None = None,
    protection: str | None = None,
) -> BuildResult:
    """`build_index`, with a build failure (e.g. an embedder error) as a `CliError`.

    `args` carries the shared build options (`--jobs`, `--no-cache`, `--progress`);
    without it the build is serial and uncached. `protection` (else `args.protection`,
    else the default) selects reference or strict secret protection.
    """
    from cce_cli.commands.build_options import BuildSettings, build_settings
    from cce_retrieval import DEFAULT_PROTECTION

    if protection is None:
        protection = getattr(args, "protection", None) or DEFAULT_PROTECTION
    if args is None:
        settings = BuildSettings(jobs=1, cache=None, progress=False)
    else:
        settings = build_settings(args, protect, embedder, protection)
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
    from cce_cli.commands.build_options import progress_bar
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
    args: argparse.Namespace,
    protection: str,
    warn: Callable[[str], None],
) -> PersistedIndex:
    """`persist_index` with the shared build options of `args`, for `cce index`: a build
    failure, or a store that cannot be written, is a `CliError` (any previous store is
    then unchanged)."""
    from cce_cli.commands.build_options import build_settings
    from cce_retrieval import StoreError, persist_index

    settings = build_settings(args, protect, embedder, protection)
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


def protection_notice(result: BuildResult | RecordedBuild) -> str | None:
    """Under reference protection, the one line saying what strict protection would add."""
    from cce_retrieval import DEFAULT_PROTECTION

    if result.protection != DEFAULT_PROTECTION or not (
        result.strict_redactions or result.strict_skips
    ):
        return None
    return (
        f"warning: --protection strict would also redact {result.strict_redactions} "
        f"secret(s) and skip {result.strict_skips} credential file(s) that the default "
        "protection kept; re-run with --protection strict to leave them out"
    )


def print_protection_notice(result: BuildResult | RecordedBuild) -> None:
    notice = protection_notice(result)
    if notice is not None:
        print(notice, file=sys.stderr)


Refusal = Callable[[str, EmbedError | None], str]
"""(redacted base URL, why the health check failed — None or `OllamaUnreachable` when
nothing answered) → the command's error message."""


def check_remote(embedder: object) -> EmbedError | None:
    """Why a server-backed embedder cannot be used, or None when it answered correctly.

    A malformed base URL (`check_url`) is a CliError of its own; then the health check:
    `check_health` when the embedder has one (it raises with the cause), else `healthy`.
    """
    check_url = getattr(embedder, "check_url", None)
    if callable(check_url):
        try:
            check_url()
        except OllamaConfigError as err:
            raise CliError(str(err)) from None
    check_health = getattr(embedder, "check_health", None)
    if callable(check_health):
        try:
            check_health()
        except EmbedError as err:
            return err
        return None
    healthy = getattr(embedder, "healthy", None)
    if callable(healthy) and not healthy():
        return OllamaUnreachable("no answer to the health check")
    return None


def is_unreachable(failure: EmbedError | None) -> bool:
    """True when no HTTP exchange happened (the reference's "unreachable" case)."""
    return failure is None or isinstance(failure, OllamaUnreachable)


def remote_problem(base_url: str, failure: EmbedError | None) -> str:
    """ "Ollama is unreachable at URL", or the failed health check with its cause."""
    if is_unreachable(failure):
        return f"Ollama is unreachable at {base_url}"
    return f"the Ollama health check at {base_url} failed ({failure})"


def open_store(path: str, refusal: Refusal) -> tuple[Index, QueryEmbedder]:
    """Load the store at `path` and the query embedder its recorded name calls for.

    The exact recorded name selects a registered embedder (an unknown name means hash);
    one that talks to a server is checked first (`check_remote`), and when that fails,
    `refusal(redacted base URL, failure)` is the error message. A store that records a
    model is queried with that model; another one is refused (never mixing embedding
    spaces).
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
    except EmbeddingSpaceError as err:
        raise CliError(str(err)) from None
    if embedder_spec(index.embedder, fallback=True).remote:
        if callable(getattr(embedder, "check", None)):
            # Embedders with `check()` (OpenAI-compatible) report the server's own message.
            check_server(embedder, lambda: "")
        else:
            failure = check_remote(embedder)
            if failure is not None:
                url = redact_url(str(getattr(embedder, "base_url", "")))
                raise CliError(refusal(url, failure))
    return index, embedder


def check_server(
    embedder: object,
    unreachable: Callable[[], str],
    consequence: str = "refusing to query across mismatched embedding spaces",
) -> None:
    """Ask a server-backed embedder whether it works before relying on it.

    An embedder with `check()` raises EmbedError carrying the server's own message (a
    missing model is reported as such); one with only `healthy()` gets `unreachable()`.
    """
    check = getattr(embedder, "check", None)
    if callable(check):
        try:
            check()
        except EmbedError as err:
            raise CliError(f"{err}; {consequence}") from None
        return
    healthy = getattr(embedder, "healthy", None)
    if callable(healthy) and not healthy():
        raise CliError(unreachable())
