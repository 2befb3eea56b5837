"""The persisted store in one import: paths, bytes, atomic save, loading, fingerprint.

Why it exists: callers that work with whole stores (the CLI's index and search
commands) import from here; each concern lives in its own module (`store_paths`,
`jsonfloat`, `fileio`, `store_write`, `store_load`, `fingerprint`) and this facade
re-exports their names so one import keeps working. See docs/index-store.md.
"""

from __future__ import annotations

from cce_retrieval.fileio import describe_os_error, write_atomic
from cce_retrieval.fingerprint import (
    BLOCK_NESTING_LIMIT,
    ENGINE_VERSION,
    FINGERPRINT_SCHEMA,
    MARKDOWN_SECTION_TOKENS,
    STORE_SPEC_VERSION,
    embed_dim,
    fingerprint_document,
    fingerprint_path,
    store_sha256,
    write_fingerprint,
)
from cce_retrieval.jsonfloat import format_json_float
from cce_retrieval.store_load import embedding_matrix, load_index, parse_index
from cce_retrieval.store_paths import StoreError, default_store_path, resolve_store_path
from cce_retrieval.store_write import (
    SavedStore,
    embedding_lengths,
    save_index,
    serialize_index,
    write_store,
)

__all__ = [
    "BLOCK_NESTING_LIMIT",
    "ENGINE_VERSION",
    "FINGERPRINT_SCHEMA",
    "MARKDOWN_SECTION_TOKENS",
    "STORE_SPEC_VERSION",
    "SavedStore",
    "StoreError",
    "default_store_path",
    "describe_os_error",
    "embed_dim",
    "embedding_lengths",
    "embedding_matrix",
    "fingerprint_document",
    "fingerprint_path",
    "format_json_float",
    "load_index",
    "parse_index",
    "resolve_store_path",
    "save_index",
    "serialize_index",
    "store_sha256",
    "write_atomic",
    "write_fingerprint",
    "write_store",
]
