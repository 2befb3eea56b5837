"""The built-in backends: `bm25`, `vector` and `hybrid`, with their parameters.

Why it exists: with default parameters each ranks exactly like the reference engine
(docs/retrieval.md), and every parameter a ranking change may move is declared here
with its reference default, bounds and help.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from cce_retrieval.embed.registry import EmbeddingSpaceError, check_query_vector
from cce_retrieval.model import Index, SearchResult
from cce_retrieval.parity.text import rust_trim
from cce_retrieval.rank import hybrid
from cce_retrieval.rank.backends.spec import Backend, BackendSpec, Param, ParamValue, Query
from cce_retrieval.rank.bm25 import BM25_B, BM25_K1
from cce_retrieval.rank.hybrid import REFERENCE_PARAMS, SearchParams


def _blank(index: Index, query: Query) -> bool:
    """A blank query or an empty index returns no results on every built-in backend."""
    return not rust_trim(query.text) or not index.chunks


def check_embedding_space(index: Index, embedder: str, model: str) -> None:
    """Refuse to query `index` with an embedder or model other than the one it records.

    An empty `embedder`/`model` means "whatever the index was built with".
    """
    recorded = index.embedder
    if embedder and embedder != recorded:
        raise EmbeddingSpaceError(
            f"the index was built with the {recorded!r} embedder but the backend asks for "
            f"{embedder!r}; re-index with {embedder!r} or drop the backend's `embedder`"
        )
    recorded_model = index.embedder_model or ""
    if model and model != recorded_model:
        raise EmbeddingSpaceError(
            f"the index was built with model {recorded_model!r} but the backend asks for "
            f"{model!r}; re-index with that model or drop the backend's `model`"
        )


@attrs.frozen(slots=True)
class Bm25Backend:
    """BM25 alone (raw sums as scores, no penalty, cap or graph)."""

    name: str = "bm25"
    k1: float = BM25_K1
    b: float = BM25_B

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        return hybrid.bm25_only_search(index, query.text, k, self.k1, self.b)


@attrs.frozen(slots=True)
class VectorBackend:
    """All chunks by rounded cosine with the query vector; score = cosine."""

    name: str = "vector"
    embedder: str = ""
    model: str = ""

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        check_embedding_space(index, self.embedder, self.model)
        vector = query.vector()
        check_query_vector(index, vector)
        return hybrid.vector_search(index, vector, k)


@attrs.frozen(slots=True)
class HybridBackend:
    """The `cce search` pipeline with graph expansion, cut back to `k`."""

    name: str = "hybrid"
    params: SearchParams = REFERENCE_PARAMS
    embedder: str = ""
    model: str = ""

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        check_embedding_space(index, self.embedder, self.model)
        # Expansion may append chunks after the top k, so the list is cut back to k.
        return hybrid.search_with_vector(index, query.vector(), query.text, k, True, self.params)[
            :k
        ]


_EMBEDDER_PARAMS = (
    Param("embedder", str, "", help="embedder the index must be built with ('' = as recorded)"),
    Param("model", str, "", help="embedding model the index must be built with ('' = as recorded)"),
)


_BM25_PARAMS = (
    Param("k1", float, BM25_K1, 0.0, None, help="BM25 term-frequency saturation"),
    Param("b", float, BM25_B, 0.0, 1.0, help="BM25 length normalisation"),
)


_R = REFERENCE_PARAMS


_HYBRID_PARAMS = (
    *_BM25_PARAMS,
    Param("rrf_k", float, _R.rrf_k, 0.0, None, help="RRF rank offset", above_minimum=True),
    Param("rrf_vector_weight", float, 1.0, 0.0, None, help="RRF weight of the vector rank"),
    Param("rrf_keyword_weight", float, 1.0, 0.0, None, help="RRF weight of the BM25 rank"),
    Param(
        "code_lookup_boost",
        float,
        _R.code_lookup_boost,
        0.0,
        None,
        help="extra BM25 weight for code-lookup queries",
    ),
    Param(
        "candidate_multiplier",
        int,
        _R.candidate_multiplier,
        1,
        None,
        help="candidates per signal = k * this",
    ),
    Param(
        "confidence_weight",
        float,
        _R.confidence_weight,
        0.0,
        1.0,
        help="share of confidence (vs normalised RRF) in the final score",
    ),
    Param(
        "confidence_vector_weight",
        float,
        _R.confidence_vector_weight,
        0.0,
        None,
        help="weight of the vector score in confidence",
    ),
    Param(
        "confidence_keyword_weight",
        float,
        _R.confidence_keyword_weight,
        0.0,
        None,
        help="weight of the keyword hit in confidence",
    ),
    Param(
        "path_penalty",
        float,
        _R.path_penalty,
        0.0,
        1.0,
        help="score factor for test/doc/spec/plan paths",
    ),
    Param(
        "max_chunks_per_file",
        int,
        _R.max_chunks_per_file,
        1,
        None,
        help="diversity cap: results per file",
    ),
    Param("graph", bool, _R.graph, help="append chunks of import-graph neighbours"),
    Param("graph_depth", int, _R.graph_depth, 1, 8, help="import-graph hops to follow"),
    Param("graph_files", int, _R.graph_files, 0, None, help="neighbour files appended at most"),
    Param(
        "graph_chunks_per_file",
        int,
        _R.graph_chunks_per_file,
        0,
        None,
        help="chunks appended per neighbour file",
    ),
    Param("graph_scale", float, _R.graph_scale, 0.0, None, help="score factor of appended chunks"),
    *_EMBEDDER_PARAMS,
)


def _str(values: Mapping[str, ParamValue], key: str) -> str:
    return str(values[key])


def _make_bm25(values: Mapping[str, ParamValue]) -> Backend:
    return Bm25Backend("bm25", float(values["k1"]), float(values["b"]))


def _make_vector(values: Mapping[str, ParamValue]) -> Backend:
    return VectorBackend("vector", _str(values, "embedder"), _str(values, "model"))


def _make_hybrid(values: Mapping[str, ParamValue]) -> Backend:
    fields = {f.name for f in attrs.fields(SearchParams)}
    params = SearchParams(**{key: value for key, value in values.items() if key in fields})  # type: ignore[arg-type]
    return HybridBackend("hybrid", params, _str(values, "embedder"), _str(values, "model"))


BUILTIN_BACKENDS: tuple[BackendSpec, ...] = (
    BackendSpec("bm25", "BM25 alone", _BM25_PARAMS, _make_bm25),
    BackendSpec("vector", "cosine of the query vector", _EMBEDDER_PARAMS, _make_vector),
    BackendSpec(
        "hybrid", "the `cce search` pipeline (BM25 + vector, RRF, graph)", _HYBRID_PARAMS,
        _make_hybrid,
    ),
)  # fmt: skip
"""The built-in backends, in the registry's listing order."""
