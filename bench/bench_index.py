"""Indexing throughput: walk + redact + chunk + embed, then store save and load.

Why it exists: the speed target for indexing (at least 5,000 chunks/s for the
build) is measured here, on real code, never by timed assertions in the test suite.
Each phase is timed separately so a regression points at its stage.

Usage: `uv run python bench/bench_index.py [DIR ...]` (default: a mirror of the
interpreter's stdlib, see bench/corpus.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import default_corpus

from cce_retrieval import build_index, load_index, save_index
from cce_retrieval.build.embeddings import embed_contents
from cce_retrieval.chunk.chunker import chunk_file
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk
from cce_retrieval.protect.redactor import redact
from cce_retrieval.walk.walker import walk

BUILD_BAR_CHUNKS_PER_S = 5_000.0

T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def line(phase: str, files: int, chunks: int, seconds: float) -> str:
    rate = chunks / seconds if seconds > 0 else float("inf")
    timing = f"{seconds:>8.3f}s  {rate:>10.0f} chunks/s"
    return f"  {phase:<14} files {files:>6}  chunks {chunks:>7}  {timing}"


def bench(corpus: str) -> bool:

    print(f"corpus: {corpus}")
    walked, walk_s = timed(lambda: walk(corpus, True))
    files = len(walked.files)
    texts, redact_s = timed(lambda: [redact(f.text) for f in walked.files])

    def chunk_all() -> list[Chunk]:
        out: list[Chunk] = []
        for walked_file, text in zip(walked.files, texts, strict=True):
            out.extend(chunk_file(walked_file.rel_path, text).chunks)
        return out

    chunks, chunk_s = timed(chunk_all)
    n = len(chunks)
    _, embed_s = timed(lambda: embed_contents(HashEmbedder(), [c.content for c in chunks]))
    result, build_s = timed(lambda: build_index(corpus, HashEmbedder()))
    print(line("walk", files, n, walk_s))
    print(line("redact", files, n, redact_s))
    print(line("chunk", files, n, chunk_s))
    print(line("embed", files, n, embed_s))
    print(line("build (all)", result.files_indexed, result.total_chunks, build_s))
    with tempfile.TemporaryDirectory(prefix="cce-bench-") as scratch:
        store = os.path.join(scratch, "index.json")
        size, save_s = timed(lambda: save_index(result.index, store))
        loaded, load_s = timed(lambda: load_index(store))
        assert len(loaded.chunks) == result.total_chunks
    print(line("store save", result.files_indexed, result.total_chunks, save_s))
    print(line("store load", result.files_indexed, result.total_chunks, load_s))
    print(f"  store size     {size / 1e6:.1f} MB")
    rate = result.total_chunks / build_s if build_s > 0 else float("inf")
    ok = rate >= BUILD_BAR_CHUNKS_PER_S
    verdict = "meets" if ok else "BELOW"
    print(f"  build {rate:.0f} chunks/s {verdict} the {BUILD_BAR_CHUNKS_PER_S:.0f} chunks/s bar")
    return ok


def main() -> int:
    corpora = sys.argv[1:] or [default_corpus()]
    results = [bench(corpus) for corpus in corpora]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
