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
`StoreStream` goes one step further: it writes those pieces to the store's temporary
file while the build is still making the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring  # the C escaper behind ensure_ascii=False
from typing import cast

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.model import Chunk, FloatMatrix, Index
from cce_retrieval.parity.jsonfloat import format_json_float
from cce_retrieval.store.fileio import AtomicFile, describe_os_error, write_atomic_parts
from cce_retrieval.store.paths import StoreError


def embedding_lengths(index: Index) -> list[int]:
    rows, width = index.embeddings.shape if index.embeddings.ndim == 2 else (0, 0)
    if index.embedding_lengths is not None:
        return list(index.embedding_lengths)
    return [width if i < rows else 0 for i in range(len(index.chunks))]


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


_zero_run_texts: list[bytes] = [b""]


def _zero_runs(count: int) -> list[bytes]:
    """`b"0.0,"` repeated 0..count times (at least; grown on demand, kept for the process)."""
    while len(_zero_run_texts) <= count:
        _zero_run_texts.append(_zero_run_texts[-1] + b"0.0,")
    return _zero_run_texts


def _float_texts(bits: npt.NDArray[np.uint64], memo: dict[int, bytes] | None) -> list[bytes]:
    """The JSON text of each (distinct) float64 bit pattern in `bits`."""
    keys = bits.tolist()
    found: list[bytes | None] = [None] * len(keys) if memo is None else list(map(memo.get, keys))
    if None in found:
        values = bits.view(np.float64).tolist()
        for i, text in enumerate(found):
            if text is None:
                found[i] = made = format_json_float(values[i]).encode("ascii")
                if memo is not None:
                    memo[keys[i]] = made
    return cast(list[bytes], found)


def chunk_array_text(
    chunks: Sequence[Chunk],
    embeddings: FloatMatrix,
    lengths: Sequence[int],
    memo: dict[int, bytes] | None = None,
) -> bytes:
    """The comma-joined store objects of `chunks`, as UTF-8 (row i of `embeddings`, cut
    to `lengths[i]`, is chunk i's embedding): one piece of `StoreChunks`.

    A store of 50,000 chunks holds 12.8 M floats, but for the hash embedder about 90%
    of them are 0.0 and the rest take a few ten thousand distinct values. So the text is
    laid out as one sequence of pieces, joined once: per chunk its fields up to the
    content, the escaped content, the fields up to the embedding; then per non-zero cell
    the zeros before it (prebuilt `0.0,` runs) and its value's text (formatted once per
    distinct value; `memo`, bit pattern → text, carries them across calls); then the
    row's trailing zeros and the object's end. numpy places every piece by its position,
    so nothing is done per zero cell and no row or object text is built on its own.
    Raises UnicodeEncodeError for text that is not valid Unicode (a lone surrogate).
    """
    n = len(chunks)
    if not n:
        return b""
    matrix = embeddings[:n]
    rows, width = matrix.shape if matrix.ndim == 2 else (0, 0)
    row_lengths = np.asarray(lengths[:n], dtype=np.int64)
    if rows and width:
        # Bit patterns, not values: -0.0 has non-zero bits and keeps its own text.
        bits = np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1).view(np.uint64)
        cells = np.flatnonzero(bits)
        cell_rows, cell_cols = np.divmod(cells, width)
        inside = cell_cols < row_lengths[cell_rows]  # padding past a short row's end
        cell_bits = bits[cells[inside]]
        cell_rows, cell_cols = cell_rows[inside], cell_cols[inside]
    else:
        cell_bits = np.zeros(0, dtype=np.uint64)
        cell_rows = cell_cols = np.zeros(0, dtype=np.int64)
    count = int(cell_rows.size)
    # Chunk r's pieces start at 4r + 2 * (cells before row r): 3 field pieces, 2 per
    # cell, 1 closing piece.
    firsts = np.searchsorted(cell_rows, np.arange(n + 1), side="left")
    pieces = np.empty(4 * n + 2 * count, dtype=object)
    heads = 4 * np.arange(n, dtype=np.int64) + 2 * firsts[:-1]
    escaped: dict[str, str] = {}

    def repeated(value: str) -> str:
        text = escaped.get(value)
        if text is None:
            text = escaped[value] = encode_basestring(value)
        return text

    pieces[heads] = [
        (
            f'{{"chunk_id":{encode_basestring(c.chunk_id)}'
            f',"file_path":{escaped.get(c.file_path) or repeated(c.file_path)}'
            f',"start_line":{c.start_line}'
            f',"end_line":{c.end_line}'
            f',"chunk_type":{escaped.get(c.chunk_type) or repeated(c.chunk_type)}'
            f',"kind":{escaped.get(c.kind) or repeated(c.kind)}'
            f',"language":{escaped.get(c.language) or repeated(c.language)}'
            ',"content":'
        ).encode()
        for c in chunks
    ]
    pieces[heads + 1] = [encode_basestring(c.content).encode() for c in chunks]
    pieces[heads + 2] = [
        f',"token_count":{c.token_count},"embedding":['.encode("ascii") for c in chunks
    ]
    has_cells = firsts[1:] > firsts[:-1]
    last_end = np.zeros(n, dtype=np.int64)
    if count:
        distinct, inverse = np.unique(cell_bits, return_inverse=True)
        texts = np.array(_float_texts(distinct, memo), dtype=object)
        first_in_row = np.ones(count, dtype=bool)
        first_in_row[1:] = cell_rows[1:] != cell_rows[:-1]
        previous_end = np.zeros(count, dtype=np.int64)
        previous_end[1:] = cell_cols[:-1] + 1
        gaps = cell_cols - np.where(first_in_row, 0, previous_end)
        widest = int(gaps.max())
        zeros = _zero_runs(widest)[: widest + 1]
        # Before a row's first cell: its zeros; after a cell: the comma, then the zeros.
        separators = np.array(zeros + [b"," + run for run in zeros], dtype=object)
        at = 4 * cell_rows + 2 * np.arange(count, dtype=np.int64) + 3
        pieces[at] = separators[gaps + np.where(first_in_row, 0, widest + 1)]
        pieces[at + 1] = texts[inverse.reshape(-1)]
        last_end[has_cells] = cell_cols[firsts[1:][has_cells] - 1] + 1
    tails = row_lengths - last_end
    widest = int(tails.max())
    zeros = _zero_runs(widest)[1 : widest + 1]
    # A row's end: after a cell, a comma and its trailing zeros; else only zeros (none
    # for an empty row). The last zero's comma is dropped.
    after_cell = [b"]}", *(b"," + run[:-1] + b"]}" for run in zeros)]
    zeros_only = [b"]}", *(run[:-1] + b"]}" for run in zeros)]
    closings = np.array([*after_cell, *zeros_only], dtype=object)
    ends = closings[tails + np.where(has_cells, 0, widest + 1)]
    ends[:-1] = ends[:-1] + b","  # objects are comma-separated
    pieces[4 * np.arange(n, dtype=np.int64) + 2 * firsts[1:] + 3] = ends
    return b"".join(pieces.tolist())


_ROWS_PER_BLOCK = 2048
"""Chunks formatted per block when streaming: bounds the text held at once."""


def _store_head(index: Index) -> str:
    return store_head_text(
        index.spec_version, index.embedder, index.embedder_model, index.embedding_dim
    )


def store_head_text(
    spec_version: str, embedder: str, embedder_model: str | None, embedding_dim: int | None
) -> str:
    """The store's bytes before its first chunk object (`_store_head` of such an index)."""
    # The embedding space is recorded only for embedders with models, so a hash store's
    # bytes stay exactly the reference's (which ignores unknown keys when loading).
    space = ""
    if embedder_model is not None:
        space = ',"embedder_model":' + encode_basestring(embedder_model)
        if embedding_dim is not None:
            space += ',"embedding_dim":' + str(embedding_dim)
    return (
        '{"spec_version":' + encode_basestring(spec_version)
        + ',"embedder":' + encode_basestring(embedder)
        + space
        + ',"chunks":['
    )  # fmt: skip


def _store_tail(index: Index) -> str:
    return (
        '],"file_imports":' + _sorted_object(index.file_imports)
        + ',"file_tokens":' + _sorted_object(index.file_tokens) + "}"
    )  # fmt: skip


def _iter_store_pieces(index: Index) -> Iterator[bytes]:
    """The store's bytes in pieces: the header, one piece per block of chunks, the tail.

    Rows are formatted a block at a time (each row's text depends on that row only), so
    a million-chunk store never exists as one string.
    """
    lengths = embedding_lengths(index)
    rows = index.embeddings.shape[0] if index.embeddings.ndim == 2 else 0
    if rows < len(index.chunks):
        raise ValueError(f"index has {len(index.chunks)} chunks but only {rows} embedding row(s)")
    yield _store_head(index).encode("utf-8")
    chunks = index.chunks
    for first in range(0, len(chunks), _ROWS_PER_BLOCK):
        end = min(first + _ROWS_PER_BLOCK, len(chunks))
        block = chunk_array_text(chunks[first:end], index.embeddings[first:end], lengths[first:end])
        yield (b"," if first else b"") + block
    yield _store_tail(index).encode("utf-8")


_BLOCK_BYTES = 1 << 23
"""Bytes of made chunk text joined per write."""


def _iter_store_bytes(index: Index, made: StoreChunks | None) -> Iterator[bytes]:
    """The store's bytes in pieces; the chunk array from `made` when it has one."""
    if made is None or made.count != len(index.chunks):
        yield from _iter_store_pieces(index)
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


class StoreStream:
    """A store written while its build is still making it (docs/index-store.md#writing).

    A build that makes each file's chunk text in walk order (`StoreChunks`) hands the
    pieces over as they are complete (`add`), and they go straight to the store's
    temporary file, hashed on the way: the store is mostly on disk when the build
    ends, instead of being all of the build's last step. `close_array` adds the tail
    (which needs the whole index) and gives the size and digest; then `commit` renames
    it into place, or `discard` leaves the path as it was.

    Any OS error makes the stream `failed` (the temporary file removed); the caller
    then writes the store as `write_store` does, which fails (or not) the usual way.
    The same bytes as `write_store(index, path, made)` by construction: the same head,
    the same comma-joined pieces and the same tail, checked again when closing.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: AtomicFile | None = None
        self._head = b""
        self._digest = hashlib.sha256()
        self._wrote_object = False
        self._closed: SavedStore | None = None
        self.failed = False
        self.pieces = 0
        """How many pieces were written (the next piece's position)."""

    def begin(self, head: str) -> bool:
        """Open the temporary file and write the store's `head` (`store_head_text`);
        False (the stream failed) if it cannot be."""
        if self._file is not None or self.failed:
            raise ValueError("the store stream has begun already")
        self._head = head.encode("utf-8")
        try:
            self._file = AtomicFile(self.path)
        except OSError:
            self.failed = True
            return False
        return self._write((self._head,))

    def add(self, piece: bytes) -> bool:
        """Append the next file's chunk objects (one `StoreChunks` piece, maybe empty);
        False, and the stream failed, if they could not be written."""
        if self._file is None or self._closed is not None:
            raise ValueError("the store stream is not open for pieces")
        if piece:
            if not self._write((b",", piece) if self._wrote_object else (piece,)):
                return False
            self._wrote_object = True
        self.pieces += 1
        return True

    def close_array(self, index: Index) -> SavedStore | None:
        """Write the tail of `index`; the size and SHA-256 of the whole store, or None
        (the stream failed) when it cannot be written or `index` has another head."""
        if self._file is None or self.failed:
            return None
        if self._closed is None:
            if _store_head(index).encode("utf-8") != self._head:
                self.failed = True
                self.discard()
                return None
            if not self._write((_store_tail(index).encode("utf-8"),)):
                return None
            self._closed = SavedStore(self._file.size, self._digest.hexdigest())
        return self._closed

    def commit(self) -> SavedStore:
        """fsync and rename the closed store into place. Raises StoreError (the path
        then keeps what it held)."""
        if self._file is None or self._closed is None:
            raise ValueError("only a closed store stream can be committed")
        replacement, self._file = self._file, None
        try:
            replacement.commit()
        except OSError as err:
            raise StoreError("write", self.path, describe_os_error(err)) from err
        return self._closed

    def discard(self) -> None:
        """Remove the temporary file, if any; the path keeps what it held."""
        replacement, self._file = self._file, None
        if replacement is not None:
            replacement.discard()

    def _write(self, parts: Sequence[bytes]) -> bool:
        assert self._file is not None
        try:
            self._file.write(parts)
        except OSError:
            self.failed = True
            self.discard()
            return False
        for part in parts:
            self._digest.update(part)
        return True


def save_index(index: Index, path: str) -> int:
    """Write the store atomically to `path`; returns the byte count. Raises StoreError."""
    return write_store(index, path).size
