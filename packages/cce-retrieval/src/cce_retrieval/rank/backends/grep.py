"""The `grep` baseline as a registered backend: keyword grep over the indexed files.

Why it exists: the registry (`rank.backends.registry`) lists what `cce relevance` can
score; the search itself (keywords, file texts, ranking by distinct keywords matched)
is `cce_retrieval.rank.grep`, which knows nothing of the registry, so the two import
one way only (docs/backends.md#grep).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from cce_retrieval.chunk.chunker import chunk_id
from cce_retrieval.model import Index, SearchResult
from cce_retrieval.parity.text import rust_trim
from cce_retrieval.rank.backends.spec import Backend, BackendSpec, Param, ParamValue, Query
from cce_retrieval.rank.grep import MODULE_KIND, GrepCorpus, corpus_texts, grep_rank

__all__ = ["GREP_BACKEND", "GrepBackend"]


@attrs.define(slots=True)
class GrepBackend:
    """Keyword grep over the indexed files, each matching file returned whole.

    The file texts of the last index searched are kept, so the queries of one index
    read the corpus once.
    """

    name: str = "grep"
    _corpus: GrepCorpus | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def _texts(self, index: Index, root: str | None) -> GrepCorpus:
        cached = self._corpus
        if cached is not None and cached.index is index and cached.root == root:
            return cached
        texts = corpus_texts(index, root)
        paths = tuple(sorted(texts))
        corpus = GrepCorpus(index, root, paths, texts, tuple(texts[p].lower() for p in paths))
        self._corpus = corpus
        return corpus

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if not rust_trim(query.text) or not (index.chunks or index.file_tokens):
            return []
        corpus = self._texts(index, query.corpus_root)
        results: list[SearchResult] = []
        ranked = grep_rank(corpus.texts, query.text, k, paths=corpus.paths, lowered=corpus.lowered)
        for rank, (path, matched) in enumerate(ranked, start=1):
            text = corpus.texts[path]
            end_line = text.count("\n") + 1
            results.append(
                SearchResult(
                    rank=rank,
                    chunk_id=chunk_id(path, 1, end_line, text.encode("utf-8")),
                    file_path=path,
                    start_line=1,
                    end_line=end_line,
                    chunk_type=MODULE_KIND,
                    kind=MODULE_KIND,
                    score=float(matched),
                    content=text,
                )
            )
        return results


def _make_grep(values: Mapping[str, ParamValue]) -> Backend:
    return GrepBackend("grep")


_GREP_PARAMS: tuple[Param, ...] = ()

GREP_BACKEND: Final = BackendSpec(
    "grep",
    "keyword grep, matching files read whole (the no-index baseline)",
    _GREP_PARAMS,
    _make_grep,
)
"""The registry entry of the `grep` baseline (registered in `rank.backends.registry`)."""
