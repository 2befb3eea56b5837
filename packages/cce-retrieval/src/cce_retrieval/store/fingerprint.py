"""The fingerprint written beside a store: what built it, and a hash of its bytes.

Why it exists: a consumer must be able to tell, without loading the store, which engine,
tokenizer, pack set and embedder produced it and whether the bytes are intact
(docs/index-store.md). The document is compact JSON whose `sha256` is the hash of
itself with `sha256=""`.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Final

from cce_retrieval.embed.registry import EMBEDDERS
from cce_retrieval.model import Index
from cce_retrieval.store.fileio import (
    input_too_large,
    open_input_file,
    read_input_file,
    write_atomic,
)
from cce_retrieval.store.paths import MAX_STORE_BYTES
from cce_retrieval.store.write import embedding_lengths

STORE_SPEC_VERSION: Final = "1.0"
ENGINE_VERSION: Final = "2.9.0"
FINGERPRINT_SCHEMA: Final = "cce.fingerprint/v1"
BLOCK_NESTING_LIMIT: Final = 192
MARKDOWN_SECTION_TOKENS: Final = 400


def store_sha256(path: str) -> str:
    """SHA-256 hex of the store file's bytes as they are on disk now. Raises OSError
    (`RefusedInputError` for what is not a regular file or holds more than a store may)."""
    digest = hashlib.sha256()
    size = 0
    with open_input_file(path, MAX_STORE_BYTES, "stores") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            size += len(block)
            if size > MAX_STORE_BYTES:
                raise input_too_large(path, MAX_STORE_BYTES, "stores")
    return digest.hexdigest()


MAX_FINGERPRINT_BYTES: Final = 1 << 20
"""The largest fingerprint read back: cce writes about a kilobyte."""


def fingerprint_path(store_path: str) -> str:
    """`fingerprint.json` beside an `index.json`, else `<store name>.fingerprint.json`."""
    directory, name = os.path.split(store_path)
    file_name = "fingerprint.json" if name == "index.json" else f"{name}.fingerprint.json"
    return os.path.join(directory, file_name)


def embed_dim(index: Index) -> int:
    """The embedder's fixed dimension (hash: 256); else the first non-empty length, or 0."""
    spec = EMBEDDERS.get(index.embedder)
    if spec is not None and spec.fixed_dim is not None:
        return spec.fixed_dim
    for length in embedding_lengths(index):
        if length:
            return length
    return 0


def fingerprint_document(
    index: Index,
    store_digest: str,
    redaction: bool,
    pack_set: str | None = None,
    protection: str | None = None,
) -> bytes:
    """The fingerprint's compact JSON, `sha256` being the hash of itself with `sha256=""`.

    `protection` is recorded only when it is not the default (`"strict"`), so a
    default-protection fingerprint keeps the reference's bytes. `pack_set` defaults to
    this build's language packs.
    """
    return fingerprint_document_of(
        index.embedder, embed_dim(index), store_digest, redaction, pack_set, protection
    )


def fingerprint_document_of(
    embedder: str,
    dim: int,
    store_digest: str,
    redaction: bool,
    pack_set: str | None = None,
    protection: str | None = None,
) -> bytes:
    """`fingerprint_document` of a store whose index says only its `embedder` and `dim`
    (`embed_dim`): all the fingerprint takes from the index."""
    # Imported here: reading a store (which may repair its fingerprint) must not load
    # the grammars or the metrics package.
    from cce_metrics.tokens import TOKENIZER_ID
    from cce_retrieval.chunk.packs import PACK_SET

    if pack_set is None:
        pack_set = PACK_SET
    record: dict[str, object] = {
        "block_nesting_limit": BLOCK_NESTING_LIMIT,
        "embed_dim": dim,
        "embedder": embedder,
        "engine_version": ENGINE_VERSION,
        "markdown_section_tokens": MARKDOWN_SECTION_TOKENS,
        "pack_set": pack_set,
        "redaction": redaction,
        "schema": FINGERPRINT_SCHEMA,
        "sha256": "",
        "spec_version": STORE_SPEC_VERSION,
        "store_sha256": store_digest,
        "tokenizer": TOKENIZER_ID,
    }

    def render() -> bytes:
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    if protection is not None and protection != "reference":
        record["protection"] = protection
        record = dict(sorted(record.items()))
    record["sha256"] = hashlib.sha256(render()).hexdigest()
    return render()


def repair_stale_fingerprint(index: Index, store_path: str) -> str | None:
    """Rewrite a fingerprint that no longer describes its store; a warning, or None.

    A `cce index` killed between replacing the store and writing the fingerprint leaves
    the previous fingerprint, older than the store. Only then is the store hashed (so a
    normal load costs two `stat`s); when the recorded `store_sha256` differs, the
    fingerprint is rewritten from the store, keeping its recorded `redaction` and
    `protection`. A fingerprint that cannot be read or rewritten is left as it is.
    """
    target = fingerprint_path(store_path)
    try:
        if os.stat(target).st_mtime_ns >= os.stat(store_path).st_mtime_ns:
            return None
        recorded = json.loads(read_input_file(target, MAX_FINGERPRINT_BYTES, "fingerprints"))
        digest = store_sha256(store_path)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(recorded, dict) or recorded.get("store_sha256") == digest:
        return None
    redaction = recorded.get("redaction") is not False
    protection = recorded.get("protection")
    document = fingerprint_document(
        index, digest, redaction, protection=protection if isinstance(protection, str) else None
    )
    try:
        write_atomic(target, document)
    except OSError:
        return None
    return (
        f"warning: the fingerprint {target} did not match its store (an interrupted "
        "`cce index`?); it was rewritten from the store"
    )


def write_fingerprint(
    index: Index,
    store_path: str,
    redaction: bool,
    pack_set: str | None = None,
    protection: str | None = None,
) -> str:
    """Hash the saved store as read back from disk and write its fingerprint atomically.

    Returns the fingerprint path. Raises OSError (callers treat it as a warning).
    """
    document = fingerprint_document(
        index, store_sha256(store_path), redaction, pack_set, protection
    )
    target = fingerprint_path(store_path)
    write_atomic(target, document)
    return target
