"""The exact `index.json` bytes, and saving them atomically.

Why it exists: the store's bytes are a contract with the reference (docs/index-store.md):
serde_json compact output, keys in declaration order, floats printed by ryu rather than
Python's `repr`. This module owns serialisation and `save_index`; it does no walking,
chunking, embedding or loading.

A store's chunk array is most of its bytes, and each chunk's text depends on that chunk
and its embedding row only. So the build may format it per file, in its worker
processes, with `chunk_array_text` (kept in the build cache too), and hand the pieces
to `write_store` as `StoreChunks`; the writer then only joins bytes. Both routes run
the same formatting code, so the bytes are the same (docs/index-store.md#writing).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring  # the C escaper behind ensure_ascii=False

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.fileio import describe_os_error, write_atomic_parts
from cce_retrieval.jsonfloat import format_json_float
from cce_retrieval.model import Chunk, FloatMatrix, Index
from cce_retrieval.store_paths import StoreError


@functools.cache
def _zero_runs(width: int) -> tuple[list[str], npt.NDArray[np.object_]]:
    """`"0.0,"` repeated 0..width times, as a list and as an object array."""
    runs = ["0.0," * k for k in range(width + 1)]
    return runs, np.array(runs, dtype=object)


def _format_rows(
    embeddings: FloatMatrix, lengths: Sequence[int], memo: dict[int, str] | None = None
) -> list[str]:
    """`[f,f,...]` for each row, formatting every DISTINCT non-zero value once.

    A store of 50,000 chunks holds 12.8 M floats, but for the hash embedder about 90%
    of them are 0.0 and the rest take a few ten thousand distinct values. So each row
    is assembled from runs of zeros (prebuilt `"0.0,"` strings) and its non-zero cells,
    which are formatted once per distinct value and glued to their preceding zero run
    by numpy's element-wise object addition; nothing is done per zero cell in Python.
    `memo` (bit pattern -> text) carries formatted values across calls, for a caller
    that formats many small matrices whose values repeat.
    """
    rows, width = embeddings.shape
    if rows == 0 or width == 0:
        return ["[]"] * rows
    flat = np.ascontiguousarray(embeddings, dtype=np.float64).reshape(-1)
    row_lengths = np.asarray(lengths, dtype=np.int64)
    # Bit patterns, not values: -0.0 has non-zero bits and keeps its own text.
    bits = flat.view(np.uint64)
    nonzero = np.flatnonzero(bits)
    nz_rows = nonzero // width
    nz_cols = nonzero % width
    inside = nz_cols < row_lengths[nz_rows]  # ignore padding past a short row's end
    nonzero, nz_rows, nz_cols = nonzero[inside], nz_rows[inside], nz_cols[inside]
    zero_runs, zero_run_objects = _zero_runs(width)
    if nonzero.size:
        distinct_bits, inverse = np.unique(bits[nonzero], return_inverse=True)
        if memo is None:
            texts = [format_json_float(v) for v in distinct_bits.view(np.float64).tolist()]
        else:
            texts = [
                memo.get(b) or memo.setdefault(b, format_json_float(v))
                for b, v in zip(
                    distinct_bits.tolist(), distinct_bits.view(np.float64).tolist(), strict=True
                )
            ]
        distinct_text = np.array(texts, dtype=object)
        previous_end = np.zeros(nonzero.size, dtype=np.int64)
        previous_end[1:] = nz_cols[:-1] + 1
        first_in_row = np.ones(nonzero.size, dtype=bool)
        first_in_row[1:] = nz_rows[1:] != nz_rows[:-1]
        previous_end[first_in_row] = 0
        runs = zero_run_objects[nz_cols - previous_end]
        pieces: list[str] = (runs + distinct_text[inverse.reshape(-1)] + ",").tolist()
    else:
        pieces = []
    bounds = np.searchsorted(nz_rows, np.arange(rows + 1), side="left").tolist()
    starts, ends = np.asarray(bounds[:-1]), np.asarray(bounds[1:])
    last_end = np.zeros(rows, dtype=np.int64)
    has_nonzero = ends > starts
    last_end[has_nonzero] = nz_cols[ends[has_nonzero] - 1] + 1
    tails = (row_lengths - last_end).tolist()
    out: list[str] = []
    for i, length in enumerate(row_lengths.tolist()):
        if length == 0:
            out.append("[]")
            continue
        body = "".join(pieces[bounds[i] : bounds[i + 1]]) + zero_runs[tails[i]]
        out.append("[" + body[:-1] + "]")
    return out


def embedding_lengths(index: Index) -> list[int]:
    rows, width = index.embeddings.shape if index.embeddings.ndim == 2 else (0, 0)
    if index.embedding_lengths is not None:
        return list(index.embedding_lengths)
    return [width if i < rows else 0 for i in range(len(index.chunks))]


def _chunk_json(chunk: Chunk, embedding: str, escaped: dict[str, str] | None = None) -> str:
    """One chunk's store object; `escaped` memoises the JSON strings of the fields that
    repeat from chunk to chunk (path, type, kind, language)."""
    memo = {} if escaped is None else escaped

    def repeated(value: str) -> str:
        text = memo.get(value)
        if text is None:
            text = memo[value] = encode_basestring(value)
        return text

    # One f-string builds the object in a single allocation (a `+` chain copies the
    # growing text once per field, and the embedding text is most of it).
    return (
        f'{{"chunk_id":{encode_basestring(chunk.chunk_id)}'
        f',"file_path":{repeated(chunk.file_path)}'
        f',"start_line":{chunk.start_line}'
        f',"end_line":{chunk.end_line}'
        f',"chunk_type":{repeated(chunk.chunk_type)}'
        f',"kind":{repeated(chunk.kind)}'
        f',"language":{repeated(chunk.language)}'
        f',"content":{encode_basestring(chunk.content)}'
        f',"token_count":{chunk.token_count}'
        f',"embedding":{embedding}}}'
    )


def _sorted_object(mapping: Mapping[str, object]) -> str:
    parts = []
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, list):
            rendered = "[" + ",".join(encode_basestring(m) for m in value) + "]"
        else:
            rendered = str(value)
        parts.append(encode_basestring(key) + ":" + rendered)
    return "{" + ",".join(parts) + "}"


@attrs.frozen(slots=True, eq=False)
class StoreChunks:
    """The text of a store's chunk array made ahead: `pieces` are the UTF-8 bytes of
    consecutive runs of chunk objects (one run per file, comma-joined inside, empty for
    a file without chunks), `count` how many chunks they hold together."""

    pieces: Sequence[bytes]
    count: int


def _chunk_array(
    chunks: Sequence[Chunk],
    embeddings: FloatMatrix,
    lengths: Sequence[int],
    memo: dict[int, str] | None = None,
) -> str:
    """The comma-joined store objects of `chunks` (row i of `embeddings`, cut to
    `lengths[i]`, is chunk i's embedding)."""
    if not chunks:
        return ""
    rows = _format_rows(embeddings[: len(chunks)], lengths[: len(chunks)], memo)
    escaped: dict[str, str] = {}
    return ",".join(
        [_chunk_json(chunk, row, escaped) for chunk, row in zip(chunks, rows, strict=True)]
    )


def chunk_array_text(
    chunks: Sequence[Chunk],
    embeddings: FloatMatrix,
    lengths: Sequence[int],
    memo: dict[int, str] | None = None,
) -> bytes:
    """`_chunk_array` as UTF-8 bytes: one piece of `StoreChunks`."""
    return _chunk_array(chunks, embeddings, lengths, memo).encode("utf-8")


_ROWS_PER_BLOCK = 2048
"""Chunks formatted per block when streaming: bounds the text held at once."""


def _store_head(index: Index) -> str:
    # The embedding space is recorded only for embedders with models, so a hash store's
    # bytes stay exactly the reference's (which ignores unknown keys when loading).
    space = ""
    if index.embedder_model is not None:
        space = ',"embedder_model":' + encode_basestring(index.embedder_model)
        if index.embedding_dim is not None:
            space += ',"embedding_dim":' + str(index.embedding_dim)
    return (
        '{"spec_version":' + encode_basestring(index.spec_version)
        + ',"embedder":' + encode_basestring(index.embedder)
        + space
        + ',"chunks":['
    )  # fmt: skip


def _store_tail(index: Index) -> str:
    return (
        '],"file_imports":' + _sorted_object(index.file_imports)
        + ',"file_tokens":' + _sorted_object(index.file_tokens) + "}"
    )  # fmt: skip


def _iter_store_pieces(index: Index) -> Iterator[str]:
    """The store text in pieces: the header, one piece per block of chunks, the tail.

    Rows are formatted a block at a time (each row's text depends on that row only), so
    a million-chunk store never exists as one string.
    """
    lengths = embedding_lengths(index)
    rows = index.embeddings.shape[0] if index.embeddings.ndim == 2 else 0
    if rows < len(index.chunks):
        raise ValueError(f"index has {len(index.chunks)} chunks but only {rows} embedding row(s)")
    yield _store_head(index)
    chunks = index.chunks
    for first in range(0, len(chunks), _ROWS_PER_BLOCK):
        end = min(first + _ROWS_PER_BLOCK, len(chunks))
        block = _chunk_array(chunks[first:end], index.embeddings[first:end], lengths[first:end])
        yield ("," if first else "") + block
    yield _store_tail(index)


_BLOCK_BYTES = 1 << 23
"""Bytes of made chunk text joined per write."""


def _iter_store_bytes(index: Index, made: StoreChunks | None) -> Iterator[bytes]:
    """The store's bytes in pieces; the chunk array from `made` when it has one."""
    if made is None or made.count != len(index.chunks):
        for text in _iter_store_pieces(index):
            yield text.encode("utf-8")
        return
    block: list[bytes] = [_store_head(index).encode("utf-8")]
    size = 0
    first = True
    for piece in made.pieces:
        if not piece:
            continue
        if not first:
            block.append(b",")
        first = False
        block.append(piece)
        size += len(piece)
        # Few, large writes: each write and hash update is one release of the GIL.
        if size >= _BLOCK_BYTES:
            yield b"".join(block)
            block, size = [], 0
    block.append(_store_tail(index).encode("utf-8"))
    yield b"".join(block)


def serialize_index(index: Index, made: StoreChunks | None = None) -> bytes:
    """The exact `index.json` bytes of docs/index-store.md#on-disk-format: compact, no trailing
    newline. `made` is as for `write_store`."""
    return b"".join(_iter_store_bytes(index, made))


@attrs.frozen(slots=True)
class SavedStore:
    """What `write_store` wrote: the byte count and the SHA-256 hex of those bytes."""

    size: int
    sha256: str


def store_digest(index: Index, made: StoreChunks | None = None) -> SavedStore:
    """The size and SHA-256 `write_store(index, path, made)` would report, without writing."""
    digest = hashlib.sha256()
    size = 0
    for data in _iter_store_bytes(index, made):
        digest.update(data)
        size += len(data)
    return SavedStore(size, digest.hexdigest())


def write_store(index: Index, path: str, made: StoreChunks | None = None) -> SavedStore:
    """Stream the store atomically to `path`, hashing the bytes on the way. Raises StoreError.

    The digest is of exactly the bytes written, so the fingerprint needs no re-read.
    `made` is the chunk array's text made by the build (`BuildResult.store_chunks`); it
    is used only when it holds as many chunks as `index`.
    """
    digest = hashlib.sha256()
    size = 0

    def encoded() -> Iterator[bytes]:
        nonlocal size
        for data in _iter_store_bytes(index, made):
            digest.update(data)
            size += len(data)
            yield data

    try:
        write_atomic_parts(path, encoded())
    except OSError as err:
        raise StoreError("write", path, describe_os_error(err)) from err
    return SavedStore(size, digest.hexdigest())


def save_index(index: Index, path: str) -> int:
    """Write the store atomically to `path`; returns the byte count. Raises StoreError."""
    return write_store(index, path).size
