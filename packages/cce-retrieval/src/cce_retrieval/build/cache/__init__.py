"""The incremental build cache: one verified entry per (file content, build settings).

Why it exists: redacting, chunking and embedding a file is a pure function of its
relative path, its text and the settings that shape chunks (engine version, language
packs, protection mode, embedding space: embedder, model, server and width). Rebuilding
a large corpus after a small edit should redo only the edited files, so each file's
outcome is kept here under a SHA-256 key of exactly those inputs; a hit is bit-for-bit
what the build would compute.

Beside the file entries there are two per whole build: its BM25 statistics and the
record of the store it made (`StoreRecord`). See docs/index-store.md#build-cache.

Safety: an entry is written to a unique temp file in its final directory and renamed
into place, so a reader sees a whole entry or none; every entry also carries the
SHA-256 of its payload and its own key, so a truncated, damaged or misplaced file is
a miss, never trusted. Concurrent runs write identical bytes for a key; whichever
rename wins, the entry is the same. Any OS error reading or writing the cache turns
into a miss or a skipped write: the cache can make a build faster, never fail it.

The package's modules: `products` (the values an entry holds), `salt` (the settings and
code digest in every key), `codec` (the entry layout and its checks), `entry_files`
(opening an entry: regular files of bounded size only) and `entries` (the directory,
its atomic writes and the size bound).
"""

from cce_retrieval.build.cache.codec import EncodedOutcome, EntryText
from cce_retrieval.build.cache.entries import DEFAULT_MAX_BYTES, BuildCache
from cce_retrieval.build.cache.products import FileOutcome, SparseRows, StoreRecord, TermCounts
from cce_retrieval.build.cache.salt import CACHE_FORMAT, CacheSalt, code_digest

__all__ = [
    "CACHE_FORMAT",
    "DEFAULT_MAX_BYTES",
    "BuildCache",
    "CacheSalt",
    "EncodedOutcome",
    "EntryText",
    "FileOutcome",
    "SparseRows",
    "StoreRecord",
    "TermCounts",
    "code_digest",
]
