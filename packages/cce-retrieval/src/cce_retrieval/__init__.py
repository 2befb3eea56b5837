"""cce-retrieval: code retrieval byte-identical to the reference engine.

The public API: build an index from a directory, save and load its store, search it
with the hybrid pipeline or any registered backend, and the value types, embedders and
errors those take and raise. Everything importable from here is supported; submodules
are implementation detail. See README.md and docs/architecture.md.
"""

from __future__ import annotations

from cce_retrieval.backends import (
    BACKENDS,
    ENTRY_POINT_GROUP,
    Backend,
    BackendConfigError,
    BackendSpec,
    Param,
    Query,
    backend_names,
    backend_spec,
    create_backend,
    register_backend,
)
from cce_retrieval.build import BuildError, BuildResult, ProgressCallback, build_index, default_jobs
from cce_retrieval.buildcache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_MAX_BYTES
from cce_retrieval.buildcache import BuildCache, CacheSalt
from cce_retrieval.conformance import conformance_document
from cce_retrieval.derived import RetrievalIndex, retrieval_index
from cce_retrieval.embedder import EMBED_DIM, Embedder, EmbedError, HashEmbedder
from cce_retrieval.embedders import (
    EMBEDDERS,
    EmbedderConfigError,
    EmbedderSpec,
    EmbeddingSpaceError,
    check_query_vector,
    create_embedder,
    embedder_names,
    embedder_spec,
    query_embedder,
    register_embedder,
)
from cce_retrieval.exclusion import Exclusion, ExclusionReason, why_not_indexed
from cce_retrieval.fileio import describe_os_error, write_atomic
from cce_retrieval.fingerprint import fingerprint_document, fingerprint_path, write_fingerprint
from cce_retrieval.hybrid import (
    REFERENCE_PARAMS,
    QueryEmbedder,
    SearchParams,
    bm25_only_search,
    search,
    search_with_vector,
    vector_search,
)
from cce_retrieval.jsonfloat import format_json_float
from cce_retrieval.model import Chunk, Index, SearchResult
from cce_retrieval.numeric import format6, format6_signed, score_key
from cce_retrieval.ollama import OllamaEmbedder
from cce_retrieval.openai import OpenAIEmbedder
from cce_retrieval.sidecar import load_store, write_sidecar
from cce_retrieval.sources import (
    SourceFile,
    Sources,
    SourcesError,
    Staleness,
    compare_sources,
    read_sources,
    sources_path,
    sources_root,
    write_sources,
)
from cce_retrieval.store_load import load_index, parse_index
from cce_retrieval.store_paths import StoreError, default_store_path, resolve_store_path
from cce_retrieval.store_write import SavedStore, save_index, serialize_index, write_store
from cce_retrieval.text import ascii_lower, rust_trim

__all__ = [
    "BACKENDS",
    "DEFAULT_CACHE_MAX_BYTES",
    "EMBEDDERS",
    "EMBED_DIM",
    "ENTRY_POINT_GROUP",
    "REFERENCE_PARAMS",
    "Backend",
    "BackendConfigError",
    "BackendSpec",
    "BuildCache",
    "BuildError",
    "BuildResult",
    "CacheSalt",
    "Chunk",
    "EmbedError",
    "Embedder",
    "EmbedderConfigError",
    "EmbedderSpec",
    "EmbeddingSpaceError",
    "Exclusion",
    "ExclusionReason",
    "HashEmbedder",
    "Index",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "Param",
    "ProgressCallback",
    "Query",
    "QueryEmbedder",
    "RetrievalIndex",
    "SavedStore",
    "SearchParams",
    "SearchResult",
    "SourceFile",
    "Sources",
    "SourcesError",
    "Staleness",
    "StoreError",
    "ascii_lower",
    "backend_names",
    "backend_spec",
    "bm25_only_search",
    "build_index",
    "check_query_vector",
    "compare_sources",
    "conformance_document",
    "create_backend",
    "create_embedder",
    "default_jobs",
    "default_store_path",
    "describe_os_error",
    "embedder_names",
    "embedder_spec",
    "fingerprint_document",
    "fingerprint_path",
    "format6",
    "format6_signed",
    "format_json_float",
    "load_index",
    "load_store",
    "parse_index",
    "query_embedder",
    "read_sources",
    "register_backend",
    "register_embedder",
    "resolve_store_path",
    "retrieval_index",
    "rust_trim",
    "save_index",
    "score_key",
    "search",
    "search_with_vector",
    "serialize_index",
    "sources_path",
    "sources_root",
    "vector_search",
    "why_not_indexed",
    "write_atomic",
    "write_fingerprint",
    "write_sidecar",
    "write_sources",
    "write_store",
]
