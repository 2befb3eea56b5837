"""How a command gets its index: build a corpus in memory, or open a persisted store.

Why it exists: `cce index`, `cce conformance`, `cce search` and `cce relevance` all
turn a build or load failure into the same `CliError`, and the two read commands pick
the query embedder from the name the store records, refusing an Ollama-built store
when Ollama does not answer (never mixing embedding spaces). Each command keeps only
its own wording of that refusal.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from cce_cli.buildopts import BuildSettings, build_settings, progress_bar
from cce_cli.errors import CliError
from cce_retrieval import (
    BuildError,
    BuildResult,
    Embedder,
    EmbeddingSpaceError,
    EmbedError,
    Index,
    QueryEmbedder,
    StoreError,
    build_index,
    embedder_spec,
    load_store,
    query_embedder,
)


def build_or_fail(
    directory: str,
    embedder: Embedder,
    protect: bool = True,
    args: argparse.Namespace | None = None,
) -> BuildResult:
    """`build_index`, with a build failure (e.g. an embedder error) as a `CliError`.

    `args` carries the shared build options (`--jobs`, `--no-cache`, `--progress`);
    without it the build is serial and uncached.
    """
    if args is None:
        settings = BuildSettings(jobs=1, cache=None, progress=False)
    else:
        settings = build_settings(args, protect, embedder)
    try:
        with progress_bar(settings.progress, "indexing") as progress:
            result = build_index(
                directory,
                embedder,
                protect=protect,
                jobs=settings.jobs,
                cache=settings.cache,
                progress=progress,
            )
    except BuildError as err:
        raise CliError(str(err)) from None
    if settings.cache is not None and settings.cache.misses:
        settings.cache.prune()
    return result


def open_store(path: str, refusal: Callable[[str], str]) -> tuple[Index, QueryEmbedder]:
    """Load the store at `path` and the query embedder its recorded name calls for.

    The exact recorded name selects a registered embedder (an unknown name means hash);
    one that talks to a server is health-checked first, and when it does not answer,
    `refusal(base_url)` is the error message. A store that records a model is queried
    with that model; another one is refused (never mixing embedding spaces).
    """
    try:
        index = load_store(path)
    except StoreError as err:
        raise CliError(str(err)) from None
    try:
        embedder = query_embedder(index)
    except EmbeddingSpaceError as err:
        raise CliError(str(err)) from None
    if embedder_spec(index.embedder, fallback=True).remote:
        check_server(embedder, lambda: refusal(str(getattr(embedder, "base_url", ""))))
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
