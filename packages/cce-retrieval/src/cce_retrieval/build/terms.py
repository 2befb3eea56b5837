"""BM25 from the files' term counts: numbered as files arrive, laid out once at the end.

Why it exists: numbering every term corpus-wide is the dearest part of laying out BM25,
so the build numbers each file's terms as soon as every file before it is in, and a
whole build's BM25 is taken from the cache when it holds it (docs/index-store.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cce_retrieval.build.cache import (
    BuildCache,
    TermCounts,
)
from cce_retrieval.build.files import Vocabulary
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.order import IntArray, id_order_ranks


class TermNumbering:
    """Corpus-wide term ids in first-occurrence order, given file by file in walk order.

    The build numbers each file's terms as soon as every file before it is in, while the
    workers still chunk the rest (`collect_outcomes(numbering=...)`), so laying out BM25 after
    the build starts from each file's entries already in corpus-wide ids. Numbering is
    the dearest part of that layout, and BM25 is laid out when the build's work is done
    and one CPU is left to it (`build_index(bm25_ready=...)`).
    """

    def __init__(self) -> None:
        self._numbering = Vocabulary()
        self.entry_terms: list[IntArray] = []
        """Per numbered file, its entries' corpus-wide term ids."""

    def number(self, terms: TermCounts) -> None:
        """Number the next file's terms (the files must come in walk order)."""
        vocabulary = terms.vocabulary
        codes = np.fromiter(map(self._numbering.__getitem__, vocabulary), np.int64, len(vocabulary))
        self.entry_terms.append(codes[terms.entry_terms])

    def vocabulary(self) -> dict[str, int]:
        """Term → id so far; a plain dict, so a lookup of an unknown term numbers nothing."""
        return dict(self._numbering)


def cached_bm25(
    cache: BuildCache | None,
    corpus_key: bytes | None,
    parts: Sequence[TermCounts | None],
    chunk_ids: Sequence[str],
    numbering: TermNumbering | None = None,
) -> tuple[Bm25Index, IntArray]:
    """`bm25_from_counts`, kept in the build cache for the next build of the same files
    (a repeated `cce relevance --dir` then lays out no postings at all)."""
    if cache is not None and corpus_key is not None:
        found = cache.get_bm25(corpus_key, len(chunk_ids))
        if found is not None:
            return found
    made = bm25_from_counts(parts, chunk_ids, numbering)
    if cache is not None and corpus_key is not None:
        cache.put_bm25(corpus_key, *made)
    return made


def bm25_from_counts(
    parts: Sequence[TermCounts | None],
    chunk_ids: Sequence[str],
    numbering: TermNumbering | None = None,
) -> tuple[Bm25Index, IntArray]:
    """One corpus-wide BM25 from per-file counts (term ids in first-occurrence order);
    `numbering`, when it has numbered every file already, gives the ids."""
    present = [part for part in parts if part is not None]
    assert len(present) == len(parts)

    def joined(arrays: Sequence[IntArray]) -> IntArray:
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)

    if numbering is None or len(numbering.entry_terms) != len(present):
        numbering = TermNumbering()
        for part in present:
            numbering.number(part)
    vocabulary = numbering.vocabulary()
    ids = joined(numbering.entry_terms)

    id_ranks = id_order_ranks(chunk_ids)
    bm25 = Bm25Index.from_term_counts(
        vocabulary,
        ids,
        joined([p.entry_counts for p in present]),
        joined([p.distinct for p in present]),
        joined([p.lengths for p in present]),
        id_ranks,
    )
    return bm25, id_ranks
