"""cce-retrieval: code retrieval byte-identical to the reference engine.

The public API: build an index from a directory, save and load its store, search it
with the hybrid pipeline or any registered backend, and the value types, embedders and
errors those take and raise. Everything importable from here is supported; submodules
are implementation detail. See README.md and docs/architecture.md.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing `typing` costs start-up time; mypy treats any
# name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
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
    from cce_retrieval.build import (
        BuildError,
        BuildResult,
        ProgressCallback,
        build_index,
        default_jobs,
    )
    from cce_retrieval.buildcache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_MAX_BYTES
    from cce_retrieval.buildcache import BuildCache, CacheSalt
    from cce_retrieval.conformance import conformance_document
    from cce_retrieval.derived import RetrievalIndex, retrieval_index
    from cce_retrieval.embedder import EMBED_DIM, Embedder, EmbedError, HashEmbedder, check_vectors
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
    from cce_retrieval.fingerprint import (
        fingerprint_document,
        fingerprint_path,
        repair_stale_fingerprint,
        write_fingerprint,
    )
    from cce_retrieval.hybrid import (
        REFERENCE_PARAMS,
        QueryEmbedder,
        QueryVectorError,
        SearchParams,
        bm25_only_search,
        search,
        search_counted,
        search_with_vector,
        vector_search,
    )
    from cce_retrieval.jsonfloat import format_json_float
    from cce_retrieval.model import Chunk, Index, SearchResult
    from cce_retrieval.numeric import format6, format6_signed, score_key
    from cce_retrieval.ollama import OllamaEmbedder
    from cce_retrieval.ollama_errors import OllamaConfigError, OllamaUnreachable, redact_url
    from cce_retrieval.openai import OpenAIEmbedder
    from cce_retrieval.protection import (
        DEFAULT_PROTECTION,
        PROTECTIONS,
        is_strict_sensitive,
        strict_redact,
    )
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

# Resolved on first use: a command imports only the modules it runs (`cce search`
# never loads the chunker's grammars), which is most of its start-up time.
_LAZY: dict[str, tuple[str, str]] = {
    "BACKENDS": ("cce_retrieval.backends", "BACKENDS"),
    "ENTRY_POINT_GROUP": ("cce_retrieval.backends", "ENTRY_POINT_GROUP"),
    "Backend": ("cce_retrieval.backends", "Backend"),
    "BackendConfigError": ("cce_retrieval.backends", "BackendConfigError"),
    "BackendSpec": ("cce_retrieval.backends", "BackendSpec"),
    "Param": ("cce_retrieval.backends", "Param"),
    "Query": ("cce_retrieval.backends", "Query"),
    "backend_names": ("cce_retrieval.backends", "backend_names"),
    "backend_spec": ("cce_retrieval.backends", "backend_spec"),
    "create_backend": ("cce_retrieval.backends", "create_backend"),
    "register_backend": ("cce_retrieval.backends", "register_backend"),
    "BuildError": ("cce_retrieval.build", "BuildError"),
    "BuildResult": ("cce_retrieval.build", "BuildResult"),
    "ProgressCallback": ("cce_retrieval.build", "ProgressCallback"),
    "build_index": ("cce_retrieval.build", "build_index"),
    "default_jobs": ("cce_retrieval.build", "default_jobs"),
    "DEFAULT_CACHE_MAX_BYTES": ("cce_retrieval.buildcache", "DEFAULT_MAX_BYTES"),
    "BuildCache": ("cce_retrieval.buildcache", "BuildCache"),
    "CacheSalt": ("cce_retrieval.buildcache", "CacheSalt"),
    "conformance_document": ("cce_retrieval.conformance", "conformance_document"),
    "RetrievalIndex": ("cce_retrieval.derived", "RetrievalIndex"),
    "retrieval_index": ("cce_retrieval.derived", "retrieval_index"),
    "EMBED_DIM": ("cce_retrieval.embedder", "EMBED_DIM"),
    "Embedder": ("cce_retrieval.embedder", "Embedder"),
    "EmbedError": ("cce_retrieval.embedder", "EmbedError"),
    "HashEmbedder": ("cce_retrieval.embedder", "HashEmbedder"),
    "check_vectors": ("cce_retrieval.embedder", "check_vectors"),
    "EMBEDDERS": ("cce_retrieval.embedders", "EMBEDDERS"),
    "EmbedderConfigError": ("cce_retrieval.embedders", "EmbedderConfigError"),
    "EmbedderSpec": ("cce_retrieval.embedders", "EmbedderSpec"),
    "EmbeddingSpaceError": ("cce_retrieval.embedders", "EmbeddingSpaceError"),
    "check_query_vector": ("cce_retrieval.embedders", "check_query_vector"),
    "create_embedder": ("cce_retrieval.embedders", "create_embedder"),
    "embedder_names": ("cce_retrieval.embedders", "embedder_names"),
    "embedder_spec": ("cce_retrieval.embedders", "embedder_spec"),
    "query_embedder": ("cce_retrieval.embedders", "query_embedder"),
    "register_embedder": ("cce_retrieval.embedders", "register_embedder"),
    "Exclusion": ("cce_retrieval.exclusion", "Exclusion"),
    "ExclusionReason": ("cce_retrieval.exclusion", "ExclusionReason"),
    "why_not_indexed": ("cce_retrieval.exclusion", "why_not_indexed"),
    "describe_os_error": ("cce_retrieval.fileio", "describe_os_error"),
    "write_atomic": ("cce_retrieval.fileio", "write_atomic"),
    "fingerprint_document": ("cce_retrieval.fingerprint", "fingerprint_document"),
    "fingerprint_path": ("cce_retrieval.fingerprint", "fingerprint_path"),
    "repair_stale_fingerprint": ("cce_retrieval.fingerprint", "repair_stale_fingerprint"),
    "write_fingerprint": ("cce_retrieval.fingerprint", "write_fingerprint"),
    "REFERENCE_PARAMS": ("cce_retrieval.hybrid", "REFERENCE_PARAMS"),
    "QueryEmbedder": ("cce_retrieval.hybrid", "QueryEmbedder"),
    "QueryVectorError": ("cce_retrieval.hybrid", "QueryVectorError"),
    "SearchParams": ("cce_retrieval.hybrid", "SearchParams"),
    "bm25_only_search": ("cce_retrieval.hybrid", "bm25_only_search"),
    "search": ("cce_retrieval.hybrid", "search"),
    "search_counted": ("cce_retrieval.hybrid", "search_counted"),
    "search_with_vector": ("cce_retrieval.hybrid", "search_with_vector"),
    "vector_search": ("cce_retrieval.hybrid", "vector_search"),
    "format_json_float": ("cce_retrieval.jsonfloat", "format_json_float"),
    "Chunk": ("cce_retrieval.model", "Chunk"),
    "Index": ("cce_retrieval.model", "Index"),
    "SearchResult": ("cce_retrieval.model", "SearchResult"),
    "format6": ("cce_retrieval.numeric", "format6"),
    "format6_signed": ("cce_retrieval.numeric", "format6_signed"),
    "score_key": ("cce_retrieval.numeric", "score_key"),
    "OllamaConfigError": ("cce_retrieval.ollama_errors", "OllamaConfigError"),
    "OllamaEmbedder": ("cce_retrieval.ollama", "OllamaEmbedder"),
    "OllamaUnreachable": ("cce_retrieval.ollama_errors", "OllamaUnreachable"),
    "redact_url": ("cce_retrieval.ollama_errors", "redact_url"),
    "OpenAIEmbedder": ("cce_retrieval.openai", "OpenAIEmbedder"),
    "DEFAULT_PROTECTION": ("cce_retrieval.protection", "DEFAULT_PROTECTION"),
    "PROTECTIONS": ("cce_retrieval.protection", "PROTECTIONS"),
    "is_strict_sensitive": ("cce_retrieval.protection", "is_strict_sensitive"),
    "strict_redact": ("cce_retrieval.protection", "strict_redact"),
    "load_store": ("cce_retrieval.sidecar", "load_store"),
    "write_sidecar": ("cce_retrieval.sidecar", "write_sidecar"),
    "SourceFile": ("cce_retrieval.sources", "SourceFile"),
    "Sources": ("cce_retrieval.sources", "Sources"),
    "SourcesError": ("cce_retrieval.sources", "SourcesError"),
    "Staleness": ("cce_retrieval.sources", "Staleness"),
    "compare_sources": ("cce_retrieval.sources", "compare_sources"),
    "read_sources": ("cce_retrieval.sources", "read_sources"),
    "sources_path": ("cce_retrieval.sources", "sources_path"),
    "sources_root": ("cce_retrieval.sources", "sources_root"),
    "write_sources": ("cce_retrieval.sources", "write_sources"),
    "load_index": ("cce_retrieval.store_load", "load_index"),
    "parse_index": ("cce_retrieval.store_load", "parse_index"),
    "StoreError": ("cce_retrieval.store_paths", "StoreError"),
    "default_store_path": ("cce_retrieval.store_paths", "default_store_path"),
    "resolve_store_path": ("cce_retrieval.store_paths", "resolve_store_path"),
    "SavedStore": ("cce_retrieval.store_write", "SavedStore"),
    "save_index": ("cce_retrieval.store_write", "save_index"),
    "serialize_index": ("cce_retrieval.store_write", "serialize_index"),
    "write_store": ("cce_retrieval.store_write", "write_store"),
    "ascii_lower": ("cce_retrieval.text", "ascii_lower"),
    "rust_trim": ("cce_retrieval.text", "rust_trim"),
}


def __getattr__(name: str) -> object:
    import importlib

    target = _LAZY.get(name)
    if target is None:
        try:  # a submodule reached as an attribute (`cce_retrieval.model`)
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BACKENDS",
    "DEFAULT_CACHE_MAX_BYTES",
    "DEFAULT_PROTECTION",
    "EMBEDDERS",
    "EMBED_DIM",
    "ENTRY_POINT_GROUP",
    "PROTECTIONS",
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
    "OllamaConfigError",
    "OllamaEmbedder",
    "OllamaUnreachable",
    "OpenAIEmbedder",
    "Param",
    "ProgressCallback",
    "Query",
    "QueryEmbedder",
    "QueryVectorError",
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
    "check_vectors",
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
    "is_strict_sensitive",
    "load_index",
    "load_store",
    "parse_index",
    "query_embedder",
    "read_sources",
    "redact_url",
    "register_backend",
    "register_embedder",
    "repair_stale_fingerprint",
    "resolve_store_path",
    "retrieval_index",
    "rust_trim",
    "save_index",
    "score_key",
    "search",
    "search_counted",
    "search_with_vector",
    "serialize_index",
    "sources_path",
    "sources_root",
    "strict_redact",
    "vector_search",
    "why_not_indexed",
    "write_atomic",
    "write_fingerprint",
    "write_sidecar",
    "write_sources",
    "write_store",
]
