"""The cache key's salt: every setting that shapes a build, and a digest of the code itself.

Why it exists: an entry is reused only for the very inputs that made it. Besides the
file's path and text, those are the engine version, the language packs, the tokenizer,
the protection mode, the embedding space (embedder, model, the server asked, without its
credentials, and the vector width when a health check has told it), the grammars'
installed versions and the package's own sources, in every subpackage
(docs/index-store.md#build-cache).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import urllib.parse
from typing import Final

import attrs

import cce_retrieval
from cce_metrics import TOKENIZER_ID

CACHE_FORMAT: Final = "cce.build-cache/v5"


@attrs.frozen(slots=True)
class CacheSalt:
    """Everything besides a file's path and text that changes what the build makes of it.

    `code` is a digest of this package's own source and the grammar versions, so an
    upgraded (or locally edited) chunker never reuses entries made by another one.
    """

    engine_version: str
    pack_set: str
    tokenizer: str
    protect: bool
    embedder: str
    model: str
    code: str = ""
    protection: str = "reference"
    """The `--protection` mode: a strict build never reuses a reference build's entries."""
    endpoint: str = ""
    """The server the embedder asks (`space_endpoint`), "" for one that runs in process:
    two servers serving the same model name need not share a space."""
    dimension: int | None = None
    """The embedder's vector width when it is known before the build (a health check
    asked the server), else None; the build then compares the cached vectors with a
    live one (`cce_retrieval.build.embeddings`)."""

    @classmethod
    def for_build(cls, protect: bool, embedder: object, protection: str = "reference") -> CacheSalt:
        """The salt of a build with `protect`, `embedder` (its `name` and any `model`) and
        the protection mode."""
        from cce_retrieval.chunk.packs import PACK_SET
        from cce_retrieval.store.fingerprint import (
            BLOCK_NESTING_LIMIT,
            ENGINE_VERSION,
            MARKDOWN_SECTION_TOKENS,
        )

        return cls(
            engine_version=f"{ENGINE_VERSION}/{BLOCK_NESTING_LIMIT}/{MARKDOWN_SECTION_TOKENS}",
            pack_set=PACK_SET,
            tokenizer=TOKENIZER_ID,
            protect=protect,
            embedder=str(getattr(embedder, "name", "")),
            model=str(getattr(embedder, "model", "")),
            code=code_digest(),
            protection=protection,
            endpoint=space_endpoint(embedder),
            dimension=known_dimension(embedder),
        )

    def digest(self) -> bytes:
        text = json.dumps([CACHE_FORMAT, *attrs.astuple(self)], separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).digest()


def space_endpoint(embedder: object) -> str:
    """The server an embedder asks (its `base_url`) without user information, so the key
    never holds a credential and a new password keeps the entries; "" when it has none.

    The scheme and host are lower-cased and a trailing `/` dropped, the spellings that
    name the same server.
    """
    base_url = getattr(embedder, "base_url", None)
    if not isinstance(base_url, str):
        return ""
    try:
        parts = urllib.parse.urlsplit(base_url)
    except ValueError:
        return base_url.rpartition("@")[2]
    host = parts.netloc.rpartition("@")[2].lower()
    return urllib.parse.urlunsplit(
        (parts.scheme.lower(), host, parts.path.rstrip("/"), parts.query, "")
    )


def known_dimension(embedder: object) -> int | None:
    """The width of the embedder's vectors if it has seen one (`dimension`), else None."""
    dimension = getattr(embedder, "dimension", None)
    return dimension if type(dimension) is int and dimension > 0 else None


_GRAMMARS: Final = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-javascript",
    "tree-sitter-ruby",
    "tree-sitter-rust",
    "tree-sitter-typescript",
    "tree-sitter-c",
)


# The `cce_retrieval` package directory: every source below it can change what a build makes.
PACKAGE_DIR: Final = os.path.dirname(os.path.abspath(cce_retrieval.__file__))


@functools.cache
def code_digest() -> str:
    """SHA-256 over the package's `.py` sources, in every subpackage, and the installed
    grammar versions."""
    digest = hashlib.sha256()
    for relative, content in package_sources(PACKAGE_DIR):
        digest.update(relative.encode() + b"\0" + content + b"\0")
    for distribution in _GRAMMARS:
        digest.update(f"{distribution}={_installed_version(distribution)}\0".encode())
    return digest.hexdigest()


def package_sources(package_dir: str) -> list[tuple[str, bytes]]:
    """Every `.py` file under `package_dir`, recursively: its `/`-separated path relative
    to `package_dir` and its bytes, sorted by path so the order never depends on the disk."""
    found: list[tuple[str, bytes]] = []
    for directory, subdirectories, files in os.walk(package_dir):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, package_dir).replace(os.sep, "/")
                with open(path, "rb") as handle:
                    found.append((relative, handle.read()))
    return sorted(found)


def _installed_version(distribution: str) -> str:
    """`distribution`'s installed version ("?" if it is not installed).

    Read from the name of its wheel's `.dist-info` directory beside its package: one
    directory listing, where `importlib.metadata` (then the fallback) takes about a
    tenth of a second to import and search, on every build's start.
    """
    name = distribution.replace("-", "_")
    try:
        origin = getattr(importlib.util.find_spec(name), "origin", None)
    except (ImportError, ValueError):
        origin = None
    if isinstance(origin, str):
        site = os.path.dirname(os.path.dirname(origin))
        prefix, suffix = name.lower() + "-", ".dist-info"
        with contextlib.suppress(OSError):
            found = [
                entry[len(prefix) : -len(suffix)]
                for entry in os.listdir(site)
                if entry.lower().startswith(prefix) and entry.endswith(suffix)
            ]
            if len(found) == 1 and found[0]:
                return found[0]
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"
