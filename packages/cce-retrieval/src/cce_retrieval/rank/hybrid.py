"""Hybrid search: BM25 + cosine fused by RRF, blended with confidence
(docs/retrieval.md#hybrid-search).

Why it exists: this is the ranking `cce search` prints and the `hybrid` backend of the
relevance harness scores, so every step (intent weight, candidate limits, file hints,
RRF, confidence blend, path penalty, rounded-key sort, per-file diversity cap, graph
bonus) follows the reference's operation order exactly. It also hosts the two single-
signal rankings the harness compares against (`bm25_only_search` docs/retrieval.md#bm25-only-search,
`vector_search`).

Every constant a ranking change would touch is a field of `SearchParams`, whose defaults
are the reference values. The derived per-index structures live in `cce_retrieval.rank.derived`;
`RetrievalIndex` and `retrieval_index` are re-exported here beside the rankings that use them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

import attrs

from cce_retrieval.embed.hashing import MAX_VECTOR_VALUE, out_of_range
from cce_retrieval.embed.registry import check_query_vector, embedder_spec
from cce_retrieval.embed.unit import has_direction, unit_vector, why_not_unit
from cce_retrieval.model import Index, SearchResult
from cce_retrieval.parity.numeric import score_key
from cce_retrieval.parity.text import ascii_lower, rust_split_whitespace
from cce_retrieval.parity.tokenizer import tokenize, unique_tokens
from cce_retrieval.rank.bm25 import BM25_B, BM25_K1
from cce_retrieval.rank.derived import RetrievalIndex, retrieval_index
from cce_retrieval.rank.order import FloatArray

RRF_K = 60.0
CONFIDENCE_WEIGHT = 0.5
FTS_BOOST_CODE_LOOKUP = 1.5
MAX_CHUNKS_PER_FILE = 3
CANDIDATE_MULTIPLIER = 3
W_VECTOR = 0.5
W_KEYWORD = 0.4
W_RECENCY = 0.1
PATH_PENALTY = 0.8
PATH_PENALTY_MARKERS = ("tests/", "test_", "docs/", "spec", "plan")
GRAPH_MAX_BONUS_FILES = 2
GRAPH_BONUS_CHUNKS_PER_FILE = 2
GRAPH_BONUS_CHUNK_SCALE = 0.85

_CODE_LOOKUP_KEYWORDS = frozenset({"function", "class", "method", "def"})
_CODE_EXTENSIONS = ("py", "js", "jsx", "ts", "go", "rb", "rs", "java")
_ASCII_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class QueryEmbedder(Protocol):
    """What search needs from an embedder: the infallible query-time `embed`."""

    def embed(self, text: str) -> list[float]: ...


@attrs.frozen(slots=True)
class SearchParams:
    """Every constant of the reference ranking a ranking change would touch.

    The defaults are the reference values, and with them every function below returns
    exactly the reference's results. See docs/backends.md#parameters for each one.
    """

    k1: float = BM25_K1
    b: float = BM25_B
    rrf_k: float = RRF_K
    rrf_vector_weight: float = 1.0
    rrf_keyword_weight: float = 1.0
    code_lookup_boost: float = FTS_BOOST_CODE_LOOKUP
    candidate_multiplier: int = CANDIDATE_MULTIPLIER
    confidence_weight: float = CONFIDENCE_WEIGHT
    confidence_vector_weight: float = W_VECTOR
    confidence_keyword_weight: float = W_KEYWORD
    path_penalty: float = PATH_PENALTY
    max_chunks_per_file: int = MAX_CHUNKS_PER_FILE
    graph: bool = True
    graph_depth: int = 1
    graph_files: int = GRAPH_MAX_BONUS_FILES
    graph_chunks_per_file: int = GRAPH_BONUS_CHUNKS_PER_FILE
    graph_scale: float = GRAPH_BONUS_CHUNK_SCALE


REFERENCE_PARAMS: Final = SearchParams()


def is_code_lookup(query: str, query_tokens: Iterable[str] | None = None) -> bool:
    """Intent rule of docs/retrieval.md#intent: keyword token, code file extension, or lookup
    phrase.

    `query_tokens` may carry the query's tokens when the caller already has them
    (`tokenize` lowercases, so they are the tokens of the lowercased query too).
    """
    low = ascii_lower(query)
    tokens = tokenize(low) if query_tokens is None else query_tokens
    if not _CODE_LOOKUP_KEYWORDS.isdisjoint(tokens):
        return True
    for ext in _CODE_EXTENSIONS:
        needle = "." + ext
        at = low.find(needle)
        while at >= 0:
            end = at + len(needle)
            if end == len(low) or low[end] not in _ASCII_WORD_CHARS:
                return True
            at = low.find(needle, at + 1)
    if "where is " in low or " defined" in low:
        return True
    find_at = low.find("find ")
    return find_at >= 0 and " function" in low[find_at:]


def file_hints(query: str) -> list[str]:
    """Whitespace-split raw query pieces containing a `.`, ASCII-lowercased
    (docs/retrieval.md#file-hints)."""
    return [ascii_lower(piece) for piece in rust_split_whitespace(query) if "." in piece]


def rrf(
    vector_rank: int | None,
    fts_rank: int | None,
    fts_weight: float,
    rrf_k: float = RRF_K,
    vector_weight: float = 1.0,
) -> float:
    """Reciprocal-rank fusion of the 0-based ranks (docs/retrieval.md#fusion-and-scoring): divide
    first, then weight.

    With the reference's vector weight of 1.0 the multiplication is skipped (it is exact
    anyway, but this keeps the reference's operation sequence visible).
    """
    from_vector = 1.0 / (rrf_k + vector_rank) if vector_rank is not None else 0.0
    if vector_weight != 1.0:
        from_vector = vector_weight * from_vector
    from_fts = fts_weight * (1.0 / (rrf_k + fts_rank)) if fts_rank is not None else 0.0
    return from_vector + from_fts


def _clamp_unit(x: float) -> float:
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


def rank_core(
    index: Index,
    qvec: Sequence[float],
    query: str,
    top_k: int,
    params: SearchParams = REFERENCE_PARAMS,
) -> list[SearchResult]:
    """docs/retrieval.md: the capped, sorted hybrid list (ranks left at 0, scores raw)."""
    return _rank_core(index, qvec, query, top_k, params)[0]


def _rank_core(
    index: Index, qvec: Sequence[float], query: str, top_k: int, params: SearchParams
) -> tuple[list[SearchResult], FloatArray | None]:
    """`rank_core`, plus every chunk's cosine (None when none was computed) for reuse."""
    query_terms = unique_tokens(query)
    if not query_terms or not index.chunks:
        return [], None
    derived = retrieval_index(index)
    chunks = derived.chunks
    boost = params.code_lookup_boost if is_code_lookup(query, query_terms) else 1.0
    # With the reference's keyword weight of 1.0 the weight is the boost itself.
    fts_weight = boost if params.rrf_keyword_weight == 1.0 else params.rrf_keyword_weight * boost
    candidate_limit = top_k * params.candidate_multiplier

    vector_ranks: dict[int, int] = {}
    has_vector = len(qvec) > 0
    cos_by_idx: FloatArray | None = None
    if has_vector:
        order, cos_by_idx = derived.vectors.rank(qvec, max(candidate_limit, 1))
        for r, idx in enumerate(order.tolist()):
            vector_ranks[idx] = r

    bm25_docs, _ = derived.bm25_with(params.k1, params.b).rank(query_terms, candidate_limit)
    fts_ranks = {idx: r for r, idx in enumerate(bm25_docs.tolist())}

    candidates = sorted(vector_ranks.keys() | fts_ranks.keys())
    hints = file_hints(query)
    fused = [
        rrf(
            vector_ranks.get(i),
            fts_ranks.get(i),
            fts_weight,
            params.rrf_k,
            params.rrf_vector_weight,
        )
        for i in candidates
    ]
    max_rrf = 0.0
    for value in fused:
        if value > max_rrf:
            max_rrf = value
    normalise = score_key(max_rrf) != 0

    scored: list[tuple[int, str, int, float]] = []
    for idx, fused_score in zip(candidates, fused, strict=True):
        # A candidate outside the vector ranks still gets its cosine (the same double);
        # with an empty query vector every cosine is 0.0.
        cos = float(cos_by_idx[idx]) if cos_by_idx is not None else 0.0
        vector_score = 1.0 - _clamp_unit((1.0 - cos) / 2.0)
        content_l = derived.content_lower(idx)
        path_l = derived.path_lower(idx)
        keyword_hit = any(t in content_l for t in query_terms) or any(h in path_l for h in hints)
        keyword_distance = 0.0 if keyword_hit else 2.0
        keyword_score = max(1.0 - keyword_distance / 5.0, 0.0)
        confidence = (
            params.confidence_vector_weight * vector_score
            + params.confidence_keyword_weight * keyword_score
            + W_RECENCY * 0.0
        )
        normalised_rrf = fused_score / max_rrf if normalise else 0.0
        blend = params.confidence_weight
        final = blend * confidence + (1.0 - blend) * normalised_rrf
        if any(marker in path_l for marker in PATH_PENALTY_MARKERS):
            final *= params.path_penalty
        scored.append((-score_key(final), chunks[idx].chunk_id, idx, final))
    # Ties on (rounded key, chunk id) only happen for duplicate ids; store order decides.
    scored.sort()

    kept: list[SearchResult] = []
    per_file: dict[str, int] = {}
    for _, _, idx, final in scored:
        if len(kept) >= top_k:
            break
        path = chunks[idx].file_path
        held = per_file.get(path, 0)
        if held < params.max_chunks_per_file:
            per_file[path] = held + 1
            kept.append(SearchResult.from_chunk(chunks[idx], final))
    return kept, cos_by_idx


def expand_graph(
    index: Index,
    qvec: Sequence[float],
    results: Sequence[SearchResult],
    cosines: FloatArray | None = None,
    params: SearchParams = REFERENCE_PARAMS,
) -> list[SearchResult]:
    """docs/retrieval.md#graph-expansion: `results` plus up to 2 chunks from each of up to 2
    neighbour files, appended.

    `cosines` may carry every chunk's cosine with `qvec` when ranking already computed
    them (`search_with_vector` passes them on), so the corpus is not scanned twice.
    `params.graph_depth` above 1 also visits neighbours of neighbours, nearer files first
    (the reference's depth is 1); the file and chunk caps and the scale are parameters too.
    """
    expanded = list(results)
    if not results:
        return expanded
    derived = retrieval_index(index)
    chunks = derived.chunks
    top_files = list(dict.fromkeys(r.file_path for r in results[:3]))
    result_files = {r.file_path for r in results}
    neighbours: list[str] = []
    frontier = top_files
    for _ in range(params.graph_depth):
        reached: list[str] = []
        for path in frontier:
            for neighbour in derived.graph.neighbors(path):
                if neighbour not in result_files and neighbour not in neighbours:
                    neighbours.append(neighbour)
                    reached.append(neighbour)
        frontier = reached
    if not neighbours:
        return expanded
    cos_by_idx = derived.cosines(qvec) if cosines is None else cosines
    existing = {(r.file_path, r.start_line, r.end_line) for r in results}
    for neighbour in neighbours[: params.graph_files]:
        file_chunks = [
            (-score_key(float(cos_by_idx[i])), chunks[i].chunk_id, i)
            for i in derived.chunks_by_file.get(neighbour, [])
        ]
        file_chunks.sort()
        # The slots are taken before the duplicate test: a skipped duplicate span is
        # not replaced by the file's next chunk (no back-fill).
        for _, _, i in file_chunks[: params.graph_chunks_per_file]:
            chunk = chunks[i]
            span = (chunk.file_path, chunk.start_line, chunk.end_line)
            if span in existing:
                continue
            existing.add(span)
            cos = float(cos_by_idx[i])
            expanded.append(SearchResult.from_chunk(chunk, max(cos, 0.0) * params.graph_scale))
    return expanded


def _numbered(results: Sequence[SearchResult]) -> list[SearchResult]:
    return [attrs.evolve(r, rank=i + 1) for i, r in enumerate(results)]


class QueryVectorError(ValueError):
    """A query embedding that holds NaN, an infinity or a value beyond `MAX_VECTOR_VALUE`:
    every cosine would be meaningless."""


def check_finite_query(qvec: Sequence[float]) -> None:
    """Refuse a query vector with a non-finite value (it would score every chunk 0) or
    one beyond `MAX_VECTOR_VALUE` (its dot products would overflow)."""
    if not all(math.isfinite(value) for value in qvec):
        raise QueryVectorError(
            "the query embedding holds NaN or an infinite number, so no cosine can be "
            "computed; check the embedder (or its server) that produced it"
        )
    if out_of_range(qvec):
        raise QueryVectorError(
            f"the query embedding holds a value of magnitude over {MAX_VECTOR_VALUE:g}, whose dot "
            "products overflow, so no cosine can be computed; check the embedder (or its "
            "server) that produced it"
        )


def unit_query(index: Index, qvec: Sequence[float]) -> Sequence[float]:
    """The query vector as it is compared with `index`'s chunk vectors.

    `check_finite_query` first; then, unless the index's embedder makes unit vectors by
    construction (hash, left bit for bit as it is), the vector scaled to length 1, as the
    build scaled every chunk vector. One of zeros only has no direction: it becomes the
    empty vector, no vector (docs/retrieval.md#vectors-with-no-direction), as does a
    failed query embedding (already warned about). One whose length cannot be scaled
    (underflow, overflow) is a QueryVectorError naming the embedder.
    """
    check_finite_query(qvec)
    if not qvec or embedder_spec(index.embedder, fallback=True).unit_vectors:
        return qvec
    unit = unit_vector(qvec)
    if unit is None:
        raise QueryVectorError(
            f"embedder '{index.embedder}' returned a query vector that cannot be scaled to "
            f"unit length: {why_not_unit(qvec)}; check the embedder (or its server)"
        )
    return unit


def vectorless_query(index: Index, qvec: Sequence[float]) -> bool:
    """Whether a query whose embedding is `qvec` has no vector against `index`: the
    index's embedder scales its vectors (any but hash) and `qvec` is empty (a failed
    embedding) or of zeros only (no direction). Such a query gets nothing from the
    vector signal: the `vector` backend returns no result and hybrid ranks by its words
    alone. A hash query never is (the reference ranks even the zero vector)."""
    if embedder_spec(index.embedder, fallback=True).unit_vectors:
        return False
    return not has_direction(qvec)


def search_with_vector(
    index: Index,
    qvec: Sequence[float],
    query: str,
    top_k: int,
    graph_enabled: bool,
    params: SearchParams = REFERENCE_PARAMS,
) -> list[SearchResult]:
    """`search` with the query vector already computed (the harness embeds once per query).

    Graph expansion runs when `graph_enabled` and `params.graph` are both true. Raises
    `QueryVectorError` for a non-finite query vector, or one that `unit_query` refuses.
    """
    qvec = unit_query(index, qvec)
    results, cosines = _rank_core(index, qvec, query, top_k, params)
    if graph_enabled and params.graph:
        results = expand_graph(index, qvec, results, cosines, params)
    return _numbered(results)


def search(
    index: Index,
    embedder: QueryEmbedder,
    query: str,
    top_k: int,
    graph_enabled: bool,
    params: SearchParams = REFERENCE_PARAMS,
) -> list[SearchResult]:
    """The `cce search` pipeline: embed (always first, even for a token-less query), rank."""
    qvec = embedder.embed(query)
    return search_with_vector(index, qvec, query, top_k, graph_enabled, params)


def search_counted(
    index: Index,
    embedder: QueryEmbedder,
    query: str,
    top_k: int,
    graph_enabled: bool,
    params: SearchParams = REFERENCE_PARAMS,
) -> tuple[list[SearchResult], int]:
    """`search`, plus how many leading rows are ranked; the rows after them are the
    graph expansion (related files), which can take the list past `top_k`.

    Raises QueryVectorError for a non-finite query vector and EmbeddingSpaceError for
    one whose dimension differs from the store's."""
    qvec = unit_query(index, embedder.embed(query))
    check_query_vector(index, qvec)
    results, cosines = _rank_core(index, qvec, query, top_k, params)
    ranked = len(results)
    if graph_enabled and params.graph:
        results = expand_graph(index, qvec, results, cosines, params)
    return _numbered(results), ranked


def bm25_only_search(
    index: Index, query: str, top_k: int, k1: float = BM25_K1, b: float = BM25_B
) -> list[SearchResult]:
    """docs/retrieval.md#bm25-only-search: BM25 alone; raw sums as scores, no penalty, cap or graph;
    ranks 1..n."""
    query_terms = unique_tokens(query)
    if not query_terms or not index.chunks or top_k <= 0:
        return []
    derived = retrieval_index(index)
    docs, scores = derived.bm25_with(k1, b).rank(query_terms, top_k)
    return [
        SearchResult.from_chunk(derived.chunks[idx], score, rank=r + 1)
        for r, (idx, score) in enumerate(zip(docs.tolist(), scores.tolist(), strict=True))
    ]


def vector_search(index: Index, qvec: Sequence[float], top_k: int) -> list[SearchResult]:
    """The harness's `vector` backend: all chunks by rounded cosine, first `top_k`, score = cos.

    Nothing for a query without a vector (`vectorless_query`); chunks without one are
    not ranked (`VectorIndex`)."""
    if not index.chunks or top_k <= 0:
        return []
    qvec = unit_query(index, qvec)
    if vectorless_query(index, qvec):
        return []  # no vector, no cosine to rank by
    derived = retrieval_index(index)
    order, cos = derived.vectors.rank(qvec, top_k)
    top = order.tolist()
    return [
        SearchResult.from_chunk(derived.chunks[idx], float(cos[idx]), rank=r + 1)
        for r, idx in enumerate(top)
    ]


__all__ = [
    "REFERENCE_PARAMS",
    "RetrievalIndex",
    "SearchParams",
    "bm25_only_search",
    "expand_graph",
    "file_hints",
    "is_code_lookup",
    "rank_core",
    "retrieval_index",
    "rrf",
    "search",
    "search_with_vector",
    "vector_search",
    "vectorless_query",
]
