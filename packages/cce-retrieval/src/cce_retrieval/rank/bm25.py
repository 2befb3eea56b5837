"""Okapi BM25 with the Lucene idf over numpy posting arrays (docs/retrieval.md#bm25).

Why it exists: BM25 is one of the two signals of hybrid search and the whole of the
`bm25` backend. The reference scores every document in a loop; here each term keeps a
posting array (document indices and term frequencies), so a query touches only the
documents that contain one of its terms. The floating-point result is still the
reference's to the last bit: per document the terms are added one at a time in query
order, and every elementwise numpy operation below is the scalar formula of docs/retrieval.md#bm25
in the same order (IEEE-754 elementwise operations are exactly rounded, like the scalar ones).
The statistics are built once per index (`Bm25Index.build`); the ranking keeps documents
with `score_key > 0` and sorts them by key descending, then chunk id ascending.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cce_retrieval.parity.tokenizer import tokenize
from cce_retrieval.rank.order import FloatArray, IntArray, id_order_ranks, ranked_prefix

BM25_K1 = 1.2
BM25_B = 0.75


class Bm25Arrays(NamedTuple):
    """A `Bm25Index`'s query-independent statistics, in its constructor's order."""

    term_ids: dict[str, int]
    offsets: IntArray
    posting_docs: IntArray
    posting_freqs: FloatArray
    doc_lengths: FloatArray
    avgdl: float


def _stable_order(ids: IntArray, bound: int) -> IntArray:
    """`np.argsort(ids, kind="stable")` for ids in [0, bound), sorted 16 bits at a time:
    numpy sorts 16-bit keys stably by radix, several times faster than a merge sort of
    64-bit keys, and sorting the low digit first keeps each pass stable over the last. A
    last digit of at most 8 bits is sorted as 8-bit keys (one counting pass, not two):
    a corpus's 100,000 terms need 17 bits."""
    if bound <= 1 << 16:
        return np.argsort(ids.astype(np.uint16), kind="stable")
    order = np.argsort((ids & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while bound > 1 << shift:
        digit = ids[order] >> shift
        if bound <= 1 << (shift + 8):
            keys: npt.NDArray[np.unsignedinteger] = (digit & 0xFF).astype(np.uint8)
        else:
            keys = (digit & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(keys, kind="stable")]
        shift += 16
    return order


class Bm25Index:
    """BM25 statistics of one corpus: postings, document lengths, document frequencies.

    Postings are stored flat: `_posting_docs[offsets[t]:offsets[t + 1]]` are the
    documents holding term t (ascending), `_posting_freqs` the matching term counts.
    Everything that does not depend on the query (idf, the per-document length norm,
    each posting's whole contribution) is computed once, on a term's first use.
    """

    def __init__(
        self,
        term_ids: dict[str, int],
        offsets: IntArray,
        posting_docs: IntArray,
        posting_freqs: FloatArray,
        doc_lengths: FloatArray,
        avgdl: float,
        id_ranks: IntArray,
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> None:
        self._term_ids = term_ids
        self._offsets = offsets
        self._posting_docs = posting_docs
        self._posting_freqs = posting_freqs
        self._doc_lengths = doc_lengths
        self.avgdl = avgdl
        self.n_docs = len(doc_lengths)
        self._id_ranks = id_ranks
        self.k1 = k1
        self.b = b
        # K1 * (1 - B + B * dl / avgdl): the document half of the docs/retrieval.md#bm25
        # denominator, in the reference's operation order, so `f + norm` below is the reference's
        # `denom`.
        if self.n_docs:
            # A corpus of empty documents has avgdl 0 and NaN norms, as in the reference;
            # no posting ever reads them (an empty document has none).
            with np.errstate(invalid="ignore", divide="ignore"):
                self._length_norm = k1 * (1.0 - b + b * doc_lengths / avgdl)
        else:
            self._length_norm = np.zeros(0, dtype=np.float64)
        self._contributions: dict[int, FloatArray] = {}

    @classmethod
    def build(
        cls, contents: Sequence[str], chunk_ids: Sequence[str], id_ranks: IntArray | None = None
    ) -> Bm25Index:
        """Tokenise every document once (store order) and lay out the postings flat.

        `id_ranks` (from `id_order_ranks(chunk_ids)`) may be passed when the caller already
        has them, so an index's chunk ids are sorted once for all of its rankings.

        Per document only a `Counter` runs in Python; assigning term ids and grouping the
        (term, document, count) triples into postings is done by numpy in one stable sort.
        """
        n_docs = len(contents)
        lengths = np.zeros(n_docs, dtype=np.int64)
        distinct = np.zeros(n_docs, dtype=np.int64)
        flat_terms: list[str] = []
        flat_counts: list[int] = []
        for doc, content in enumerate(contents):
            tokens = tokenize(content)
            counts = Counter(tokens)
            lengths[doc] = len(tokens)
            distinct[doc] = len(counts)
            flat_terms.extend(counts.keys())
            flat_counts.extend(counts.values())
        term_ids = {term: i for i, term in enumerate(dict.fromkeys(flat_terms))}
        ids = np.fromiter(map(term_ids.__getitem__, flat_terms), np.int64, len(flat_terms))
        return cls.from_term_counts(
            term_ids,
            ids,
            np.asarray(flat_counts, dtype=np.int64),
            distinct,
            lengths,
            id_order_ranks(chunk_ids) if id_ranks is None else id_ranks,
        )

    @classmethod
    def from_term_counts(
        cls,
        term_ids: dict[str, int],
        entry_terms: IntArray,
        entry_counts: IntArray,
        distinct: IntArray,
        lengths: IntArray,
        id_ranks: IntArray,
    ) -> Bm25Index:
        """Lay out postings from per-document term counts (documents in store order).

        Document d contributes `distinct[d]` consecutive entries (term id, count), and has
        `lengths[d]` tokens; term ids must be dense. `build` is this after tokenizing;
        a build that already counted each chunk's tokens calls it directly.
        """
        n_docs = len(lengths)
        ids = np.asarray(entry_terms, dtype=np.int64)
        flat_counts = np.asarray(entry_counts, dtype=np.float64)
        lengths = np.asarray(lengths, dtype=np.int64)
        docs = np.repeat(np.arange(n_docs, dtype=np.int64), distinct)
        # Stable: within one term, documents keep their ascending order.
        order = _stable_order(ids, len(term_ids))
        offsets = np.zeros(len(term_ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(ids, minlength=len(term_ids)), out=offsets[1:])
        total = int(lengths.sum())
        avgdl = total / n_docs if n_docs else 0.0
        return cls(
            term_ids,
            offsets,
            docs[order],
            flat_counts[order],
            lengths.astype(np.float64),
            avgdl,
            id_ranks,
        )

    def arrays(self) -> Bm25Arrays:
        """The statistics `__init__` takes (what the store's sidecar persists)."""
        return Bm25Arrays(
            self._term_ids,
            self._offsets,
            self._posting_docs,
            self._posting_freqs,
            self._doc_lengths,
            self.avgdl,
        )

    def with_parameters(self, k1: float, b: float) -> Bm25Index:
        """The same postings scored with other `k1` and `b` (nothing is re-tokenised)."""
        return Bm25Index(
            self._term_ids,
            self._offsets,
            self._posting_docs,
            self._posting_freqs,
            self._doc_lengths,
            self.avgdl,
            self._id_ranks,
            k1,
            b,
        )

    def _span(self, term: str) -> tuple[int, int, int] | None:
        """(term id, first, end) of `term`'s postings, or None for an unknown term."""
        term_id = self._term_ids.get(term)
        if term_id is None:
            return None
        return term_id, int(self._offsets[term_id]), int(self._offsets[term_id + 1])

    def df(self, term: str) -> int:
        """Number of documents containing `term` at least once."""
        span = self._span(term)
        return 0 if span is None else span[2] - span[1]

    def idf(self, term: str) -> float:
        """Lucene's non-negative idf: ln(1 + (N - n + 0.5) / (n + 0.5))."""
        n_q = float(self.df(term))
        return math.log(1.0 + (float(self.n_docs) - n_q + 0.5) / (n_q + 0.5))

    def _contribution(self, term: str, term_id: int, start: int, end: int) -> FloatArray:
        """Each posting's term score idf * (f * (K1 + 1)) / (f + norm), cached per term."""
        cached = self._contributions.get(term_id)
        if cached is None:
            freqs = self._posting_freqs[start:end]
            denom = freqs + self._length_norm[self._posting_docs[start:end]]
            cached = self.idf(term) * (freqs * (self.k1 + 1.0)) / denom
            self._contributions[term_id] = cached
        return cached

    def raw_scores(self, query_terms: Sequence[str]) -> tuple[IntArray, FloatArray]:
        """(documents containing any query term, their BM25 sums), in document order.

        `query_terms` should be the unique query tokens in first-occurrence order
        (`unique_tokens`); that order is the summation order of every document's score.
        """
        scores = np.zeros(self.n_docs, dtype=np.float64)
        for term in query_terms:
            span = self._span(term)
            if span is None:
                continue
            # Each document appears at most once per posting, so this fancy-indexed += adds
            # exactly one term contribution per document, in query-term order.
            _, start, end = span
            scores[self._posting_docs[start:end]] += self._contribution(term, *span)
        # Every contribution is > 0 (idf > 0 and f > 0), so the touched documents are
        # exactly the non-zero scores.
        docs_hit = np.flatnonzero(scores).astype(np.int64)
        return docs_hit, scores[docs_hit]

    def rank(
        self, query_terms: Sequence[str], limit: int | None = None
    ) -> tuple[IntArray, FloatArray]:
        """Ranked (documents, raw scores): `score_key > 0` only, key desc then chunk id asc.

        `limit` returns only the first `limit` entries (the same prefix, computed faster).
        """
        docs, scores = self.raw_scores(query_terms)
        # score_key(s) > 0 exactly when s * 1e6 rounds to at least 1, i.e. s * 1e6 >= 0.5;
        # filtering on that first keeps the rounding work to the documents that survive.
        keep = scores * 1_000_000.0 >= 0.5
        docs, scores = docs[keep], scores[keep]
        order = ranked_prefix(scores, self._id_ranks[docs], limit)
        return docs[order], scores[order]

    def score(self, query_terms: Sequence[str]) -> list[tuple[int, float]]:
        """The reference's `score`: the ranked list of (document index, raw BM25 sum)."""
        docs, scores = self.rank(query_terms)
        return list(zip(docs.tolist(), scores.tolist(), strict=True))
