"""One file's outcome: redacted, chunked, its terms counted and hash-embedded, in a worker
or here, from the cache or computed.

Why it exists: a file's outcome is a pure function of its path, its text and the build's
settings, so it can be computed in any process, cached, and sent back in the form that is
cheapest to pickle. This module is what a worker process runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import attrs
import numpy as np

from cce_metrics import estimate_tokens
from cce_retrieval.build.cache import (
    BuildCache,
    EncodedOutcome,
    FileOutcome,
    SparseRows,
    TermCounts,
)
from cce_retrieval.chunk.chunker import chunk_file
from cce_retrieval.embed.hashing import EMBED_DIM, HashEmbedder
from cce_retrieval.model import (
    Chunk,
    FloatMatrix,
)
from cce_retrieval.parity.tokenizer import tokenize
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import REFERENCE, STRICT, strict_redact
from cce_retrieval.store.write import chunk_array_text

_worker_embedder: HashEmbedder | None = None


_worker_floats: dict[int, bytes] = {}
"""Float texts already formatted in this process: hash vectors of different files share
most of their values."""


class Vocabulary(dict[str, int]):
    """Token → id in first-occurrence order; a new token takes the next id on lookup."""

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id


def count_terms(chunks: Sequence[Chunk]) -> TermCounts:
    """Tokenize each chunk once: its distinct tokens and counts, and its length."""
    vocabulary = Vocabulary()
    term_id = vocabulary.__getitem__
    entry_terms: list[int] = []
    entry_counts: list[int] = []
    distinct = np.zeros(len(chunks), dtype=np.int64)
    lengths = np.zeros(len(chunks), dtype=np.int64)
    for i, chunk in enumerate(chunks):
        tokens = tokenize(chunk.content)
        counts = Counter(tokens)
        lengths[i] = len(tokens)
        distinct[i] = len(counts)
        entry_terms.extend(map(term_id, counts))
        entry_counts.extend(counts.values())
    return TermCounts(
        tuple(vocabulary),
        np.asarray(entry_terms, dtype=np.int64),
        np.asarray(entry_counts, dtype=np.int64),
        distinct,
        lengths,
    )


def file_outcome(
    rel_path: str,
    text: str,
    protect: bool,
    embed_hash: bool,
    cache: BuildCache | None,
    protection: str = REFERENCE,
    store_text: bool = True,
    key: bytes | None = None,
) -> tuple[FileOutcome, EncodedOutcome | None]:
    """Redact, chunk, count tokens and (for the hash embedder) embed one file.

    The unit of parallel work. Tokens are counted once, for BM25, and the hash
    embedding is made from those counts (`HashEmbedder.matrix_from_term_counts`).
    The store text is made when `store_text` asks for it or a cache entry is written
    (so the entry serves a later `cce index` too), and returned only when asked for.
    `key` is the file's cache key (`BuildCache.key`), given whenever `cache` is. Returns
    the outcome and, when a cache entry was made, the outcome in its encoding.
    """
    global _worker_embedder
    redacted = redact(text) if protect else text
    strict_redactions = 0
    if protect:
        # Strict runs after the reference redactor; under the default its result is only
        # counted, for the notice of what strict protection would add.
        stricter, strict_redactions = strict_redact(redacted, rel_path)
        if protection == STRICT:
            redacted = stricter
    chunked = chunk_file(rel_path, redacted)
    terms = count_terms(chunked.chunks)
    embeddings: FloatMatrix | None = None
    lengths: tuple[int, ...] | None = None
    made_text: bytes | None = None
    if embed_hash:
        if _worker_embedder is None:
            _worker_embedder = HashEmbedder()
        codes = _worker_embedder.term_codes(terms.vocabulary)
        owners = np.repeat(np.arange(len(chunked.chunks), dtype=np.int64), terms.distinct)
        embeddings = HashEmbedder.matrix_from_term_counts(
            len(chunked.chunks), owners, codes[terms.entry_terms], terms.entry_counts
        )
        lengths = (EMBED_DIM,) * len(chunked.chunks)
        if store_text or cache is not None:
            made_text = chunk_array_text(chunked.chunks, embeddings, lengths, _worker_floats)
    outcome = FileOutcome(
        chunks=chunked.chunks,
        imports=chunked.imports,
        file_tokens=estimate_tokens(redacted),
        embeddings=embeddings,
        lengths=lengths,
        terms=terms,
        strict_redactions=strict_redactions,
        store_text=made_text,
    )
    encoded = None
    if cache is not None and embeddings is not None:
        assert key is not None
        encoded = cache.put(key, outcome)
    if not store_text and made_text is not None:
        # Not sent back for nothing.
        outcome = attrs.evolve(outcome, store_text=None)
        if encoded is not None:
            encoded = attrs.evolve(encoded, store_text=None, text_in_entry=None)
    return outcome, encoded


FileTask = tuple[str, str, bool, bool, BuildCache | None, str, bool, bytes | None]


def file_outcome_task(task: FileTask) -> FileOutcome:
    return file_outcome(*task)[0]


def packed_outcome_task(task: FileTask) -> tuple[FileOutcome, SparseRows | None] | EncodedOutcome:
    """`file_outcome_task` for a worker process, in the form cheapest to send back.

    With a cache, that is the entry just written (`EncodedOutcome`): the building process
    decodes it as it would a hit. Otherwise the hash matrix travels back as its non-zero
    cells only (hash vectors are ~90% zeros), so far fewer bytes are pickled, and the
    build scatters them straight into the index matrix (no per-file dense copy)."""
    outcome, encoded = file_outcome(*task)
    if encoded is not None:
        if encoded.store_text is not None and encoded.text_in_entry is not None:
            # The building process reads it from the entry: one copy, not four.
            return attrs.evolve(encoded, store_text=None)
        return encoded
    matrix = outcome.embeddings
    if matrix is None:
        return outcome, None
    assert matrix.shape[1] == EMBED_DIM  # the width `stack_embeddings` stacks
    return attrs.evolve(outcome, embeddings=None), SparseRows.of(matrix)
