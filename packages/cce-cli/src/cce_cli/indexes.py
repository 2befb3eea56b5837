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

from cce_cli.errors import CliError
from cce_retrieval.build import BuildError, BuildResult, build_index
from cce_retrieval.embedder import Embedder, EmbedError, HashEmbedder
from cce_retrieval.hybrid import QueryEmbedder
from cce_retrieval.model import Index
from cce_retrieval.ollama import OllamaConfigError, OllamaEmbedder, OllamaUnreachable, redact_url
from cce_retrieval.protection import PROTECTIONS, REFERENCE
from cce_retrieval.store import StoreError, load_index


def add_protection_argument(parser: argparse.ArgumentParser, default: str | None) -> None:
    """`--protection reference|strict` for every command that builds an index."""
    parser.add_argument(
        "--protection",
        choices=PROTECTIONS,
        default=default,
        help="secret protection: reference (default; byte-identical to the reference "
        "engine) or strict (also skips more credential files and redacts more secret "
        "shapes; docs/hostile-input.md#secrets)",
    )


def build_or_fail(
    directory: str, embedder: Embedder, protect: bool = True, protection: str = REFERENCE
) -> BuildResult:
    """`build_index`, with a build failure (e.g. an embedder error) as a `CliError`."""
    try:
        return build_index(directory, embedder, protect=protect, protection=protection)
    except BuildError as err:
        raise CliError(str(err)) from None


def protection_notice(result: BuildResult) -> str | None:
    """Under reference protection, the one line saying what strict protection would add."""
    if result.protection != REFERENCE or not (result.strict_redactions or result.strict_skips):
        return None
    return (
        f"warning: --protection strict would also redact {result.strict_redactions} "
        f"secret(s) and skip {result.strict_skips} credential file(s) that the default "
        "protection kept; re-run with --protection strict to leave them out"
    )


def print_protection_notice(result: BuildResult) -> None:
    notice = protection_notice(result)
    if notice is not None:
        print(notice, file=sys.stderr)


Refusal = Callable[[str, EmbedError | None], str]
"""(redacted base URL, why the health check failed — None or `OllamaUnreachable` when
nothing answered) → the command's error message."""


def ollama_from_env() -> OllamaEmbedder:
    """The Ollama embedder `CCE_OLLAMA_URL`/`CCE_OLLAMA_MODEL` describe; a bad URL is a CliError."""
    ollama = OllamaEmbedder.from_env()
    try:
        ollama.check_url()
    except OllamaConfigError as err:
        raise CliError(str(err)) from None
    return ollama


def ollama_failure(ollama: OllamaEmbedder) -> EmbedError | None:
    """Why the health check failed, or None when Ollama answered it correctly."""
    try:
        ollama.check_health()
    except EmbedError as err:
        return err
    return None


def is_unreachable(failure: EmbedError | None) -> bool:
    """True when no HTTP exchange happened (the reference's "unreachable" case)."""
    return failure is None or isinstance(failure, OllamaUnreachable)


def open_store(path: str, refusal: Refusal) -> tuple[Index, QueryEmbedder]:
    """Load the store at `path` and the query embedder its recorded name calls for.

    Only the exact name `ollama` selects Ollama, health-checked first; when it does not
    answer, `refusal(redacted base URL, failure)` is the error message. Any other name
    means hash.
    """
    try:
        index = load_index(path)
    except StoreError as err:
        raise CliError(str(err)) from None
    if index.embedder != "ollama":
        return index, HashEmbedder()
    ollama = ollama_from_env()
    failure = ollama_failure(ollama)
    if failure is not None:
        raise CliError(refusal(redact_url(ollama.base_url), failure))
    return index, ollama
