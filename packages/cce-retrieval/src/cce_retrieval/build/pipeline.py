"""Directory → in-memory `Index`: the indexing pipeline of docs/index-store.md#pipeline.

Why it exists: `cce index`, `cce conformance`, `cce relevance --dir` and the benchmark
all build an index the same way, and the order of the steps is part of the contract
(redaction happens before anything else sees the text, so ids, token counts and
embeddings all derive from the redacted file). This module owns that order, the
build statistics, and the embedding phase (batches of 64; a vectorised fast path for
the hash embedder). Per-file work (redact, chunk, hash-embed) may run in worker
processes and may come from the incremental build cache (`cce_retrieval.build.cache`);
either way files are reassembled in walk order, so the index is the same. It writes
no store: persisting is the store's job (`cce_retrieval.store.write`), though a
caller's `StoreStream` may take the store's chunk text as the build makes it (`build_or_reuse`).
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Final, Protocol, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from cce_metrics import estimate_tokens
from cce_retrieval.build.cache import (
    BuildCache,
    EncodedOutcome,
    FileOutcome,
    SparseRows,
    StoreRecord,
    TermCounts,
)
from cce_retrieval.build.processes import (
    become_helper,
    interrupts_deferred,
    pool_context,
    widen_pipes,
)
from cce_retrieval.build.spool import PieceSpool
from cce_retrieval.chunk.chunker import chunk_file
from cce_retrieval.embed.hashing import EMBED_DIM, Embedder, EmbedError, HashEmbedder, check_vectors
from cce_retrieval.embed.registry import embedder_model
from cce_retrieval.model import (
    SPEC_VERSION,
    Chunk,
    EmbeddingMatrix,
    FloatMatrix,
    Index,
    SparseEmbeddings,
)
from cce_retrieval.parity.tokenizer import tokenize
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import REFERENCE, STRICT, strict_redact
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import Bm25Factory, offer_bm25
from cce_retrieval.rank.order import IntArray, id_order_ranks
from cce_retrieval.store.fingerprint import embed_dim
from cce_retrieval.store.load import embedding_matrix
from cce_retrieval.store.sources import SourceFile, source_files
from cce_retrieval.store.write import StoreChunks, StoreStream, chunk_array_text, store_head_text
from cce_retrieval.walk.walker import WalkedFile, walk

EMBED_BATCH_SIZE: Final = 64


@runtime_checkable
class MatrixEmbedder(Protocol):
    """An embedder that can embed a whole corpus as one matrix (the hash fast path)."""

    def embed_matrix(self, texts: Sequence[str]) -> FloatMatrix: ...


class BuildError(Exception):
    """The build was aborted (an embedder failed); nothing may be written."""


@attrs.frozen(slots=True)
class BuildResult:
    """The built index plus the counters `cce index` prints (docs/index-store.md#pipeline,
    docs/index-store.md#cce-index)."""

    index: Index
    files_indexed: int
    files_skipped: int
    sensitive_skipped: int
    walk_errors: int
    total_chunks: int
    # What was indexed (path, size, hash of each file), for the record beside a store.
    sources: tuple[SourceFile, ...] = ()
    protection: str = REFERENCE
    strict_redactions: int = 0
    """Redactions strict protection adds: made (strict) or that it would make (reference)."""
    strict_skips: int = 0
    """Files only strict protection skips: skipped (strict) or that it would skip (reference)."""
    store_chunks: StoreChunks | None = None
    """The store's chunk array text, made per file with the embeddings (hash embedder),
    for `write_store`; None when the embedder runs after chunking, or when it went to
    `store_stream` instead."""
    store_stream: StoreStream | None = None
    """The stream the build wrote the store's chunk array to (`build_or_reuse`), all of
    it: `StoreStream.close_array` and `commit` finish the store."""
    cache: BuildCache | None = None
    """The build cache the build used, where `remember_store` records its store."""
    corpus_key: bytes | None = None
    """The key of exactly these files under these settings (`BuildCache.corpus_key`)."""

    @property
    def embedder(self) -> str:
        """The embedder name the store records."""
        return self.index.embedder

    @property
    def embed_dim(self) -> int:
        """The embedding dimension the fingerprint records (`fingerprint.embed_dim`)."""
        return embed_dim(self.index)

    def remember_store(self, sha256: str, size: int) -> None:
        """Record in the build cache that these files make the store `sha256` (of `size`
        bytes), for `build_or_reuse`. Only a build that made its store text records: for
        other embedders the store is not predicted, so it is never reused either."""
        if self.cache is None or self.corpus_key is None:
            return
        if self.store_chunks is None and self.store_stream is None:
            return
        record = StoreRecord(
            sha256=sha256,
            size=size,
            total_chunks=self.total_chunks,
            strict_redactions=self.strict_redactions,
            embedder=self.embedder,
            embed_dim=self.embed_dim,
        )
        self.cache.put_store_record(self.corpus_key, record)


@attrs.frozen(slots=True)
class RecordedBuild:
    """A build that did not need to run: the cache recorded the store these exact files
    make, and the caller found that store on disk. The counters are `BuildResult`'s."""

    record: StoreRecord
    files_indexed: int
    files_skipped: int
    sensitive_skipped: int
    walk_errors: int
    sources: tuple[SourceFile, ...]
    protection: str
    strict_skips: int

    @property
    def total_chunks(self) -> int:
        return self.record.total_chunks

    @property
    def strict_redactions(self) -> int:
        return self.record.strict_redactions

    @property
    def embedder(self) -> str:
        return self.record.embedder

    @property
    def embed_dim(self) -> int:
        return self.record.embed_dim


StoreReuse = Callable[[StoreRecord], bool]
"""Whether the store a record describes is in place, ready to be kept as it is."""


def _embed_in_batches(embedder: Embedder, contents: Sequence[str]) -> list[list[float]]:
    vectors: list[list[float]] = []
    for start in range(0, len(contents), EMBED_BATCH_SIZE):
        batch = list(contents[start : start + EMBED_BATCH_SIZE])
        try:
            got = embedder.try_embed_batch(batch)
        except EmbedError as err:
            raise BuildError(f"{err}. Aborting the index; nothing was written.") from err
        if len(got) != len(batch):
            raise BuildError(
                f"embedder '{embedder.name}' returned {len(got)} vector(s) for "
                f"{len(batch)} chunk(s) (chunks {start}..{start + len(batch) - 1}). "
                "Aborting the index; nothing was written."
            )
        vectors.extend(got)
    # Across batches too: one NaN or one odd dimension must not reach a store.
    try:
        check_vectors(vectors, contents, f"embedder '{embedder.name}'")
    except EmbedError as err:
        raise BuildError(f"{err}. Aborting the index; nothing was written.") from err
    return vectors


def embed_contents(
    embedder: Embedder, contents: Sequence[str]
) -> tuple[FloatMatrix, list[int] | None]:
    """Embed chunk contents in order: the (n, dim) matrix and ragged lengths if any."""
    if isinstance(embedder, MatrixEmbedder):
        return embedder.embed_matrix(contents), None
    return embedding_matrix(_embed_in_batches(embedder, contents))


ProgressCallback = Callable[[int, int], None]
"""Called as `progress(files_done, files_total)` while files are redacted and chunked."""

_PARALLEL_MIN_BYTES: Final = 1 << 18
"""Below this much text to chunk, starting worker processes costs more than it saves."""


def default_jobs() -> int:
    """Worker processes for a build: the CPUs this process may run on, at most 8."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = os.cpu_count() or 1
    return max(1, min(available, 8))


_worker_embedder: HashEmbedder | None = None
_worker_floats: dict[int, bytes] = {}
"""Float texts already formatted in this process: hash vectors of different files share
most of their values."""


class _Vocabulary(dict[str, int]):
    """Token → id in first-occurrence order; a new token takes the next id on lookup."""

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id


def _count_terms(chunks: Sequence[Chunk]) -> TermCounts:
    """Tokenize each chunk once: its distinct tokens and counts, and its length."""
    vocabulary = _Vocabulary()
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


def _file_outcome(
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
    terms = _count_terms(chunked.chunks)
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


class _TermNumbering:
    """Corpus-wide term ids in first-occurrence order, given file by file in walk order.

    The build numbers each file's terms as soon as every file before it is in, while the
    workers still chunk the rest (`_outcomes(numbering=...)`), so laying out BM25 after
    the build starts from each file's entries already in corpus-wide ids. Numbering is
    the dearest part of that layout, and BM25 is laid out when the build's work is done
    and one CPU is left to it (`build_index(bm25_ready=...)`).
    """

    def __init__(self) -> None:
        self._numbering = _Vocabulary()
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


def _cached_bm25(
    cache: BuildCache | None,
    corpus_key: bytes | None,
    parts: Sequence[TermCounts | None],
    chunk_ids: Sequence[str],
    numbering: _TermNumbering | None = None,
) -> tuple[Bm25Index, IntArray]:
    """`_bm25_from_counts`, kept in the build cache for the next build of the same files
    (a repeated `cce relevance --dir` then lays out no postings at all)."""
    if cache is not None and corpus_key is not None:
        found = cache.get_bm25(corpus_key, len(chunk_ids))
        if found is not None:
            return found
    made = _bm25_from_counts(parts, chunk_ids, numbering)
    if cache is not None and corpus_key is not None:
        cache.put_bm25(corpus_key, *made)
    return made


def _bm25_from_counts(
    parts: Sequence[TermCounts | None],
    chunk_ids: Sequence[str],
    numbering: _TermNumbering | None = None,
) -> tuple[Bm25Index, IntArray]:
    """One corpus-wide BM25 from per-file counts (term ids in first-occurrence order);
    `numbering`, when it has numbered every file already, gives the ids."""
    present = [part for part in parts if part is not None]
    assert len(present) == len(parts)

    def joined(arrays: Sequence[IntArray]) -> IntArray:
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)

    if numbering is None or len(numbering.entry_terms) != len(present):
        numbering = _TermNumbering()
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


_Task = tuple[str, str, bool, bool, BuildCache | None, str, bool, bytes | None]


def _file_outcome_task(task: _Task) -> FileOutcome:
    return _file_outcome(*task)[0]


def _packed_outcome_task(task: _Task) -> tuple[FileOutcome, SparseRows | None] | EncodedOutcome:
    """`_file_outcome_task` for a worker process, in the form cheapest to send back.

    With a cache, that is the entry just written (`EncodedOutcome`): the building process
    decodes it as it would a hit. Otherwise the hash matrix travels back as its non-zero
    cells only (hash vectors are ~90% zeros), so far fewer bytes are pickled, and the
    build scatters them straight into the index matrix (no per-file dense copy)."""
    outcome, encoded = _file_outcome(*task)
    if encoded is not None:
        if encoded.store_text is not None and encoded.text_in_entry is not None:
            # The building process reads it from the entry: one copy, not four.
            return attrs.evolve(encoded, store_text=None)
        return encoded
    matrix = outcome.embeddings
    if matrix is None:
        return outcome, None
    assert matrix.shape[1] == EMBED_DIM  # the width `_stack` stacks
    return attrs.evolve(outcome, embeddings=None), SparseRows.of(matrix)


def _outcomes(
    files: Sequence[WalkedFile],
    protect: bool,
    embed_hash: bool,
    cache: BuildCache | None,
    jobs: int,
    progress: ProgressCallback | None,
    protection: str = REFERENCE,
    store_text: bool = True,
    keys: Sequence[bytes] = (),
    stream: StoreStream | None = None,
    numbering: _TermNumbering | None = None,
) -> tuple[list[FileOutcome], PieceSpool, list[FloatMatrix | SparseRows | None]]:
    """Every file's outcome in walk order: from the cache where it has it, else computed.

    Also each file's embedding rows: the outcome's matrix, or the cells a worker sent
    (then the outcome itself carries no matrix).

    Each outcome's store text is moved into the returned spool as it arrives (the
    outcomes keep none), so the largest output of a big build is not held on the heap.
    `keys` are the files' cache keys (`BuildCache.key`), when there is a cache.

    With a `stream` (begun), each piece goes on to it as soon as every piece before it
    is in, and leaves the spool; once the stream fails, the pieces stay in the spool.
    With a `numbering`, each file's terms are numbered as soon as every file before it
    is in.
    """
    total = len(files)
    assert cache is None or len(keys) == total
    entry_keys: list[bytes | None] = list(keys) if cache is not None else [None] * total
    outcomes: list[FileOutcome | None] = [None] * total
    texts = PieceSpool(total)
    sparse: dict[int, SparseRows] = {}

    def take_text(i: int, outcome: FileOutcome) -> FileOutcome:
        if outcome.store_text is None:
            return outcome
        texts.put(i, outcome.store_text)
        if stream is not None:
            while not stream.failed and stream.pieces < total:
                piece = texts.get(stream.pieces)
                if piece is None or not stream.add(piece):
                    break
                texts.forget(stream.pieces - 1)
        return attrs.evolve(outcome, store_text=None)

    def task(i: int) -> _Task:
        walked_file = files[i]
        return (
            walked_file.rel_path,
            walked_file.text,
            protect,
            embed_hash,
            cache,
            protection,
            store_text,
            entry_keys[i],
        )

    done = 0
    numbered = 0

    def finish(
        i: int, outcome: FileOutcome, cells: SparseRows | None = None, report: bool = True
    ) -> None:
        nonlocal done, numbered
        if cells is not None:
            sparse[i] = cells
        outcomes[i] = take_text(i, outcome)
        done += 1
        while numbering is not None and numbered < total:
            ready = outcomes[numbered]
            if ready is None or ready.terms is None:
                break  # a file without counts stops it: BM25 then numbers them itself
            numbering.number(ready.terms)
            numbered += 1
        if report and progress is not None:
            progress(done, total)

    # Files with no entry at all are computed by workers while the entries there are
    # read here: after a small edit, the edited files cost little wall time of their own.
    absent = [
        i for i, key in enumerate(entry_keys) if key is None or cache is None or not cache.has(key)
    ]
    absent_bytes = sum(len(files[i].text) for i in absent)
    workers = min(jobs, len(absent))
    pool: concurrent.futures.ProcessPoolExecutor | None = None
    results: Iterator[tuple[FileOutcome, SparseRows | None] | EncodedOutcome] = iter(())
    parallel = (
        workers
        and jobs > 1
        and absent_bytes >= _PARALLEL_MIN_BYTES
        and (workers > 1 or len(absent) < total)
    )
    try:
        if parallel:
            # The first task forks the workers; a Ctrl-C before the pool is whole would
            # leave them where no shutdown reaches (`interrupts_deferred`).
            tasks = [task(i) for i in absent]
            with interrupts_deferred():
                pool = concurrent.futures.ProcessPoolExecutor(
                    workers,
                    mp_context=pool_context(),
                    initializer=become_helper,
                    initargs=(os.getpid(),),
                )
                widen_pipes(pool)
                results = pool.map(_packed_outcome_task, tasks, chunksize=4)
        late: list[int] = []
        absent_set = set(absent)
        for i, key in enumerate(entry_keys):
            if key is None or i in absent_set:
                continue
            assert cache is not None
            hit = None
            cells = None
            if embed_hash:
                found = cache.get_sparse(key, store_text)
                # Hash rows are EMBED_DIM wide; anything else was not made by this build.
                if found is not None and (found[1].width == EMBED_DIM or found[1].rows == 0):
                    hit, cells = found
            else:
                hit = cache.get(key, store_text)
            if hit is None:
                late.append(i)
            else:
                finish(i, hit, cells, report=False)
        if progress is not None:
            progress(done, total)
        if pool is not None:
            for i, result in zip(absent, results, strict=True):
                if isinstance(result, EncodedOutcome):
                    read = _with_entry_text(result)
                    if read is None:
                        late.append(i)  # its entry is gone already: made again here
                        continue
                    outcome, cells = read.decode()
                else:
                    outcome, cells = result
                finish(i, outcome, cells)
        else:
            late = sorted([*absent, *late])
        for i in late:
            finish(i, _file_outcome_task(task(i)))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    complete = [outcome for outcome in outcomes if outcome is not None]
    assert len(complete) == total
    rows = [sparse.get(i) or outcome.embeddings for i, outcome in enumerate(complete)]
    return complete, texts, rows


def _with_entry_text(result: EncodedOutcome) -> EncodedOutcome | None:
    """A worker's `result` with its store text, read from the entry the worker wrote
    when it was left there (`_packed_outcome_task`); None if it can no longer be read."""
    place = result.text_in_entry
    if result.store_text is not None or place is None:
        return result
    text = place.read()
    return None if text is None else attrs.evolve(result, store_text=text)


def release_free_memory() -> None:
    """Hand the heap's free pages back to the operating system (glibc's `malloc_trim`).

    A build reads, decodes and drops gigabytes of short-lived objects (file texts,
    worker results, cache entries); glibc keeps the freed pages, so the process's
    resident size stays at its high-water mark while the store is written, which at a
    million chunks is the difference between fitting in 8 GB or not. Elsewhere (or when
    the C library is not glibc) this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _stack(parts: list[FloatMatrix | SparseRows], rows: int) -> SparseEmbeddings:
    """Per-file hash rows (`rows` of them in all) as one matrix of their non-zero cells;
    `parts` drops each part once its cells are taken.

    Hash vectors are about 90% zeros: the cells alone are a tenth of the dense matrix,
    which is never made (`SparseEmbeddings`; cosine scoring and the sidecar use the
    cells as they are).
    """
    # Cells as 32-bit rows and 16-bit dimensions: a third of the memory of flat 64-bit
    # positions, and every temporary here is new memory.
    row_type: np.dtype[np.integer] = np.dtype(np.uint32 if rows <= 1 << 32 else np.int64)
    cell_rows: list[npt.NDArray[np.integer]] = []
    dims: list[npt.NDArray[np.integer]] = []
    values: list[FloatMatrix] = []
    first = 0
    for i, part in enumerate(parts):
        cells = part if isinstance(part, SparseRows) else SparseRows.of(part)
        assert cells.width == EMBED_DIM or cells.rows == 0
        part_rows, part_dims = np.divmod(cells.where, EMBED_DIM)
        chunk_rows = part_rows.astype(row_type)
        chunk_rows += first
        cell_rows.append(chunk_rows)
        dims.append(part_dims.astype(np.uint16))
        values.append(cells.values)
        first += cells.rows
        parts[i] = _NO_ROWS
    assert first <= rows, f"{first} embedding rows for {rows} chunks"
    if not values:
        empty = np.zeros(0, dtype=np.uint16)
        return SparseEmbeddings.from_cells(
            rows, EMBED_DIM, empty, empty, np.zeros(0, dtype=np.float64)
        )
    return SparseEmbeddings.from_cells(
        rows, EMBED_DIM, np.concatenate(cell_rows), np.concatenate(dims), np.concatenate(values)
    )


_NO_ROWS: Final = np.zeros((0, EMBED_DIM), dtype=np.float64)


def _embed_generic(
    embedder: Embedder,
    outcomes: list[FileOutcome],
    cache: BuildCache | None,
    keys: Sequence[bytes],
) -> tuple[FloatMatrix, list[int] | None]:
    """Embed with a non-hash embedder, in batches across files; reuse cached vectors.
    `keys` are the files' cache keys when there is a cache."""
    vectors: list[list[float]] = []
    fresh: list[str] = []
    fresh_at: list[int] = []
    for outcome in outcomes:
        if outcome.embeddings is not None and outcome.lengths is not None:
            for row, length in zip(outcome.embeddings, outcome.lengths, strict=True):
                vectors.append(row[:length].tolist())
        else:
            for chunk in outcome.chunks:
                fresh_at.append(len(vectors))
                fresh.append(chunk.content)
                vectors.append([])
    fresh_matrix, fresh_lengths = embed_contents(embedder, fresh)
    widths = fresh_lengths or [fresh_matrix.shape[1] if fresh_matrix.ndim == 2 else 0] * len(fresh)
    for at, row, width in zip(fresh_at, fresh_matrix, widths, strict=True):
        vectors[at] = row[:width].tolist()
    if cache is not None:
        first = 0
        for key, outcome in zip(keys, outcomes, strict=True):
            count = len(outcome.chunks)
            if outcome.embeddings is None:
                part = vectors[first : first + count]
                width = max((len(v) for v in part), default=0)
                matrix = np.zeros((count, width), dtype=np.float64)
                for row, vector in enumerate(part):
                    matrix[row, : len(vector)] = vector
                entry = attrs.evolve(
                    outcome, embeddings=matrix, lengths=tuple(len(v) for v in part)
                )
                cache.put(key, entry)
            first += count
    return embedding_matrix(vectors)


def build_index(
    root: str,
    embedder: Embedder,
    protect: bool = True,
    *,
    jobs: int = 1,
    cache: BuildCache | None = None,
    progress: ProgressCallback | None = None,
    protection: str = REFERENCE,
    store_text: bool = True,
    bm25_ready: Callable[[Bm25Factory], None] | None = None,
) -> BuildResult:
    """Walk, redact (when `protect`), chunk and embed `root`. Raises BuildError.

    `jobs` > 1 spreads redaction, chunking and hash embedding over that many processes;
    `cache` reuses (and records) per-file outcomes. Neither changes a single output byte:
    files are reassembled in walk order and every per-file step is deterministic.
    `protection="strict"` adds `cce_retrieval.protect.strict`'s names and shapes on top of the
    reference protection; under the default, what strict would add is only counted, so the
    index is byte-identical to the reference's and a caller can say what strict would do.
    `store_text=False` (a caller that writes no store) leaves `BuildResult.store_chunks`
    None and skips the store text in cache entries it reads. `bm25_ready` is called with
    what lays out the index's BM25 (the factory `offer_bm25` gets) as soon as every
    file's tokens are counted, before the embedding matrix is put together: a caller
    that writes BM25 apart (`cce_retrieval.store.sidecar.start_bm25_staging`) starts it then.
    """
    built = _build(
        root, embedder, protect, jobs, cache, progress, protection, store_text, bm25_hook=bm25_ready
    )
    assert isinstance(built, BuildResult)  # nothing is reused without `reuse`
    return built


def build_or_reuse(
    root: str,
    embedder: Embedder,
    protect: bool,
    *,
    reuse: StoreReuse,
    cache: BuildCache,
    jobs: int = 1,
    progress: ProgressCallback | None = None,
    protection: str = REFERENCE,
    bm25_ready: Callable[[Bm25Factory], None] | None = None,
    store_stream: StoreStream | None = None,
) -> BuildResult | RecordedBuild:
    """`build_index` (with `store_text`) for a caller that writes the store, unless the
    store is already in place.

    After the walk, the files' corpus key is looked up among the cache's store records
    (`BuildResult.remember_store`); when there is one and `reuse` accepts it, nothing is
    read back, chunked or embedded: the result is the walk's counters and the record.

    With `store_stream` (not begun), a build that makes the store's chunk text writes
    it there as it goes; the result's `store_stream` is then set when all of it went
    there. The caller discards the stream whatever happens to the build.
    """
    return _build(
        root,
        embedder,
        protect,
        jobs,
        cache,
        progress,
        protection,
        True,
        reuse=reuse,
        bm25_hook=bm25_ready,
        store_stream=store_stream,
    )


def _build(
    root: str,
    embedder: Embedder,
    protect: bool,
    jobs: int,
    cache: BuildCache | None,
    progress: ProgressCallback | None,
    protection: str,
    store_text: bool,
    *,
    reuse: StoreReuse | None = None,
    bm25_hook: Callable[[Bm25Factory], None] | None = None,
    store_stream: StoreStream | None = None,
) -> BuildResult | RecordedBuild:
    """What `build_index` and `build_or_reuse` share: one walk, then reuse or a build.

    One function, so that the walk (every file's text) is held by no caller's frame
    while the store is written."""
    walked = walk(root, protect, protection)
    file_keys = [] if cache is None else [cache.key(f.rel_path, f.text) for f in walked.files]
    corpus_key = None if cache is None else cache.corpus_key(file_keys)
    embed_hash = isinstance(embedder, HashEmbedder)
    if reuse is not None and cache is not None and corpus_key is not None and embed_hash:
        record = cache.get_store_record(corpus_key)
        if (
            record is not None
            and (record.embedder, record.embed_dim) == (embedder.name, EMBED_DIM)
            and reuse(record)
        ):
            return RecordedBuild(
                record=record,
                files_indexed=len(walked.files),
                files_skipped=walked.skipped,
                sensitive_skipped=walked.sensitive_skipped,
                walk_errors=walked.walk_errors,
                sources=source_files(walked.files),
                protection=protection,
                strict_skips=walked.strict_only_skipped,
            )
    model = embedder_model(embedder)
    stream = store_stream if store_text and embed_hash and model is None else None
    if stream is not None:
        stream.begin(store_head_text(SPEC_VERSION, embedder.name, None, None))
    # Only for a caller that lays out BM25 as soon as the build is done, and only when
    # the cache does not hold this corpus's BM25 already (then nothing is laid out).
    numbering = None
    if bm25_hook is not None and (
        cache is None or corpus_key is None or not cache.has_bm25(corpus_key)
    ):
        numbering = _TermNumbering()
    outcomes, texts, file_rows = _outcomes(
        walked.files,
        protect,
        embed_hash,
        cache,
        jobs,
        progress,
        protection,
        store_text,
        file_keys,
        stream,
        numbering,
    )
    strict_redactions = sum(outcome.strict_redactions for outcome in outcomes)
    chunks: list[Chunk] = []
    file_imports: dict[str, list[str]] = {}
    file_tokens: dict[str, int] = {}
    for walked_file, outcome in zip(walked.files, outcomes, strict=True):
        rel_path = walked_file.rel_path
        file_tokens[rel_path] = outcome.file_tokens
        if outcome.imports:
            file_imports[rel_path] = list(outcome.imports)
        chunks.extend(outcome.chunks)
    term_parts = [o.terms for o in outcomes]
    chunk_ids = [c.chunk_id for c in chunks]
    walk_counts = attrs.evolve(walked, files=())
    sources = source_files(walked.files)
    files_indexed = len(walked.files)
    del walked  # every file's text: what is left to do needs none of them

    def lay_out_bm25() -> tuple[Bm25Index, IntArray]:
        return _cached_bm25(cache, corpus_key, term_parts, chunk_ids, numbering)

    if bm25_hook is not None:
        # The texts' pages go back first: a child forked now would keep them otherwise.
        release_free_memory()
        bm25_hook(lay_out_bm25)
    store_chunks = None
    streamed = None
    if stream is not None and not stream.failed and stream.pieces == len(outcomes):
        streamed = stream
    if streamed is None and store_text and embed_hash and texts.complete:
        store_chunks = StoreChunks(texts, len(chunks))
    else:
        texts.close()
    lengths: list[int] | None = None
    embeddings: EmbeddingMatrix
    if embed_hash:
        parts = [part for part in file_rows if part is not None]
        del outcomes, file_rows
        embeddings = _stack(parts, len(chunks))
    else:
        embeddings, lengths = _embed_generic(embedder, outcomes, cache, file_keys)
    dim = int(embeddings.shape[1]) if model is not None and embeddings.ndim == 2 else None
    index = Index(
        embedder=embedder.name,
        chunks=chunks,
        embeddings=embeddings,
        file_imports=file_imports,
        file_tokens=file_tokens,
        embedding_lengths=lengths,
        embedder_model=model,
        embedding_dim=dim,
    )
    # BM25 from the counts the workers made, laid out only if a search asks for it.
    offer_bm25(index, lay_out_bm25)
    result = BuildResult(
        index=index,
        files_indexed=files_indexed,
        files_skipped=walk_counts.skipped,
        sensitive_skipped=walk_counts.sensitive_skipped,
        walk_errors=walk_counts.walk_errors,
        sources=sources,
        total_chunks=len(chunks),
        protection=protection,
        strict_redactions=strict_redactions,
        strict_skips=walk_counts.strict_only_skipped,
        store_chunks=store_chunks,
        store_stream=streamed,
        cache=cache,
        corpus_key=corpus_key,
    )
    release_free_memory()
    return result
