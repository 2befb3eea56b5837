"""Directory → in-memory `Index`: the indexing pipeline of indexing spec §1.

Why it exists: `cce index`, `cce conformance`, `cce relevance --dir` and the benchmark
all build an index the same way, and the order of the steps is part of the contract
(redaction happens before anything else sees the text, so ids, token counts and
embeddings all derive from the redacted file). This module owns that order, the
build statistics, and the embedding phase (batches of 64; a vectorised fast path for
the hash embedder). It writes nothing: persisting is `cce_retrieval.store`'s job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

import attrs

from cce_metrics import estimate_tokens
from cce_retrieval.chunker import chunk_file
from cce_retrieval.embedder import Embedder, EmbedError, check_vectors
from cce_retrieval.embedders import embedder_model
from cce_retrieval.model import Chunk, FloatMatrix, Index
from cce_retrieval.protection import REFERENCE, STRICT, strict_redact
from cce_retrieval.redactor import redact
from cce_retrieval.store_load import embedding_matrix
from cce_retrieval.walker import walk

EMBED_BATCH_SIZE: Final = 64


@runtime_checkable
class MatrixEmbedder(Protocol):
    """An embedder that can embed a whole corpus as one matrix (the hash fast path)."""

    def embed_matrix(self, texts: Sequence[str]) -> FloatMatrix: ...


class BuildError(Exception):
    """The build was aborted (an embedder failed); nothing may be written."""


@attrs.frozen(slots=True)
class BuildResult:
    """The built index plus the counters `cce index` prints (spec §1, §10)."""

    index: Index
    files_indexed: int
    files_skipped: int
    sensitive_skipped: int
    walk_errors: int
    total_chunks: int
    protection: str = REFERENCE
    strict_redactions: int = 0
    """Redactions strict protection adds: made (strict) or that it would make (reference)."""
    strict_skips: int = 0
    """Files only strict protection skips: skipped (strict) or that it would skip (reference)."""


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


def build_index(
    root: str, embedder: Embedder, protect: bool = True, protection: str = REFERENCE
) -> BuildResult:
    """Walk, redact (when `protect`), chunk and embed `root`. Raises BuildError.

    `protection="strict"` adds `cce_retrieval.protection`'s names and shapes on top of the
    reference protection; under the default, what strict would add is only counted, so the
    index is byte-identical to the reference's and a caller can say what strict would do.
    """
    walked = walk(root, protect, protection)
    chunks: list[Chunk] = []
    file_imports: dict[str, list[str]] = {}
    file_tokens: dict[str, int] = {}
    strict_redactions = 0
    for walked_file in walked.files:
        rel_path = walked_file.rel_path
        text = redact(walked_file.text) if protect else walked_file.text
        if protect:
            stricter, added = strict_redact(text, rel_path)
            strict_redactions += added
            if protection == STRICT:
                text = stricter
        file_tokens[rel_path] = estimate_tokens(text)
        file_chunks = chunk_file(rel_path, text)
        if file_chunks.imports:
            file_imports[rel_path] = list(file_chunks.imports)
        chunks.extend(file_chunks.chunks)
    embeddings, lengths = embed_contents(embedder, [chunk.content for chunk in chunks])
    model = embedder_model(embedder)
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
    return BuildResult(
        index=index,
        files_indexed=len(walked.files),
        files_skipped=walked.skipped,
        sensitive_skipped=walked.sensitive_skipped,
        walk_errors=walked.walk_errors,
        total_chunks=len(chunks),
        protection=protection,
        strict_redactions=strict_redactions,
        strict_skips=walked.strict_only_skipped,
    )
