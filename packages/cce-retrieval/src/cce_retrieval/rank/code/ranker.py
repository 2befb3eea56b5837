"""The ranking step of the code-aware backends: a lexical candidate pool re-ranked with
file-level evidence, path and definition matches, and path priors.

Why it exists: a code query asks for files and definitions, not for the chunk that
repeats the query words most. BM25 over the code index (`rank.code.index`) gives a pool
of candidates; this module turns their scores into rank-based scores, promotes a
file's best chunk by how much of the pool the file holds, boosts chunks whose file name
matches the query words, boosts chunks that define a queried identifier, demotes tests,
examples, compatibility shims and re-export files, and lets each further chunk of a
file count less, so one file cannot fill the top `k`. Every step has a parameter whose
"off" value removes it (docs/ranking.md). `code-hybrid` adds the store's vector signal
to the pool before the same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import attrs
import numpy as np

from cce_retrieval.model import Chunk, SearchResult
from cce_retrieval.rank.code import text
from cce_retrieval.rank.code.index import CodeIndex
from cce_retrieval.rank.order import FloatArray

__all__ = ["RankSteps", "candidate_pool", "fuse", "rerank", "vector_pool"]

EMBEDDED_SYMBOL_SCALE = 0.5
"""Definitions of a camelCase name inside a sentence get half the boost of a bare
identifier query: the name may be incidental to what is asked."""

STEM_DEFINITION_FACTOR = 1.5
"""A definition in a file named like the symbol (`router.rs` for `Router`) is the
canonical one: its boost is half as large again."""

MIN_STEM_SHARE = 0.1
"""Stem matches below this share of the query words are noise in a long question."""

MIN_STEM_PREFIX = 3
"""Shortest common prefix that lets a query word match a path part (`depend` ~
`dependencies`)."""

EMBEDDED_STEM_PREFIX = 4
"""Shortest file stem that may match a camelCase name by prefix (`state.ts` for
`StateManager`)."""


@attrs.frozen(slots=True)
class RankSteps:
    """The re-ranking steps' strengths; each step's off value is noted."""

    rank_scores: bool = True  # off: raw BM25 sums
    rrf_k: float = 60.0
    file_boost: float = 0.2  # off: 0
    repeat_decay: float = 0.5  # off: 1
    stem_boost: float = 1.0  # off: 0
    definition_boost: float = 3.0  # off: 0
    path_penalty: float = 0.3  # off: 1
    reexport_penalty: float = 0.5  # off: 1
    acronym_stems: bool = True  # off: false
    fold_plurals: bool = True  # off: false

    @property
    def inert(self) -> bool:
        """No step changes the pool's own order."""
        return (
            self.file_boost == 0.0
            and self.repeat_decay == 1.0
            and self.stem_boost == 0.0
            and self.definition_boost == 0.0
            and self.path_penalty == 1.0
            and self.reexport_penalty == 1.0
        )


def candidate_pool(
    code: CodeIndex, terms: Sequence[str], pool: int, steps: RankSteps
) -> dict[int, float]:
    """The best `pool` chunks by BM25, best first, scored by rank (`1 / (rrf_k + r)`,
    r from 1) or by their raw sums."""
    docs, scores = code.bm25.rank(terms, pool)
    if steps.rank_scores:
        return {doc: 1.0 / (steps.rrf_k + r) for r, doc in enumerate(docs.tolist(), 1)}
    return dict(zip(docs.tolist(), scores.tolist(), strict=True))


def fuse(
    lexical: Mapping[int, float], vector: Mapping[int, float], vector_weight: float
) -> dict[int, float]:
    """`(1 - w) * lexical + w * vector` over the union of both pools, lexical order first."""
    fused = {doc: (1.0 - vector_weight) * score for doc, score in lexical.items()}
    for doc, score in vector.items():
        fused[doc] = fused.get(doc, 0.0) + vector_weight * score
    return {doc: score for doc, score in fused.items() if score > 0.0}


def vector_pool(
    code: CodeIndex,
    cosines: FloatArray,
    pool: int,
    rrf_k: float,
    within: Collection[int] | None = None,
) -> dict[int, float]:
    """The `pool` chunks nearest the query (positive cosine only), scored by rank; only
    among the chunks `within` when given (the lexical pool: the vector then re-orders
    what BM25 found and adds nothing)."""
    per_chunk = np.where(code.source >= 0, cosines[np.maximum(code.source, 0)], 0.0)
    if within is not None:
        kept = np.zeros(len(per_chunk), dtype=bool)
        kept[np.fromiter(within, np.int64, len(within))] = True
        per_chunk = np.where(kept, per_chunk, 0.0)
    positive = np.flatnonzero(per_chunk > 0.0)
    if not len(positive):
        return {}
    ids = code.id_ranks[positive]
    order = np.lexsort((ids, -per_chunk[positive]))[:pool]
    return {int(positive[i]): 1.0 / (rrf_k + r) for r, i in enumerate(order.tolist(), 1)}


def rerank(
    code: CodeIndex,
    pooled: dict[int, float],
    query: str,
    k: int,
    steps: RankSteps,
    *,
    ordered: bool = True,
) -> list[SearchResult]:
    """The top `k` of the pool after the re-ranking steps, ranks 1..n; `ordered` says
    the pool is listed best first already (a lexical pool is; a fused one is not)."""
    chunks = code.chunks
    if steps.inert or not pooled:
        # A lexical pool is in BM25's own order already (ties broken by chunk id).
        ranked = list(pooled.items())
        if not ordered:
            ranked.sort(key=lambda item: -item[1])
        return _results(chunks, ranked[:k])
    scores = dict(pooled)
    position = {doc: i for i, doc in enumerate(pooled)}
    if steps.file_boost > 0.0:
        _boost_files(chunks, scores, steps.file_boost)
    top = max(scores.values())
    if text.symbol_query(query):
        if steps.definition_boost > 0.0:
            name = text.symbol_name(query)
            names = {name, query.strip()}
            _boost_definitions(
                code, scores, names, top * steps.definition_boost,
                lambda stem: text.stem_matches(stem, name.lower()),
            )  # fmt: skip
    else:
        if steps.stem_boost > 0.0:
            _boost_stems(
                chunks, scores, query, top * steps.stem_boost,
                acronyms=steps.acronym_stems, fold=steps.fold_plurals,
            )  # fmt: skip
        embedded = text.embedded_symbols(query)
        if embedded and steps.definition_boost > 0.0:
            lowered = [name.lower() for name in embedded]
            _boost_definitions(
                code, scores, set(embedded),
                top * steps.definition_boost * EMBEDDED_SYMBOL_SCALE,
                lambda stem: _stem_prefixes(stem, lowered),
            )  # fmt: skip
    for doc in scores:
        demoted, reexport = text.path_class(chunks[doc].file_path)
        if demoted:
            scores[doc] *= steps.path_penalty
        if reexport:
            scores[doc] *= steps.reexport_penalty
    last = len(position)
    order = sorted(scores, key=lambda doc: (-scores[doc], position.get(doc, last), doc))
    seen: dict[str, int] = {}
    decayed: list[tuple[int, float]] = []
    for doc in order:
        path = chunks[doc].file_path
        repeats = seen.get(path, 0)
        seen[path] = repeats + 1
        decayed.append((doc, scores[doc] * steps.repeat_decay**repeats))
    decayed.sort(key=lambda item: -item[1])  # stable: ties keep the order above
    return _results(chunks, decayed[:k])


def _results(chunks: Sequence[Chunk], ranked: Sequence[tuple[int, float]]) -> list[SearchResult]:
    return [
        SearchResult.from_chunk(chunks[doc], score, rank=r)
        for r, (doc, score) in enumerate(ranked, 1)
    ]


def _boost_files(chunks: Sequence[Chunk], scores: dict[int, float], strength: float) -> None:
    """Add to each file's best chunk `strength * max score * file sum / largest file sum`:
    a file several pool chunks point at is more likely the answer than a lone match."""
    top = max(scores.values())
    if top <= 0.0:
        return
    sums: dict[str, float] = {}
    best: dict[str, int] = {}
    for doc, score in scores.items():
        path = chunks[doc].file_path
        sums[path] = sums.get(path, 0.0) + score
        if path not in best or score > scores[best[path]]:
            best[path] = doc
    largest = max(sums.values())
    for path, doc in best.items():
        scores[doc] += strength * top * sums[path] / largest


def _matches(keywords: frozenset[str], parts: frozenset[str]) -> int:
    """Query keywords equal to a path part, or sharing a prefix of 3+ letters with one
    (the shorter being a prefix of the longer)."""
    found = len(keywords & parts)
    for keyword in keywords - parts:
        for part in parts:
            shorter, longer = (keyword, part) if len(keyword) <= len(part) else (part, keyword)
            if len(shorter) >= MIN_STEM_PREFIX and longer.startswith(shorter):
                found += 1
                break
    return found


def _boost_stems(
    chunks: Sequence[Chunk],
    scores: dict[int, float],
    query: str,
    unit: float,
    *,
    acronyms: bool = False,
    fold: bool = False,
) -> None:
    """Add `unit * share of query words matched by the file stem or parent folder`; with
    `acronyms`, a path part spelling the initials of consecutive query words matches
    each of those words; with `fold`, words and parts are compared without a plural s."""
    keywords = text.query_keywords(query, fold=fold)
    if not keywords:
        return
    initials = text.query_acronyms(query) if acronyms else {}
    for doc in list(scores):
        parts = text.path_parts(chunks[doc].file_path, fold=fold)
        found = _matches(keywords, parts)
        found += max((size for name, size in initials.items() if name in parts), default=0)
        share = min(found, len(keywords)) / len(keywords)
        if share >= MIN_STEM_SHARE:
            scores[doc] += unit * share


def _stem_prefixes(stem: str, names: list[str]) -> bool:
    bare = stem.replace("_", "")
    return any(
        text.stem_matches(stem, name)
        or (len(stem) >= EMBEDDED_STEM_PREFIX and name.startswith(stem))
        or (len(bare) >= EMBEDDED_STEM_PREFIX and name.startswith(bare))
        for name in names
    )


def _boost_definitions(
    code: CodeIndex,
    scores: dict[int, float],
    names: set[str],
    unit: float,
    stem_ok: Callable[[str], bool],
) -> None:
    """Boost pool chunks that define one of `names`; add the defining chunks of files
    whose stem `stem_ok` accepts even when BM25 did not pool them."""
    lowered = {name.lower() for name in names}

    def tier(doc: int) -> float:
        chunk = code.chunks[doc]
        if not any(text.defines(chunk.content, chunk.kind, name) for name in names):
            return 0.0
        stem = text.file_stem(chunk.file_path)
        named = any(text.stem_matches(stem, name) for name in lowered)
        return unit * (STEM_DEFINITION_FACTOR if named else 1.0)

    for doc in list(scores):
        scores[doc] += tier(doc)
    for stem, docs in code.by_stem.items():
        if not stem_ok(stem):
            continue
        for doc in docs:
            if doc not in scores:
                boost = tier(doc)
                if boost:
                    scores[doc] = boost
