"""The cache directory: entries written atomically, read back verified, and the least
recently used evicted past a size bound.

Why it exists: the cache can make a build faster, never fail it. An entry is written to
a unique temporary file in its final directory and renamed into place, so a reader sees
a whole entry or none; any OS error reading or writing becomes a miss or a skipped
write; concurrent runs write identical bytes for a key, so whichever rename wins, the
entry is the same.
"""

from __future__ import annotations

import contextlib
import hashlib
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

from cce_retrieval.build.cache.codec import (
    BM25_MAGIC,
    FILE_MAGIC,
    HEADER,
    MAX_NOTICE_BYTES,
    MAX_RECORD_BYTES,
    NOTICE_MAGIC,
    RECORD_MAGIC,
    EncodedOutcome,
    EntryText,
    decode_bm25,
    decode_notice,
    decode_outcome,
    decode_record,
    encode_outcome,
    entry_header,
    space_joined,
)
from cce_retrieval.build.cache.entry_files import MAX_ENTRY_BYTES, open_entry, read_at_most
from cce_retrieval.build.cache.products import FileOutcome, SparseRows, StoreRecord
from cce_retrieval.build.cache.salt import CacheSalt
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.order import IntArray

DEFAULT_MAX_BYTES: Final = 1 << 30
"""Default bound on the cache's total size (1 GiB)."""


_temp_sequence = itertools.count()


_Found = TypeVar("_Found")


_made_dirs: set[str] = set()
"""Shard directories this process has made or found, so a write does not ask again."""


def _settle(fd: int, path: str, trusted: bool) -> None:
    """After reading the regular file at `path` (open as `fd`): a trusted one is marked
    recently used (evicted last), through its descriptor; an untrusted one is deleted
    (never read again)."""
    with contextlib.suppress(OSError):
        if trusted:
            os.utime(fd)
        else:
            os.unlink(path)


def _names_key(header: bytes, key: bytes) -> bool:
    """Whether `header` is a whole entry header written for `key` (checked before the
    rest of a file is read: a file written for no key is not read further)."""
    return len(header) == HEADER.size and HEADER.unpack(header)[1] == key


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
        opened = open_entry(path)
        if opened is None:  # none, or not a regular file of an entry's size: never read
            self.misses += 1
            return None
        fd, size = opened
        try:
            header = read_at_most(fd, HEADER.size)
            found = None
            if _names_key(header, key):  # else not this key's entry: its body is not read
                text_length = HEADER.unpack(header)[5]
                body_length = size - HEADER.size - (0 if store_text else text_length)
                body = read_at_most(fd, max(0, body_length))
                found = self._verify(key, header, body, store_text)
            _settle(fd, path, found is not None)
        except OSError:
            self.misses += 1
            return None
        finally:
            os.close(fd)
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
        if len(header) != HEADER.size:
            return None
        magic, stored_key, payload_sha, meta_length, text_sha, text_length = HEADER.unpack(header)
        if magic != FILE_MAGIC or stored_key != key:
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
            return decode_outcome(bytes(payload[:meta_length]), payload[meta_length:], store_text)
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: bytes, outcome: FileOutcome) -> EncodedOutcome:
        """Write the entry atomically; any OS error just skips it. Returns the outcome in
        the entry's encoding, written or not."""
        meta, arrays = encode_outcome(outcome)
        text = outcome.store_text or b""
        header = entry_header(FILE_MAGIC, key, meta, arrays, text)
        if not self._write(key, (header, meta, arrays, text)):
            return EncodedOutcome(meta, arrays, outcome.store_text)
        self.writes += 1
        offset = len(header) + len(meta) + len(arrays)
        place = EntryText(self._path(key), offset, len(text))
        return EncodedOutcome(meta, arrays, outcome.store_text, place)

    def _write(self, key: bytes, parts: Sequence[bytes | memoryview]) -> bool:
        """Write `parts` as the file of `key`, atomically; False (and nothing left behind)
        on any OS error, or when the entry would be larger than `MAX_ENTRY_BYTES`. The
        rename replaces whatever is at the path (a symlink is replaced, never followed);
        a directory there stays, and the write is skipped."""
        if sum(memoryview(part).nbytes for part in parts) > MAX_ENTRY_BYTES:
            return False  # would never be read back (`open_entry`)
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
        words = space_joined(terms)
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
        self._write(key, (entry_header(BM25_MAGIC, key, meta, arrays), meta, *arrays))

    def has_bm25(self, key: bytes) -> bool:
        """Whether a file is kept under `key` for `put_bm25` (it may still not be trusted
        when read); counts nothing."""
        return os.path.exists(self._path(key))

    def get_bm25(self, key: bytes, n_docs: int) -> tuple[Bm25Index, IntArray] | None:
        """What `put_bm25` kept under `key`, for a build of `n_docs` chunks, or None
        (missing, damaged or disagreeing with itself: never trusted, then deleted)."""
        return self._get_whole_build(key, lambda data: decode_bm25(key, data, n_docs))

    def _record_key(self, corpus_key: bytes) -> bytes:
        return hashlib.sha256(b"cce.build-cache/store-record\0" + corpus_key).digest()

    def put_store_record(self, corpus_key: bytes, record: StoreRecord) -> None:
        """Keep `record` for the build whose files have `corpus_key`; an OS error skips it."""
        key = self._record_key(corpus_key)
        meta = json.dumps(attrs.asdict(record), separators=(",", ":")).encode("utf-8")
        self._write(key, (entry_header(RECORD_MAGIC, key, meta, b""), meta))

    def get_store_record(self, corpus_key: bytes) -> StoreRecord | None:
        """What `put_store_record` kept for `corpus_key`, or None (missing or damaged:
        never trusted, then deleted)."""
        key = self._record_key(corpus_key)
        return self._get_whole_build(
            key, lambda data: decode_record(key, data), max_bytes=MAX_RECORD_BYTES
        )

    def _notice_key(self, corpus_key: bytes, name: str) -> bytes:
        return hashlib.sha256(
            b"cce.build-cache/notice\0" + name.encode("utf-8") + b"\0" + corpus_key
        ).digest()

    def put_notice(self, corpus_key: bytes, name: str, text: str) -> None:
        """Remember that the notice `name` said `text` for the build of `corpus_key` (the
        files' content under these settings and this version of the code); an OS error
        skips it, and the notice is shown again."""
        key = self._notice_key(corpus_key, name)
        meta = text.encode("utf-8", "surrogatepass")
        self._write(key, (entry_header(NOTICE_MAGIC, key, meta, b""), meta))

    def get_notice(self, corpus_key: bytes, name: str) -> str | None:
        """What `put_notice` kept for `corpus_key` and `name`, or None (never shown, or
        the entry is missing or damaged)."""
        key = self._notice_key(corpus_key, name)
        return self._get_whole_build(
            key, lambda data: decode_notice(key, data), max_bytes=MAX_NOTICE_BYTES
        )

    def _get_whole_build(
        self, key: bytes, decode: Callable[[bytes], _Found | None], max_bytes: int | None = None
    ) -> _Found | None:
        """`decode` of the file of `key`, read whole (None when it is longer than
        `max_bytes`, missing or `decode` rejects it); a rejected file is deleted."""
        path = self._path(key)
        opened = open_entry(path)
        if opened is None:  # none, or not a regular file of an entry's size: never read
            return None
        fd, size = opened
        try:
            found = None
            header = read_at_most(fd, HEADER.size)
            if (max_bytes is None or size <= max_bytes) and _names_key(header, key):
                data = header + read_at_most(fd, size - len(header))
                try:
                    found = decode(data)
                except (ValueError, KeyError, TypeError, IndexError, RecursionError, struct.error):
                    found = None
            _settle(fd, path, found is not None)
        except OSError:
            return None
        finally:
            os.close(fd)
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
