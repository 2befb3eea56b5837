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
from typing import TYPE_CHECKING

from cce_cli.buildopts import BuildSettings, build_settings, progress_bar
from cce_cli.errors import CliError
from cce_retrieval.embedder import Embedder, HashEmbedder
from cce_retrieval.hybrid import QueryEmbedder
from cce_retrieval.model import Index
from cce_retrieval.ollama import OllamaEmbedder
from cce_retrieval.sidecar import load_store
from cce_retrieval.store import StoreError

if TYPE_CHECKING:  # the build module (and its grammars) load only when a build runs
    from cce_retrieval.build import BuildResult


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
    from cce_retrieval.build import BuildError, build_index

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

    Only the exact name `ollama` selects Ollama, health-checked first; when it does not
    answer, `refusal(base_url)` is the error message. Any other name means hash.
    """
    try:
        index = load_store(path)
    except StoreError as err:
        raise CliError(str(err)) from None
    if index.embedder != "ollama":
        return index, HashEmbedder()
    ollama = OllamaEmbedder.from_env()
    if not ollama.healthy():
        raise CliError(refusal(ollama.base_url))
    return index, ollama
