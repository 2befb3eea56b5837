"""The binary layout of cache entries: encoding a file's outcome, a build's BM25 and a
store record, and decoding them back only when every digest checks.

Why it exists: an entry is read far more often than written, so its layout is made for
reading (a fixed header, JSON metadata, raw arrays, then the store text), and every
entry carries the SHA-256 of its payload and its own key: a truncated, damaged or
misplaced entry decodes to a miss, never to a wrong value.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import struct
from collections.abc import Sequence
from typing import Final, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from cce_retrieval.build.cache.entry_files import open_entry
from cce_retrieval.build.cache.products import FileOutcome, SparseRows, StoreRecord, TermCounts
from cce_retrieval.model import Chunk
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.order import IntArray

FILE_MAGIC: Final = b"CCEBC004"


BM25_MAGIC: Final = b"CCEBM001"
"""A whole build's BM25 statistics (`BuildCache.put_bm25`), in the entry layout."""


RECORD_MAGIC: Final = b"CCESR001"
"""What store a whole build made (`BuildCache.put_store_record`), in the entry layout."""


NOTICE_MAGIC: Final = b"CCENT001"
"""A notice already shown for a whole build (`BuildCache.put_notice`): its text."""


# magic, key, SHA-256 and length of the json part, SHA-256 and length of the store text
# part; the array part is what lies between them.
HEADER: Final = struct.Struct("<8s32s32sQ32sQ")


MAX_RECORD_BYTES: Final = 1 << 12
"""A store record is a few hundred bytes; a larger file there is not one."""


_Scalar = TypeVar("_Scalar", bound=np.generic)


def space_joined(values: Sequence[str]) -> str | None:
    """`values` space-joined when `str.split` gives exactly them back (none is empty or
    holds whitespace: chunk ids and tokens never do), else None."""
    joined = " ".join(values)
    return joined if joined.split() == list(values) else None


def _lengths_and_text(values: Sequence[str]) -> tuple[bytes, str]:
    lengths = np.fromiter(map(len, values), dtype=np.uint32, count=len(values))
    return lengths.tobytes(), "".join(values)


def encode_outcome(outcome: FileOutcome) -> tuple[bytes, bytes]:
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
    id_words, vocabulary_words = space_joined(ids), space_joined(terms.vocabulary)
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


def decode_outcome(
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
    """The payload of a whole-build entry (`BM25_MAGIC`, `RECORD_MAGIC`) and the length
    of its json part, when the header names this kind and key, there is no store text
    part, and the payload's digest matches; else None. Raises struct.error for data
    shorter than a header."""
    found_magic, stored_key, payload_sha, meta_length, _, text_length = HEADER.unpack_from(data)
    body = memoryview(data)[HEADER.size :]
    if found_magic != magic or stored_key != key or text_length != 0:
        return None
    if hashlib.sha256(body).digest() != payload_sha:
        return None
    return body, meta_length


def decode_bm25(key: bytes, data: bytes, n_docs: int) -> tuple[Bm25Index, IntArray] | None:
    payload = _whole_build_payload(BM25_MAGIC, key, data)
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


_RECORD_FIELDS: Final = {
    field.name: field.type for field in attrs.fields(attrs.resolve_types(StoreRecord))
}
"""Each field of a store record and its type (`str` or `int`), as a record file must have them."""


def decode_record(key: bytes, data: bytes) -> StoreRecord | None:
    """The record in an entry file's bytes, or None unless every check holds: header,
    key, payload digest and length, exactly the record's fields with their types, no
    negative count, a SHA-256 in lowercase hex and a named embedder. Raises ValueError
    or RecursionError for a payload that is not JSON, struct.error for data shorter
    than a header (the caller's misses)."""
    payload = _whole_build_payload(RECORD_MAGIC, key, data)
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


MAX_NOTICE_BYTES: Final = 1 << 16
"""A notice is one line naming at most a few files; a larger file there is not one."""


def decode_notice(key: bytes, data: bytes) -> str | None:
    """The notice text in an entry file's bytes, or None unless the header, key and
    payload digest check. Raises struct.error for data shorter than a header, and
    UnicodeDecodeError (a ValueError) for a payload that is not the text written."""
    payload = _whole_build_payload(NOTICE_MAGIC, key, data)
    if payload is None or payload[1] != len(payload[0]):
        return None
    return bytes(payload[0]).decode("utf-8", "surrogatepass")


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
        opened = open_entry(self.path)
        if opened is None:
            return None
        fd, size = opened
        try:
            if size != self.offset + self.length:
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
        return decode_outcome(self.meta, self.arrays, self.store_text)


def entry_header(
    magic: bytes, key: bytes, meta: bytes, arrays: bytes | Sequence[memoryview], text: bytes = b""
) -> bytes:
    """The `HEADER` of an entry file holding `meta`, `arrays` (one part, or consecutive
    parts) and then `text`."""
    digest = hashlib.sha256(meta)
    for part in [arrays] if isinstance(arrays, bytes) else arrays:
        digest.update(part)
    return HEADER.pack(
        magic, key, digest.digest(), len(meta), hashlib.sha256(text).digest(), len(text)
    )
