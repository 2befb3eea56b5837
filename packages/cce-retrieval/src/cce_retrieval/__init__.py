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
    from cce_retrieval.build.cache import DEFAULT_MAX_BYTES as DEFAULT_CACHE_MAX_BYTES
    from cce_retrieval.build.cache import BuildCache, CacheSalt
    from cce_retrieval.build.errors import BuildError
    from cce_retrieval.build.outcomes import ProgressCallback, default_jobs
    from cce_retrieval.build.pipeline import BuildResult, RecordedBuild, build_index
    from cce_retrieval.build.processes import forks_without_garbage
    from cce_retrieval.chunk.chunker import chunk_file
    from cce_retrieval.chunk.conformance import conformance_document
    from cce_retrieval.embed.errors import (
        EmbedderMisconfigured,
        EmbedderModelMissing,
        EmbedderUnavailable,
        EmbedderUnreachable,
    )
    from cce_retrieval.embed.hashing import (
        EMBED_DIM,
        Embedder,
        EmbedError,
        HashEmbedder,
    )
    from cce_retrieval.embed.ollama import OllamaEmbedder
    from cce_retrieval.embed.ollama_errors import OllamaConfigError, OllamaUnreachable, redact_url
    from cce_retrieval.embed.openai import OpenAIEmbedder
    from cce_retrieval.embed.plugins import EMBEDDER_ENTRY_POINT_GROUP
    from cce_retrieval.embed.registry import (
        EMBEDDERS,
        CheckedEmbedder,
        EmbedderConfigError,
        EmbedderSpec,
        EmbeddingSpaceError,
        check_embedder,
        create_embedder,
        embedder_model,
        embedder_names,
        embedder_spec,
        load_embedder_plugins,
        non_unit_vectors_notice,
        query_embedder,
        register_embedder,
    )
    from cce_retrieval.model import Chunk, Index, SearchResult
    from cce_retrieval.parity.jsonfloat import format_json_float
    from cce_retrieval.parity.numeric import format6, format6_signed
    from cce_retrieval.parity.text import ascii_lower, rust_trim
    from cce_retrieval.plugin_calls import PluginError, PluginInterrupt
    from cce_retrieval.protect.redactor import redact as reference_redact
    from cce_retrieval.protect.strict import (
        DEFAULT_PROTECTION,
        PROTECTIONS,
        protect_text,
    )
    from cce_retrieval.rank.backends import (
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
    from cce_retrieval.rank.derived import RetrievalIndex, retrieval_index
    from cce_retrieval.rank.hybrid import (
        REFERENCE_PARAMS,
        QueryEmbedder,
        QueryVectorError,
        SearchParams,
        bm25_only_search,
        search,
        search_counted,
        vector_search,
        vectorless_query,
    )
    from cce_retrieval.store.fileio import (
        RefusedInputError,
        describe_os_error,
        read_input_file,
        write_atomic,
    )
    from cce_retrieval.store.fingerprint import (
        fingerprint_path,
        repair_stale_fingerprint,
    )
    from cce_retrieval.store.load import load_index, parse_index
    from cce_retrieval.store.paths import StoreError, resolve_store_path
    from cce_retrieval.store.persist import PersistedIndex, persist_index
    from cce_retrieval.store.sidecar import load_store
    from cce_retrieval.store.sources import (
        SourcesError,
        compare_sources,
        read_sources,
        sources_root,
    )
    from cce_retrieval.store.write import SavedStore, save_index, serialize_index
    from cce_retrieval.walk.exclusion import Exclusion, ExclusionReason, why_not_indexed

# Resolved on first use: a command imports only the modules it runs (`cce search`
# never loads the chunker's grammars), which is most of its start-up time.
_LAZY: dict[str, tuple[str, str]] = {
    "BACKENDS": ("cce_retrieval.rank.backends", "BACKENDS"),
    "PluginError": ("cce_retrieval.plugin_calls", "PluginError"),
    "PluginInterrupt": ("cce_retrieval.plugin_calls", "PluginInterrupt"),
    "ENTRY_POINT_GROUP": ("cce_retrieval.rank.backends", "ENTRY_POINT_GROUP"),
    "Backend": ("cce_retrieval.rank.backends", "Backend"),
    "BackendConfigError": ("cce_retrieval.rank.backends", "BackendConfigError"),
    "BackendSpec": ("cce_retrieval.rank.backends", "BackendSpec"),
    "Param": ("cce_retrieval.rank.backends", "Param"),
    "Query": ("cce_retrieval.rank.backends", "Query"),
    "backend_names": ("cce_retrieval.rank.backends", "backend_names"),
    "backend_spec": ("cce_retrieval.rank.backends", "backend_spec"),
    "create_backend": ("cce_retrieval.rank.backends", "create_backend"),
    "register_backend": ("cce_retrieval.rank.backends", "register_backend"),
    "BuildError": ("cce_retrieval.build.errors", "BuildError"),
    "BuildResult": ("cce_retrieval.build.pipeline", "BuildResult"),
    "ProgressCallback": ("cce_retrieval.build.outcomes", "ProgressCallback"),
    "RecordedBuild": ("cce_retrieval.build.pipeline", "RecordedBuild"),
    "build_index": ("cce_retrieval.build.pipeline", "build_index"),
    "default_jobs": ("cce_retrieval.build.outcomes", "default_jobs"),
    "DEFAULT_CACHE_MAX_BYTES": ("cce_retrieval.build.cache", "DEFAULT_MAX_BYTES"),
    "BuildCache": ("cce_retrieval.build.cache", "BuildCache"),
    "CacheSalt": ("cce_retrieval.build.cache", "CacheSalt"),
    "chunk_file": ("cce_retrieval.chunk.chunker", "chunk_file"),
    "conformance_document": ("cce_retrieval.chunk.conformance", "conformance_document"),
    "RetrievalIndex": ("cce_retrieval.rank.derived", "RetrievalIndex"),
    "retrieval_index": ("cce_retrieval.rank.derived", "retrieval_index"),
    "EMBED_DIM": ("cce_retrieval.embed.hashing", "EMBED_DIM"),
    "Embedder": ("cce_retrieval.embed.hashing", "Embedder"),
    "EmbedError": ("cce_retrieval.embed.hashing", "EmbedError"),
    "HashEmbedder": ("cce_retrieval.embed.hashing", "HashEmbedder"),
    "EMBEDDERS": ("cce_retrieval.embed.registry", "EMBEDDERS"),
    "EmbedderConfigError": ("cce_retrieval.embed.registry", "EmbedderConfigError"),
    "EmbedderSpec": ("cce_retrieval.embed.registry", "EmbedderSpec"),
    "EmbeddingSpaceError": ("cce_retrieval.embed.registry", "EmbeddingSpaceError"),
    "CheckedEmbedder": ("cce_retrieval.embed.registry", "CheckedEmbedder"),
    "check_embedder": ("cce_retrieval.embed.registry", "check_embedder"),
    "embedder_model": ("cce_retrieval.embed.registry", "embedder_model"),
    "load_embedder_plugins": ("cce_retrieval.embed.registry", "load_embedder_plugins"),
    "non_unit_vectors_notice": ("cce_retrieval.embed.registry", "non_unit_vectors_notice"),
    "EMBEDDER_ENTRY_POINT_GROUP": ("cce_retrieval.embed.plugins", "EMBEDDER_ENTRY_POINT_GROUP"),
    "EmbedderMisconfigured": ("cce_retrieval.embed.errors", "EmbedderMisconfigured"),
    "EmbedderModelMissing": ("cce_retrieval.embed.errors", "EmbedderModelMissing"),
    "EmbedderUnavailable": ("cce_retrieval.embed.errors", "EmbedderUnavailable"),
    "EmbedderUnreachable": ("cce_retrieval.embed.errors", "EmbedderUnreachable"),
    "create_embedder": ("cce_retrieval.embed.registry", "create_embedder"),
    "embedder_names": ("cce_retrieval.embed.registry", "embedder_names"),
    "embedder_spec": ("cce_retrieval.embed.registry", "embedder_spec"),
    "query_embedder": ("cce_retrieval.embed.registry", "query_embedder"),
    "register_embedder": ("cce_retrieval.embed.registry", "register_embedder"),
    "Exclusion": ("cce_retrieval.walk.exclusion", "Exclusion"),
    "ExclusionReason": ("cce_retrieval.walk.exclusion", "ExclusionReason"),
    "why_not_indexed": ("cce_retrieval.walk.exclusion", "why_not_indexed"),
    "describe_os_error": ("cce_retrieval.store.fileio", "describe_os_error"),
    "write_atomic": ("cce_retrieval.store.fileio", "write_atomic"),
    "forks_without_garbage": ("cce_retrieval.build.processes", "forks_without_garbage"),
    "RefusedInputError": ("cce_retrieval.store.fileio", "RefusedInputError"),
    "read_input_file": ("cce_retrieval.store.fileio", "read_input_file"),
    "fingerprint_path": ("cce_retrieval.store.fingerprint", "fingerprint_path"),
    "repair_stale_fingerprint": ("cce_retrieval.store.fingerprint", "repair_stale_fingerprint"),
    "REFERENCE_PARAMS": ("cce_retrieval.rank.hybrid", "REFERENCE_PARAMS"),
    "QueryEmbedder": ("cce_retrieval.rank.hybrid", "QueryEmbedder"),
    "QueryVectorError": ("cce_retrieval.rank.hybrid", "QueryVectorError"),
    "SearchParams": ("cce_retrieval.rank.hybrid", "SearchParams"),
    "bm25_only_search": ("cce_retrieval.rank.hybrid", "bm25_only_search"),
    "search": ("cce_retrieval.rank.hybrid", "search"),
    "search_counted": ("cce_retrieval.rank.hybrid", "search_counted"),
    "vector_search": ("cce_retrieval.rank.hybrid", "vector_search"),
    "vectorless_query": ("cce_retrieval.rank.hybrid", "vectorless_query"),
    "format_json_float": ("cce_retrieval.parity.jsonfloat", "format_json_float"),
    "Chunk": ("cce_retrieval.model", "Chunk"),
    "Index": ("cce_retrieval.model", "Index"),
    "SearchResult": ("cce_retrieval.model", "SearchResult"),
    "format6": ("cce_retrieval.parity.numeric", "format6"),
    "format6_signed": ("cce_retrieval.parity.numeric", "format6_signed"),
    "OllamaConfigError": ("cce_retrieval.embed.ollama_errors", "OllamaConfigError"),
    "OllamaEmbedder": ("cce_retrieval.embed.ollama", "OllamaEmbedder"),
    "OllamaUnreachable": ("cce_retrieval.embed.ollama_errors", "OllamaUnreachable"),
    "redact_url": ("cce_retrieval.embed.ollama_errors", "redact_url"),
    "OpenAIEmbedder": ("cce_retrieval.embed.openai", "OpenAIEmbedder"),
    "DEFAULT_PROTECTION": ("cce_retrieval.protect.strict", "DEFAULT_PROTECTION"),
    "PROTECTIONS": ("cce_retrieval.protect.strict", "PROTECTIONS"),
    "protect_text": ("cce_retrieval.protect.strict", "protect_text"),
    "reference_redact": ("cce_retrieval.protect.redactor", "redact"),
    "PersistedIndex": ("cce_retrieval.store.persist", "PersistedIndex"),
    "persist_index": ("cce_retrieval.store.persist", "persist_index"),
    "load_store": ("cce_retrieval.store.sidecar", "load_store"),
    "SourcesError": ("cce_retrieval.store.sources", "SourcesError"),
    "compare_sources": ("cce_retrieval.store.sources", "compare_sources"),
    "read_sources": ("cce_retrieval.store.sources", "read_sources"),
    "sources_root": ("cce_retrieval.store.sources", "sources_root"),
    "load_index": ("cce_retrieval.store.load", "load_index"),
    "parse_index": ("cce_retrieval.store.load", "parse_index"),
    "StoreError": ("cce_retrieval.store.paths", "StoreError"),
    "resolve_store_path": ("cce_retrieval.store.paths", "resolve_store_path"),
    "SavedStore": ("cce_retrieval.store.write", "SavedStore"),
    "save_index": ("cce_retrieval.store.write", "save_index"),
    "serialize_index": ("cce_retrieval.store.write", "serialize_index"),
    "ascii_lower": ("cce_retrieval.parity.text", "ascii_lower"),
    "rust_trim": ("cce_retrieval.parity.text", "rust_trim"),
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
    "EMBEDDER_ENTRY_POINT_GROUP",
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
    "CheckedEmbedder",
    "Chunk",
    "EmbedError",
    "Embedder",
    "EmbedderConfigError",
    "EmbedderMisconfigured",
    "EmbedderModelMissing",
    "EmbedderSpec",
    "EmbedderUnavailable",
    "EmbedderUnreachable",
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
    "PersistedIndex",
    "PluginError",
    "PluginInterrupt",
    "ProgressCallback",
    "Query",
    "QueryEmbedder",
    "QueryVectorError",
    "RecordedBuild",
    "RefusedInputError",
    "RetrievalIndex",
    "SavedStore",
    "SearchParams",
    "SearchResult",
    "SourcesError",
    "StoreError",
    "ascii_lower",
    "backend_names",
    "backend_spec",
    "bm25_only_search",
    "build_index",
    "check_embedder",
    "chunk_file",
    "compare_sources",
    "conformance_document",
    "create_backend",
    "create_embedder",
    "default_jobs",
    "describe_os_error",
    "embedder_model",
    "embedder_names",
    "embedder_spec",
    "fingerprint_path",
    "forks_without_garbage",
    "format6",
    "format6_signed",
    "format_json_float",
    "load_embedder_plugins",
    "load_index",
    "load_store",
    "non_unit_vectors_notice",
    "parse_index",
    "persist_index",
    "protect_text",
    "query_embedder",
    "read_input_file",
    "read_sources",
    "redact_url",
    "reference_redact",
    "register_backend",
    "register_embedder",
    "repair_stale_fingerprint",
    "resolve_store_path",
    "retrieval_index",
    "rust_trim",
    "save_index",
    "search",
    "search_counted",
    "serialize_index",
    "sources_root",
    "vector_search",
    "vectorless_query",
    "why_not_indexed",
    "write_atomic",
]
