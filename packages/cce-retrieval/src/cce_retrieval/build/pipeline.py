"""Directory → in-memory `Index`: the indexing pipeline of docs/index-store.md#pipeline.

Why it exists: `cce index`, `cce conformance`, `cce relevance --dir` and the benchmark
all build an index the same way, and the order of the steps is part of the contract
(redaction happens before anything else sees the text, so ids, token counts and
embeddings all derive from the redacted file). This module keeps that order and the
build statistics; each step is its own module: one file's outcome (`files`), every
file's outcome in walk order, from workers and the build cache (`outcomes`), BM25 from
the term counts (`terms`), and the embeddings (`embeddings`). It writes no store:
persisting is `cce_retrieval.store.persist`'s job, though a caller's `StoreStream` may
take the store's chunk text as the build makes it (`build_or_reuse`).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from cce_retrieval.build.cache import (
    BuildCache,
    StoreRecord,
)
from cce_retrieval.build.embeddings import embed_generic, release_free_memory, stack_embeddings
from cce_retrieval.build.outcomes import FileSettings, ProgressCallback, collect_outcomes
from cce_retrieval.build.terms import TermNumbering, cached_bm25
from cce_retrieval.embed.hashing import EMBED_DIM, Embedder, HashEmbedder
from cce_retrieval.embed.registry import embedder_model
from cce_retrieval.embed.unit import directionless
from cce_retrieval.model import (
    SPEC_VERSION,
    Chunk,
    EmbeddingMatrix,
    Index,
)
from cce_retrieval.protect.strict import REFERENCE
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import Bm25Factory, offer_bm25
from cce_retrieval.rank.order import IntArray
from cce_retrieval.store.fingerprint import embed_dim
from cce_retrieval.store.sources import SourceFile, source_files
from cce_retrieval.store.write import StoreChunks, StoreStream, store_head_text
from cce_retrieval.walk.walker import walk


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
    strict_paths: tuple[str, ...] = ()
    """The files behind those two counts (redacted or skipped by strict protection only),
    sorted by `rel_path`, so that a notice can name them."""
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
    gitignore_errors: int = 0
    """The part of `walk_errors` that is an unreadable `.gitignore` (`WalkResult`)."""
    vectorless_chunks: int = 0
    """Chunks a scaled embedder (any but hash) gave no vector: an empty input, or a
    vector of zeros only; only the lexical signal finds them
    (docs/retrieval.md#vectors-with-no-direction). Always 0 for the hash embedder."""

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
    strict_paths: tuple[str, ...] = ()
    """Only the files strict protection would skip: which files it would redact in is
    known to the build that made the record, not to the walk."""
    cache: BuildCache | None = None
    corpus_key: bytes | None = None
    gitignore_errors: int = 0

    @property
    def total_chunks(self) -> int:
        return self.record.total_chunks

    @property
    def vectorless_chunks(self) -> int:
        """0: only hash builds are recorded, and every hash chunk has its vector."""
        return 0

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
                strict_paths=walked.strict_only_paths,
                cache=cache,
                corpus_key=corpus_key,
                gitignore_errors=walked.gitignore_errors,
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
        numbering = TermNumbering()
    outcomes, texts, file_rows = collect_outcomes(
        walked.files,
        FileSettings(protect, embed_hash, cache, protection, store_text),
        jobs=jobs,
        keys=file_keys,
        progress=progress,
        stream=stream,
        numbering=numbering,
    )
    strict_redactions = sum(outcome.strict_redactions for outcome in outcomes)
    strict_paths = sorted(
        [f.rel_path for f, o in zip(walked.files, outcomes, strict=True) if o.strict_redactions]
        + list(walked.strict_only_paths)
    )
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
        return cached_bm25(cache, corpus_key, term_parts, chunk_ids, numbering)

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
    vectorless = 0
    if embed_hash:
        parts = [part for part in file_rows if part is not None]
        del outcomes, file_rows
        embeddings = stack_embeddings(parts, len(chunks))
    else:
        embeddings, lengths = embed_generic(embedder, outcomes, cache, file_keys)
        vectorless = int(directionless(embeddings).sum()) if len(chunks) else 0
    dim = int(embeddings.shape[1]) if model is not None and embeddings.ndim == 2 else None
    if dim == 0 and chunks:
        dim = None  # chunks but not one vector: a dimension of 0 would refuse every query
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
        strict_paths=tuple(strict_paths),
        gitignore_errors=walk_counts.gitignore_errors,
        store_chunks=store_chunks,
        store_stream=streamed,
        cache=cache,
        corpus_key=corpus_key,
        vectorless_chunks=vectorless,
    )
    release_free_memory()
    return result
