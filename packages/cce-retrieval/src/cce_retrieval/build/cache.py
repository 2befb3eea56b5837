"""The incremental build cache: one verified entry per (file content, build settings).

Why it exists: redacting, chunking and embedding a file is a pure function of its
relative path, its text and the settings that shape chunks (engine version, language
packs, protection mode, embedder and model). Rebuilding a large corpus after a small
edit should redo only the edited files, so each file's outcome is kept here under a
SHA-256 key of exactly those inputs; a hit is bit-for-bit what the build would compute.

Owns: the key (`CacheSalt`, `BuildCache.key`), the entry format and its verification,
atomic writes, and the size bound (least recently used entries go first); beside the
file entries, two per whole build: its BM25 statistics and the record of the store it
made (`StoreRecord`). See docs/index-store.md#build-cache.

Safety: an entry is written to a unique temp file in its final directory and renamed
into place, so a reader sees a whole entry or none; every entry also carries the
SHA-256 of its payload and its own key, so a truncated, damaged or misplaced file is
a miss, never trusted. Concurrent runs write identical bytes for a key; whichever
rename wins, the entry is the same. Any OS error reading or writing the cache turns
into a miss or a skipped write: the cache can make a build faster, never fail it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import itertools
import json
import operator
import os
import struct
import time
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from cce_metrics import TOKENIZER_ID
from cce_retrieval.model import Chunk, FloatMatrix
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.order import IntArray

CACHE_FORMAT: Final = "cce.build-cache/v4"
DEFAULT_MAX_BYTES: Final = 1 << 30
"""Default bound on the cache's total size (1 GiB)."""

_MAGIC: Final = b"CCEBC004"
_BM25_MAGIC: Final = b"CCEBM001"
"""A whole build's BM25 statistics (`BuildCache.put_bm25`), in the entry layout."""
_RECORD_MAGIC: Final = b"CCESR001"
"""What store a whole build made (`BuildCache.put_store_record`), in the entry layout."""
# magic, key, SHA-256 and length of the json part, SHA-256 and length of the store text
# part; the array part is what lies between them.
_HEADER: Final = struct.Struct("<8s32s32sQ32sQ")
_MAX_RECORD_BYTES: Final = 1 << 12
"""A store record is a few hundred bytes; a larger file there is not one."""
_temp_sequence = itertools.count()
_Scalar = TypeVar("_Scalar", bound=np.generic)
_Found = TypeVar("_Found")
_made_dirs: set[str] = set()
"""Shard directories this process has made or found, so a write does not ask again."""


@attrs.frozen(slots=True)
class FileOutcome:
    """What the build derives from one file: chunks, imports, token estimate, vectors.

    `embeddings` has one row per chunk (zero-padded to the widest), `lengths` the true
    length of each row; None when the embedding was not computed here (a non-hash
    embedder embeds after chunking, across files).
    """

    chunks: tuple[Chunk, ...]
    imports: tuple[str, ...]
    file_tokens: int
    embeddings: FloatMatrix | None = None
    lengths: tuple[int, ...] | None = None
    terms: TermCounts | None = None
    strict_redactions: int = 0
    """What strict protection added (strict) or would add (reference) to this file."""
    store_text: bytes | None = None
    """This file's run of chunk objects in `index.json` (`store_write.chunk_array_text`),
    made beside the embeddings so the store writer only joins bytes."""


@attrs.frozen(slots=True, eq=False)
class TermCounts:
    """Each chunk's distinct tokens and counts (BM25's input), against a file-local vocabulary.

    Chunk c owns `distinct[c]` consecutive entries; entry e is token `vocabulary[entry_terms[e]]`
    occurring `entry_counts[e]` times; `lengths[c]` is chunk c's token count.
    """

    vocabulary: tuple[str, ...]
    entry_terms: IntArray
    entry_counts: IntArray
    distinct: IntArray
    lengths: IntArray


@attrs.frozen(slots=True, eq=False)
class SparseRows:
    """Embedding rows as their non-zero cells: `where` holds row-major flat positions in
    a `rows` x `width` matrix, `values` the cells. Hash vectors are ~90% zeros, so this
    is how they travel from workers and out of cache entries."""

    rows: int
    width: int
    where: npt.NDArray[np.uint32]
    values: npt.NDArray[np.float64]

    @classmethod
    def of(cls, matrix: FloatMatrix) -> SparseRows:
        """The non-zero cells of a 2-D `matrix`, by bit pattern (a -0.0 is kept)."""
        flat = np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1)
        where = np.flatnonzero(flat.view(np.uint64)).astype(np.uint32)
        return cls(matrix.shape[0], matrix.shape[1], where, flat[where])

    def dense(self) -> FloatMatrix:
        flat = np.zeros(self.rows * self.width, dtype=np.float64)
        flat[self.where] = self.values
        return flat.reshape(self.rows, self.width)


@attrs.frozen(slots=True)
class CacheSalt:
    """Everything besides a file's path and text that changes what the build makes of it.

    `code` is a digest of this package's own source and the grammar versions, so an
    upgraded (or locally edited) chunker never reuses entries made by another one.
    """

    engine_version: str
    pack_set: str
    tokenizer: str
    protect: bool
    embedder: str
    model: str
    code: str = ""
    protection: str = "reference"
    """The `--protection` mode: a strict build never reuses a reference build's entries."""

    @classmethod
    def for_build(cls, protect: bool, embedder: object, protection: str = "reference") -> CacheSalt:
        """The salt of a build with `protect`, `embedder` (its `name` and any `model`) and
        the protection mode."""
        from cce_retrieval.chunk.packs import PACK_SET
        from cce_retrieval.store.fingerprint import (
            BLOCK_NESTING_LIMIT,
            ENGINE_VERSION,
            MARKDOWN_SECTION_TOKENS,
        )

        return cls(
            engine_version=f"{ENGINE_VERSION}/{BLOCK_NESTING_LIMIT}/{MARKDOWN_SECTION_TOKENS}",
            pack_set=PACK_SET,
            tokenizer=TOKENIZER_ID,
            protect=protect,
            embedder=str(getattr(embedder, "name", "")),
            model=str(getattr(embedder, "model", "")),
            code=code_digest(),
            protection=protection,
        )

    def digest(self) -> bytes:
        text = json.dumps([CACHE_FORMAT, *attrs.astuple(self)], separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).digest()


_GRAMMARS: Final = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-javascript",
    "tree-sitter-ruby",
    "tree-sitter-rust",
    "tree-sitter-typescript",
    "tree-sitter-c",
)


# The `cce_retrieval` package directory: every source below it can change what a build makes.
PACKAGE_DIR: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def code_digest() -> str:
    """SHA-256 over the package's `.py` sources, in every subpackage, and the installed
    grammar versions."""
    digest = hashlib.sha256()
    for relative, content in package_sources(PACKAGE_DIR):
        digest.update(relative.encode() + b"\0" + content + b"\0")
    for distribution in _GRAMMARS:
        digest.update(f"{distribution}={_installed_version(distribution)}\0".encode())
    return digest.hexdigest()


def package_sources(package_dir: str) -> list[tuple[str, bytes]]:
    """Every `.py` file under `package_dir`, recursively: its `/`-separated path relative
    to `package_dir` and its bytes, sorted by path so the order never depends on the disk."""
    found: list[tuple[str, bytes]] = []
    for directory, subdirectories, files in os.walk(package_dir):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, package_dir).replace(os.sep, "/")
                with open(path, "rb") as handle:
                    found.append((relative, handle.read()))
    return sorted(found)


def _installed_version(distribution: str) -> str:
    """`distribution`'s installed version ("?" if it is not installed).

    Read from the name of its wheel's `.dist-info` directory beside its package: one
    directory listing, where `importlib.metadata` (then the fallback) takes about a
    tenth of a second to import and search, on every build's start.
    """
    name = distribution.replace("-", "_")
    try:
        origin = getattr(importlib.util.find_spec(name), "origin", None)
    except (ImportError, ValueError):
        origin = None
    if isinstance(origin, str):
        site = os.path.dirname(os.path.dirname(origin))
        prefix, suffix = name.lower() + "-", ".dist-info"
        with contextlib.suppress(OSError):
            found = [
                entry[len(prefix) : -len(suffix)]
                for entry in os.listdir(site)
                if entry.lower().startswith(prefix) and entry.endswith(suffix)
            ]
            if len(found) == 1 and found[0]:
                return found[0]
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "?"


def _words(values: Sequence[str]) -> str | None:
    """`values` space-joined when `str.split` gives exactly them back (none is empty or
    holds whitespace: chunk ids and tokens never do), else None."""
    joined = " ".join(values)
    return joined if joined.split() == list(values) else None


def _lengths_and_text(values: Sequence[str]) -> tuple[bytes, str]:
    lengths = np.fromiter(map(len, values), dtype=np.uint32, count=len(values))
    return lengths.tobytes(), "".join(values)


def _encode(outcome: FileOutcome) -> tuple[bytes, bytes]:
    """(json part, array part) of an outcome with embeddings.

    The json part holds only counts. The array part, in order: the sparse embedding
    cells (uint32 positions, uint64 bit patterns); the term counts and each chunk's
    line numbers and token count (uint32); the embedding row lengths (int64); codes
    (uint32) of each chunk's path, type, kind and language into a table of their
    distinct values; the character lengths (uint32) of the strings kept whole (chunk
    contents, imports, the table, and the ids and vocabulary unless they are words);
    then the UTF-8 text: those strings, the space-joined ids, the space-joined
    vocabulary. Decoding is one UTF-8 decode, slicing and `str.split`: no escaping
    either way, and chunk contents (most of an entry) are copied, never parsed.
    """
    assert outcome.embeddings is not None and outcome.lengths is not None
    assert outcome.terms is not None
    terms = outcome.terms
    chunks = outcome.chunks
    matrix = np.ascontiguousarray(outcome.embeddings, dtype=np.float64)
    rows, width = matrix.shape if matrix.ndim == 2 else (0, 0)
    flat_bits = matrix.reshape(-1).view(np.uint64)
    # Sparse by bit pattern (not value), so -0.0 survives; hash vectors are ~90% zeros.
    where = np.flatnonzero(flat_bits).astype(np.uint32)
    labels = [
        *(c.file_path for c in chunks),
        *(c.chunk_type for c in chunks),
        *(c.kind for c in chunks),
        *(c.language for c in chunks),
    ]
    table = list(dict.fromkeys(labels))
    code_of = {label: code for code, label in enumerate(table)}
    codes = np.fromiter(map(code_of.__getitem__, labels), dtype=np.uint32, count=len(labels))
    ids = [c.chunk_id for c in chunks]
    id_words, vocabulary_words = _words(ids), _words(terms.vocabulary)
    whole = [
        *(c.content for c in chunks),
        *outcome.imports,
        *table,
        *(ids if id_words is None else ()),
        *(terms.vocabulary if vocabulary_words is None else ()),
    ]
    lengths, whole_text = _lengths_and_text(whole)
    blob = (whole_text + (id_words or "") + (vocabulary_words or "")).encode(
        "utf-8", "surrogatepass"
    )
    meta = {
        "rows": rows,
        "width": width,
        "nonzero": int(where.size),
        "entries": len(terms.entry_terms),
        "imports": len(outcome.imports),
        "table": len(table),
        "vocabulary": len(terms.vocabulary),
        "id_words": None if id_words is None else len(id_words),
        "vocabulary_words": None if vocabulary_words is None else len(vocabulary_words),
        "blob": len(blob),
        "file_tokens": outcome.file_tokens,
        "strict_redactions": outcome.strict_redactions,
        "store_text": outcome.store_text is not None,
    }
    numbers = np.array(
        [[c.start_line, c.end_line, c.token_count] for c in chunks], dtype=np.uint32
    ).reshape(-1, 3)
    arrays = b"".join(
        (
            where.tobytes(),
            flat_bits[where].tobytes(),
            *(
                np.asarray(a, dtype=np.uint32).tobytes()
                for a in (terms.entry_terms, terms.entry_counts, terms.distinct, terms.lengths)
            ),
            numbers.T.tobytes(),
            np.asarray(outcome.lengths, dtype=np.int64).tobytes(),
            codes.tobytes(),
            lengths,
            blob,
        )
    )
    return json.dumps(meta, separators=(",", ":")).encode("utf-8"), arrays


class _ArrayReader:
    """Consecutive typed arrays and then bytes, read front to back out of an entry's
    array part without copying (the caller has checked the part's total size)."""

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = data
        self._at = 0

    def take(self, n: int, dtype: type[_Scalar]) -> npt.NDArray[_Scalar]:
        part: npt.NDArray[_Scalar] = np.frombuffer(
            self._data, dtype=dtype, count=n, offset=self._at
        )
        self._at += part.nbytes
        return part

    def take_bytes(self, n: int) -> bytes:
        part = bytes(self._data[self._at : self._at + n])
        self._at += n
        return part


def _count(meta: dict[str, object], name: str) -> int:
    value = meta[name]
    if type(value) is not int or value < 0:
        raise ValueError(f"bad count {name!r}")
    return value


def _decode(
    meta_bytes: bytes, arrays: bytes | memoryview, store_text: bytes | None
) -> tuple[FileOutcome, SparseRows]:
    """The entry's outcome, without embeddings, and its embedding cells."""
    meta = json.loads(meta_bytes)
    rows, width, count = _count(meta, "rows"), _count(meta, "width"), _count(meta, "nonzero")
    entries, blob_size = _count(meta, "entries"), _count(meta, "blob")
    imports, table_size = _count(meta, "imports"), _count(meta, "table")
    vocabulary_size = _count(meta, "vocabulary")
    id_chars, vocabulary_chars = (
        None if meta[name] is None else _count(meta, name)
        for name in ("id_words", "vocabulary_words")
    )
    whole_count = rows + imports + table_size
    whole_count += rows if id_chars is None else 0
    whole_count += vocabulary_size if vocabulary_chars is None else 0
    fixed = count * 12 + entries * 8 + rows * (8 + 12 + 8 + 16)
    if len(arrays) != fixed + whole_count * 4 + blob_size:
        raise ValueError("array part has the wrong size")
    reader = _ArrayReader(arrays)
    where = reader.take(count, np.uint32)
    values = reader.take(count, np.uint64)
    entry_terms, entry_counts, distinct, token_lengths = (
        reader.take(n, np.uint32).astype(np.int64) for n in (entries, entries, rows, rows)
    )
    starts, ends, token_counts = (reader.take(rows, np.uint32).tolist() for _ in range(3))
    lengths = tuple(reader.take(rows, np.int64).tolist())
    codes = reader.take(rows * 4, np.uint32).tolist()
    bounds = np.zeros(whole_count + 1, dtype=np.int64)
    np.cumsum(reader.take(whole_count, np.uint32), out=bounds[1:])
    text = reader.take_bytes(blob_size).decode("utf-8", "surrogatepass")
    whole_chars = int(bounds[-1])
    strings = [text[a:b] for a, b in itertools.pairwise(bounds.tolist())]
    contents = strings[:rows]
    import_names = tuple(strings[rows : rows + imports])
    table = strings[rows + imports : rows + imports + table_size]
    rest = strings[rows + imports + table_size :]
    if id_chars is None:
        ids, rest = rest[:rows], rest[rows:]
    else:
        ids = text[whole_chars : whole_chars + id_chars].split()
        whole_chars += id_chars
    if vocabulary_chars is None:
        vocabulary = tuple(rest)
    else:
        vocabulary = tuple(text[whole_chars : whole_chars + vocabulary_chars].split())
        whole_chars += vocabulary_chars
    if whole_chars != len(text) or len(ids) != rows or len(vocabulary) != vocabulary_size:
        raise ValueError("string lengths disagree")
    if codes and max(codes) >= table_size:
        raise ValueError("label code outside the table")
    labels = list(map(table.__getitem__, codes))
    paths, chunk_types = labels[:rows], labels[rows : 2 * rows]
    kinds, languages = labels[2 * rows : 3 * rows], labels[3 * rows :]
    terms = TermCounts(vocabulary, entry_terms, entry_counts, distinct, token_lengths)
    if int(terms.distinct.sum()) != entries or (
        entries and int(terms.entry_terms.max()) >= len(terms.vocabulary)
    ):
        raise ValueError("term counts disagree")
    if count and int(where.max()) >= rows * width:
        raise ValueError("embedding cells outside the matrix")
    cells = SparseRows(rows, width, where, values.view(np.float64))
    chunks = tuple(
        map(Chunk, ids, paths, starts, ends, chunk_types, kinds, languages, contents, token_counts)
    )
    outcome = FileOutcome(
        chunks=chunks,
        imports=import_names,
        file_tokens=_count(meta, "file_tokens"),
        lengths=lengths,
        terms=terms,
        strict_redactions=_count(meta, "strict_redactions"),
        store_text=store_text if meta["store_text"] is True else None,
    )
    return outcome, cells


def _whole_build_payload(magic: bytes, key: bytes, data: bytes) -> tuple[memoryview, int] | None:
    """The payload of a whole-build entry (`_BM25_MAGIC`, `_RECORD_MAGIC`) and the length
    of its json part, when the header names this kind and key, there is no store text
    part, and the payload's digest matches; else None. Raises struct.error for data
    shorter than a header."""
    found_magic, stored_key, payload_sha, meta_length, _, text_length = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size :]
    if found_magic != magic or stored_key != key or text_length != 0:
        return None
    if hashlib.sha256(body).digest() != payload_sha:
        return None
    return body, meta_length


def _decode_bm25(key: bytes, data: bytes, n_docs: int) -> tuple[Bm25Index, IntArray] | None:
    payload = _whole_build_payload(_BM25_MAGIC, key, data)
    if payload is None:
        return None
    body, meta_length = payload
    meta = json.loads(bytes(body[:meta_length]))
    terms, postings = _count(meta, "terms"), _count(meta, "postings")
    docs, word_bytes = _count(meta, "docs"), _count(meta, "words")
    avgdl = meta["avgdl"]
    arrays = body[meta_length:]
    if docs != n_docs or type(avgdl) is not float:
        return None
    if len(arrays) != (terms + 1) * 8 + postings * 16 + docs * 16 + word_bytes:
        return None
    reader = _ArrayReader(arrays)
    offsets = reader.take(terms + 1, np.int64)
    posting_docs = reader.take(postings, np.int64)
    freqs = reader.take(postings, np.float64)
    doc_lengths = reader.take(docs, np.float64)
    id_ranks = reader.take(docs, np.int64)
    words = reader.take_bytes(word_bytes).decode("ascii").split()
    if (
        len(words) != terms
        or int(offsets[0]) != 0
        or int(offsets[-1]) != postings
        or bool(np.any(np.diff(offsets) < 0))
        or (postings and (int(posting_docs.min()) < 0 or int(posting_docs.max()) >= docs))
    ):
        return None
    term_ids = {term: i for i, term in enumerate(words)}
    if len(term_ids) != terms:
        return None
    bm25 = Bm25Index(term_ids, offsets, posting_docs, freqs, doc_lengths, avgdl, id_ranks)
    return bm25, id_ranks


@attrs.frozen(slots=True)
class StoreRecord:
    """The store a build of one exact set of files made, and the counts it printed.

    Kept under the files' corpus key (`BuildCache.corpus_key`) once the store is on
    disk, so that a later `cce index` of the same files can recognise that store there
    (by its digest) without reading a single file entry.
    """

    sha256: str
    size: int
    total_chunks: int
    strict_redactions: int
    embedder: str
    embed_dim: int


_RECORD_FIELDS: Final = {
    field.name: field.type for field in attrs.fields(attrs.resolve_types(StoreRecord))
}
"""Each field of a store record and its type (`str` or `int`), as a record file must have them."""


def _decode_record(key: bytes, data: bytes) -> StoreRecord | None:
    """The record in an entry file's bytes, or None unless every check holds: header,
    key, payload digest and length, exactly the record's fields with their types, no
    negative count, a SHA-256 in lowercase hex and a named embedder. Raises ValueError
    or RecursionError for a payload that is not JSON, struct.error for data shorter
    than a header (the caller's misses)."""
    payload = _whole_build_payload(_RECORD_MAGIC, key, data)
    if payload is None or payload[1] != len(payload[0]):
        return None
    fields = json.loads(bytes(payload[0]))
    if not isinstance(fields, dict) or set(fields) != set(_RECORD_FIELDS):
        return None
    if any(type(fields[name]) is not kind for name, kind in _RECORD_FIELDS.items()):
        return None
    record = StoreRecord(**fields)
    counts = (record.size, record.total_chunks, record.strict_redactions, record.embed_dim)
    if min(counts) < 0 or not record.embedder:
        return None
    if len(record.sha256) != 64 or not all(c in "0123456789abcdef" for c in record.sha256):
        return None
    return record


@attrs.frozen(slots=True)
class EntryText:
    """The store text inside an entry file: `length` bytes from `offset` of `path`."""

    path: str
    offset: int
    length: int

    def read(self) -> bytes | None:
        """The text, or None when the file is gone or no longer holds it there.

        For the process that wrote the entry moments ago (a build reading back what its
        worker wrote, rather than receiving it through a pipe): an entry file is only
        ever replaced whole, by a rename, and a key's entry always holds the same bytes,
        so the text needs no digest check, only the file's size.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size != self.offset + self.length:
                return None
            pieces: list[bytes] = []
            at, left = self.offset, self.length
            while left:
                piece = os.pread(fd, left, at)
                if not piece:
                    return None
                pieces.append(piece)
                at += len(piece)
                left -= len(piece)
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
        except OSError:
            return None
        finally:
            os.close(fd)


@attrs.frozen(slots=True, eq=False)
class EncodedOutcome:
    """A file's outcome in its cache entry's encoding, as `BuildCache.put` made it.

    A build worker that has just written an entry sends the outcome back in this form:
    three byte strings pickle in no time, where the outcome's chunks and term counts
    would be pickled object by object, and `decode` is the reader's own decoding.
    """

    meta: bytes
    arrays: bytes
    store_text: bytes | None
    text_in_entry: EntryText | None = None
    """Where `put` wrote the store text, when it wrote the entry."""

    def decode(self) -> tuple[FileOutcome, SparseRows]:
        """The outcome (its embeddings as cells beside it), as a cache hit gives it."""
        return _decode(self.meta, self.arrays, self.store_text)


def _header(
    magic: bytes, key: bytes, meta: bytes, arrays: bytes | Sequence[memoryview], text: bytes = b""
) -> bytes:
    """The `_HEADER` of an entry file holding `meta`, `arrays` (one part, or consecutive
    parts) and then `text`."""
    digest = hashlib.sha256(meta)
    for part in [arrays] if isinstance(arrays, bytes) else arrays:
        digest.update(part)
    return _HEADER.pack(
        magic, key, digest.digest(), len(meta), hashlib.sha256(text).digest(), len(text)
    )


def _settle(path: str, trusted: bool) -> None:
    """After reading the file at `path`: a trusted one is marked recently used (evicted
    last), an untrusted one is deleted (never read again)."""
    with contextlib.suppress(OSError):
        if trusted:
            os.utime(path)
        else:
            os.unlink(path)


class BuildCache:
    """A directory of entries `<dir>/<key[:2]>/<key>.entry`, bounded to `max_bytes`."""

    def __init__(self, directory: str, salt: CacheSalt, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = directory
        self.max_bytes = max_bytes
        self._salt = salt.digest()
        self.hits = 0
        self.misses = 0
        self.writes = 0

    def key(self, rel_path: str, text: str) -> bytes:
        digest = hashlib.sha256(self._salt)
        encoded_path = rel_path.encode("utf-8", "surrogatepass")
        digest.update(struct.pack("<Q", len(encoded_path)))
        digest.update(encoded_path)
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def _path(self, key: bytes) -> str:
        hex_key = key.hex()
        return os.path.join(self.directory, hex_key[:2], hex_key + ".entry")

    def has(self, key: bytes) -> bool:
        """Whether an entry file for `key` exists (it may still be a miss when read); a
        key without one counts as a miss."""
        if os.path.exists(self._path(key)):
            return True
        self.misses += 1
        return False

    def get(self, key: bytes, store_text: bool = True) -> FileOutcome | None:
        """The verified entry for `key`, or None (missing, partial, damaged: all misses).

        Without `store_text` the entry's store text is neither read nor verified (and the
        outcome has none): a build that writes no store skips most of the entry's bytes.
        """
        found = self.get_sparse(key, store_text)
        if found is None:
            return None
        outcome, cells = found
        return attrs.evolve(outcome, embeddings=cells.dense())

    def get_sparse(
        self, key: bytes, store_text: bool = True
    ) -> tuple[FileOutcome, SparseRows] | None:
        """`get`, with the embedding rows as their non-zero cells beside an outcome that
        has none (for a caller that scatters them into a larger matrix)."""
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                header = handle.read(_HEADER.size)
                size = os.fstat(handle.fileno()).st_size
                text_length = _HEADER.unpack(header)[5] if len(header) == _HEADER.size else 0
                body = handle.read(-1 if store_text else max(0, size - _HEADER.size - text_length))
        except OSError:
            self.misses += 1
            return None
        found = self._verify(key, header, body, store_text)
        _settle(path, found is not None)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    @staticmethod
    def _verify(
        key: bytes, header: bytes, body: bytes, with_text: bool
    ) -> tuple[FileOutcome, SparseRows] | None:
        """The outcome in `body` (what follows `header`), or None if anything disagrees;
        `body` ends with the store text part exactly when `with_text`."""
        if len(header) != _HEADER.size:
            return None
        magic, stored_key, payload_sha, meta_length, text_sha, text_length = _HEADER.unpack(header)
        if magic != _MAGIC or stored_key != key:
            return None
        view = memoryview(body)
        payload_length = len(view) - (text_length if with_text else 0)
        if meta_length > payload_length or payload_length < 0:
            return None
        payload = view[:payload_length]
        if hashlib.sha256(payload).digest() != payload_sha:
            return None
        store_text = None
        if with_text:
            text = view[payload_length:]
            if hashlib.sha256(text).digest() != text_sha:
                return None
            store_text = bytes(text)
        try:
            return _decode(bytes(payload[:meta_length]), payload[meta_length:], store_text)
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: bytes, outcome: FileOutcome) -> EncodedOutcome:
        """Write the entry atomically; any OS error just skips it. Returns the outcome in
        the entry's encoding, written or not."""
        meta, arrays = _encode(outcome)
        text = outcome.store_text or b""
        header = _header(_MAGIC, key, meta, arrays, text)
        if not self._write(key, (header, meta, arrays, text)):
            return EncodedOutcome(meta, arrays, outcome.store_text)
        self.writes += 1
        offset = len(header) + len(meta) + len(arrays)
        place = EntryText(self._path(key), offset, len(text))
        return EncodedOutcome(meta, arrays, outcome.store_text, place)

    def _write(self, key: bytes, parts: Sequence[bytes | memoryview]) -> bool:
        """Write `parts` as the file of `key`, atomically; False (and nothing left behind)
        on any OS error."""
        path = self._path(key)
        directory = os.path.dirname(path)
        temp = os.path.join(directory, f".tmp.{os.getpid()}.{next(_temp_sequence)}")
        try:
            if directory not in _made_dirs:
                os.makedirs(directory, exist_ok=True)
                _made_dirs.add(directory)
            with open(temp, "xb") as handle:
                for part in parts:
                    handle.write(part)
            os.replace(temp, path)
        except OSError:
            _made_dirs.discard(directory)  # it may have been removed since: make it again
            with contextlib.suppress(OSError):
                os.unlink(temp)
            return False
        return True

    def corpus_key(self, file_keys: Sequence[bytes]) -> bytes:
        """The key of what a whole build derives from its files (their keys, walk order)."""
        digest = hashlib.sha256(b"cce.build-cache/corpus-bm25\0" + self._salt)
        digest.update(struct.pack("<Q", len(file_keys)))
        for key in file_keys:
            digest.update(key)
        return digest.digest()

    def put_bm25(self, key: bytes, bm25: Bm25Index, id_ranks: IntArray) -> None:
        """Keep a whole build's BM25 statistics and chunk-id ranks under `corpus_key`.

        Skipped unless every term is an ASCII word (tokens always are) and the ids are
        dense: then the space-joined terms give the table back exactly. Also skipped
        when it would take more than a quarter of the cache's bound.
        """
        stats = bm25.arrays()
        terms = list(stats.term_ids)
        # A build numbers terms in the table's own order; only another table needs sorting.
        if not all(itertools.starmap(operator.eq, enumerate(stats.term_ids.values()))):
            terms.sort(key=stats.term_ids.__getitem__)
            if [stats.term_ids[t] for t in terms] != list(range(len(terms))):
                return
        words = _words(terms)
        if words is None or not words.isascii():
            return
        encoded_words = words.encode("ascii")
        size = (len(stats.offsets) + len(id_ranks)) * 8 + len(encoded_words)
        size += (len(stats.posting_docs) + len(stats.doc_lengths)) * 16
        if size > self.max_bytes // 4:
            return  # would evict most of the files' entries to make room
        meta = json.dumps(
            {
                "terms": len(terms),
                "postings": len(stats.posting_docs),
                "docs": len(stats.doc_lengths),
                "avgdl": stats.avgdl,
                "words": len(encoded_words),
            },
            separators=(",", ":"),
        ).encode("utf-8")
        # Written from the arrays' own memory: tens of megabytes at a million chunks.
        arrays = [
            *(
                np.ascontiguousarray(array, dtype=dtype).data.cast("B")
                for array, dtype in (
                    (stats.offsets, np.int64),
                    (stats.posting_docs, np.int64),
                    (stats.posting_freqs, np.float64),
                    (stats.doc_lengths, np.float64),
                    (id_ranks, np.int64),
                )
            ),
            memoryview(encoded_words),
        ]
        self._write(key, (_header(_BM25_MAGIC, key, meta, arrays), meta, *arrays))

    def has_bm25(self, key: bytes) -> bool:
        """Whether a file is kept under `key` for `put_bm25` (it may still not be trusted
        when read); counts nothing."""
        return os.path.exists(self._path(key))

    def get_bm25(self, key: bytes, n_docs: int) -> tuple[Bm25Index, IntArray] | None:
        """What `put_bm25` kept under `key`, for a build of `n_docs` chunks, or None
        (missing, damaged or disagreeing with itself: never trusted, then deleted)."""
        return self._get_whole_build(key, lambda data: _decode_bm25(key, data, n_docs))

    def _record_key(self, corpus_key: bytes) -> bytes:
        return hashlib.sha256(b"cce.build-cache/store-record\0" + corpus_key).digest()

    def put_store_record(self, corpus_key: bytes, record: StoreRecord) -> None:
        """Keep `record` for the build whose files have `corpus_key`; an OS error skips it."""
        key = self._record_key(corpus_key)
        meta = json.dumps(attrs.asdict(record), separators=(",", ":")).encode("utf-8")
        self._write(key, (_header(_RECORD_MAGIC, key, meta, b""), meta))

    def get_store_record(self, corpus_key: bytes) -> StoreRecord | None:
        """What `put_store_record` kept for `corpus_key`, or None (missing or damaged:
        never trusted, then deleted)."""
        key = self._record_key(corpus_key)
        return self._get_whole_build(
            key, lambda data: _decode_record(key, data), max_bytes=_MAX_RECORD_BYTES
        )

    def _get_whole_build(
        self, key: bytes, decode: Callable[[bytes], _Found | None], max_bytes: int | None = None
    ) -> _Found | None:
        """`decode` of the file of `key`, read whole (None when it is longer than
        `max_bytes`, missing or `decode` rejects it); a rejected file is deleted."""
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                data = handle.read(-1 if max_bytes is None else max_bytes + 1)
        except OSError:
            return None
        found = None
        if max_bytes is None or len(data) <= max_bytes:
            try:
                found = decode(data)
            except (ValueError, KeyError, TypeError, IndexError, RecursionError, struct.error):
                found = None
        _settle(path, found is not None)
        return found

    def prune(self) -> int:
        """Delete least recently used entries until the total fits `max_bytes`; the count.

        Stray temp files older than an hour (left by a killed run) are removed too.
        """
        entries: list[tuple[float, int, str]] = []
        try:
            shards = list(os.scandir(self.directory))
        except OSError:
            return 0
        now = time.time()
        for shard in shards:
            if not shard.is_dir(follow_symlinks=False):
                continue
            try:
                files = list(os.scandir(shard.path))
            except OSError:
                continue
            for entry in files:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name.startswith(".tmp."):
                    if now - info.st_mtime > 3600:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                    continue
                entries.append((info.st_mtime, info.st_size, entry.path))
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed += 1
            total -= size
        return removed
