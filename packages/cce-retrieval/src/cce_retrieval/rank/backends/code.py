"""The `code` and `code-hybrid` backends: their parameters, help and factories.

Why it exists: the code-aware ranking is opt-in, so it is two more registered backends
beside the reference's three, never a change to them. Every technique is a parameter
whose "off" value removes it, so each ablation is a `cce.toml` configuration
(docs/ranking.md); with every technique off, `code` ranks exactly like `bm25`.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from cce_retrieval.embed.registry import check_query_vector
from cce_retrieval.model import Index, SearchResult
from cce_retrieval.parity.text import rust_trim
from cce_retrieval.parity.tokenizer import unique_tokens
from cce_retrieval.rank.backends.builtin import check_embedding_space
from cce_retrieval.rank.backends.spec import Backend, BackendSpec, Param, ParamValue, Query
from cce_retrieval.rank.bm25 import BM25_B, BM25_K1
from cce_retrieval.rank.code import text
from cce_retrieval.rank.code.index import CHUNK_MODES, CodeOptions, code_index
from cce_retrieval.rank.code.ranker import RankSteps, candidate_pool, fuse, rerank, vector_pool
from cce_retrieval.rank.derived import retrieval_index
from cce_retrieval.rank.hybrid import unit_query

__all__ = ["CODE_BACKENDS", "HASH_EMBEDDER", "CodeBackend", "CodeHybridBackend"]

HASH_EMBEDDER = "hash"
VECTOR_SCOPES = ("corpus", "pool")

_STEPS = RankSteps()
_OPTIONS = CodeOptions()


@attrs.frozen(slots=True)
class CodeBackend:
    """Code-aware lexical search: BM25 over the code index, then the re-ranking steps."""

    name: str = "code"
    options: CodeOptions = _OPTIONS
    steps: RankSteps = _STEPS
    pool: int = 50

    def terms(self, query: str) -> list[str]:
        fold = self.options.fold_plurals
        if self.options.split_identifiers:
            return text.query_terms(query, fold=fold)
        tokens = unique_tokens(query)
        return list(dict.fromkeys(map(text.folded, tokens))) if fold else tokens

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if not rust_trim(query.text) or not index.chunks or k <= 0:
            return []
        code = code_index(index, self.options, query.corpus_root)
        terms = self.terms(query.text)
        pooled = candidate_pool(code, terms, max(self.pool, k), self.steps) if terms else {}
        return rerank(code, pooled, query.text, k, self.steps)


@attrs.frozen(slots=True)
class CodeHybridBackend:
    """`code` with the store's vector signal fused into its candidate pool."""

    name: str = "code-hybrid"
    lexical: CodeBackend = CodeBackend()
    vector_weight: float = 0.03
    symbol_vector_weight: float = 0.0
    hash_vector: bool = False
    embedder: str = ""
    model: str = ""
    vector_scope: str = "pool"

    def weight(self, index: Index, query: str) -> float:
        """The vector signal's weight for `query`: none for the hash embedder unless asked
        for, whose vector is a hashed bag of the very words BM25 already reads."""
        if index.embedder == HASH_EMBEDDER and not self.hash_vector:
            return 0.0
        return self.symbol_vector_weight if text.symbol_query(query) else self.vector_weight

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if not rust_trim(query.text) or not index.chunks or k <= 0:
            return []
        check_embedding_space(index, self.embedder, self.model)
        lexical = self.lexical
        code = code_index(index, lexical.options, query.corpus_root)
        pool = max(lexical.pool, k)
        terms = lexical.terms(query.text)
        # Rank scores put both signals on one scale, whatever the raw score ranges.
        steps = attrs.evolve(lexical.steps, rank_scores=True)
        pooled = candidate_pool(code, terms, pool, steps) if terms else {}
        weight = self.weight(index, query.text)
        if weight > 0.0:
            vector = query.vector()
            check_query_vector(index, vector)
            cosines = retrieval_index(index).cosines(unit_query(index, vector))
            within = pooled.keys() if self.vector_scope == "pool" else None
            near = vector_pool(code, cosines, pool, steps.rrf_k, within)
            pooled = fuse(pooled, near, weight)
        return rerank(code, pooled, query.text, k, steps, ordered=weight == 0.0)


_INDEX_PARAMS = (
    Param("k1", float, BM25_K1, 0.0, None, help="BM25 term-frequency saturation"),
    Param("b", float, BM25_B, 0.0, 1.0, help="BM25 length normalisation"),
    Param(
        "split_identifiers", bool, True,
        help="index and query camelCase/snake_case parts beside whole words (off: false)",
    ),
    Param(
        "path_terms", bool, True,
        help="index the file stem (twice) and the last 3 folder names (off: false)",
    ),
    Param(
        "code_files_only", bool, True,
        help="leave docs, config, data and blank chunks out (off: false)",
    ),
    Param(
        "chunks", str, "tiled", choices=CHUNK_MODES,
        help="stored chunks, outermost only, or outermost cut at nested definitions "
        "(off: \"stored\")",
    ),
    Param(
        "gap_chunks", bool, True,
        help="also rank the lines no stored chunk covers, read from the corpus "
        "(needs its root; off: false)",
    ),
    Param(
        "grammar_chunks", bool, True,
        help="tile whole-file chunks of Go, Java and C++ at the definitions their "
        "tree-sitter grammars find (needs chunks = \"tiled\"; off: false)",
    ),
    Param(
        "split_unparsed", bool, False,
        help="cut whole-file chunks of other unparsed languages (those grammar_chunks "
        "does not read) before each definition line (experimental: not a measured gain; "
        "off: false)",
    ),
    Param(
        "fold_plurals", bool, True,
        help="read a plural or third-person s away in chunks, queries and file names "
        "(`errors` as `error`, `dependencies` as `dependency`; off: false)",
    ),
    Param(
        "max_chunk_lines", int, _OPTIONS.max_chunk_lines, 0, None,
        help="cut longer chunks into windows of this many lines (off: 0)",
    ),
)  # fmt: skip

_STEP_PARAMS = (
    Param("pool", int, 50, 1, None, help="BM25 candidates re-ranked (at least k)"),
    Param(
        "rank_scores", bool, True,
        help="score candidates 1 / (rrf_k + rank) instead of raw BM25 (off: false)",
    ),
    Param("rrf_k", float, 60.0, 0.0, None, help="rank offset of rank scores", above_minimum=True),
    Param(
        "file_boost", float, _STEPS.file_boost, 0.0, None,
        help="boost of a file's best chunk by its share of the pool (off: 0)",
    ),
    Param(
        "repeat_decay", float, _STEPS.repeat_decay, 0.0, 1.0,
        help="score factor per earlier result of the same file (off: 1)",
    ),
    Param(
        "stem_boost", float, _STEPS.stem_boost, 0.0, None,
        help="boost by the share of query words in the file stem or folder (off: 0)",
    ),
    Param(
        "acronym_stems", bool, True,
        help="let a file stem or folder spelling the initials of consecutive query "
        "words match them (`fs` for `file system`; off: false)",
    ),
    Param(
        "definition_boost", float, _STEPS.definition_boost, 0.0, None,
        help="boost of chunks defining a queried identifier (off: 0)",
    ),
    Param(
        "path_penalty", float, _STEPS.path_penalty, 0.0, 1.0,
        help="score factor for tests, examples and compat shims (off: 1)",
    ),
    Param(
        "reexport_penalty", float, _STEPS.reexport_penalty, 0.0, 1.0,
        help="score factor for __init__.py and .d.ts files (off: 1)",
    ),
)  # fmt: skip

_VECTOR_PARAMS = (
    Param(
        "vector_weight", float, 0.03, 0.0, 1.0,
        help="weight of the vector rank for natural-language queries (off: 0)",
    ),
    Param(
        "symbol_vector_weight", float, 0.0, 0.0, 1.0,
        help="weight of the vector rank for identifier queries (off: 0)",
    ),
    Param(
        "hash_vector", bool, False,
        help="fuse the hash embedder's vector too (a hashed bag of the words BM25 reads)",
    ),
    Param(
        "vector_scope", str, "pool", choices=VECTOR_SCOPES,
        help="where the vector looks: the whole index, or only the lexical pool it "
        "re-orders (\"pool\")",
    ),
    Param("embedder", str, "", help="embedder the index must be built with ('' = as recorded)"),
    Param("model", str, "", help="embedding model the index must be built with ('' = as recorded)"),
)  # fmt: skip


def _lexical(values: Mapping[str, ParamValue], name: str) -> CodeBackend:
    options = CodeOptions(
        split_identifiers=bool(values["split_identifiers"]),
        path_terms=bool(values["path_terms"]),
        code_files_only=bool(values["code_files_only"]),
        chunks=str(values["chunks"]),
        max_chunk_lines=int(values["max_chunk_lines"]),
        gap_chunks=bool(values["gap_chunks"]),
        grammar_chunks=bool(values["grammar_chunks"]),
        split_unparsed=bool(values["split_unparsed"]),
        fold_plurals=bool(values["fold_plurals"]),
        k1=float(values["k1"]),
        b=float(values["b"]),
    )
    steps = RankSteps(
        rank_scores=bool(values["rank_scores"]),
        rrf_k=float(values["rrf_k"]),
        file_boost=float(values["file_boost"]),
        repeat_decay=float(values["repeat_decay"]),
        stem_boost=float(values["stem_boost"]),
        definition_boost=float(values["definition_boost"]),
        path_penalty=float(values["path_penalty"]),
        reexport_penalty=float(values["reexport_penalty"]),
        acronym_stems=bool(values["acronym_stems"]),
        fold_plurals=options.fold_plurals,
    )
    return CodeBackend(name, options, steps, int(values["pool"]))


def _make_code(values: Mapping[str, ParamValue]) -> Backend:
    return _lexical(values, "code")


def _make_code_hybrid(values: Mapping[str, ParamValue]) -> Backend:
    return CodeHybridBackend(
        "code-hybrid",
        _lexical(values, "code"),
        float(values["vector_weight"]),
        float(values["symbol_vector_weight"]),
        bool(values["hash_vector"]),
        str(values["embedder"]),
        str(values["model"]),
        str(values["vector_scope"]),
    )


CODE_BACKENDS: tuple[BackendSpec, ...] = (
    BackendSpec(
        "code",
        "code-aware BM25 re-ranked by file, path and definition evidence (docs/ranking.md)",
        (*_INDEX_PARAMS, *_STEP_PARAMS),
        _make_code,
    ),
    BackendSpec(
        "code-hybrid",
        "`code` fused with the store's vector signal (docs/ranking.md)",
        (*_INDEX_PARAMS, *_STEP_PARAMS, *_VECTOR_PARAMS),
        _make_code_hybrid,
    ),
)
"""The code-aware backends, listed after the reference's three."""
