"""Indexing throughput: walk + redact + chunk + embed, then store save and load.

Why it exists: the speed target for indexing (at least 5,000 chunks/s for the
build) is measured here, on real code, never by timed assertions in the test suite.
Each phase is timed separately so a regression points at its stage. Beside the hash
embedder, the in-process model2vec embedder is timed with a synthetic model of
realistic size (30,000 tokens x 256 dimensions, word-level, random vectors), when the
optional model2vec extra is installed.

Usage: `uv run python bench/bench_index.py [DIR ...]` (default: a mirror of the
interpreter's stdlib, see bench/corpus.py).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections import Counter
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
SYNTHETIC_VOCAB = 30_000
SYNTHETIC_DIM = 256

T = TypeVar("T")


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def line(phase: str, files: int, chunks: int, seconds: float) -> str:
    rate = chunks / seconds if seconds > 0 else float("inf")
    timing = f"{seconds:>8.3f}s  {rate:>10.0f} chunks/s"
    return f"  {phase:<14} files {files:>6}  chunks {chunks:>7}  {timing}"


def synthetic_model2vec(directory: str, texts: list[str]) -> str | None:
    """A word-level model2vec model over the corpus's most frequent words (padded to
    `SYNTHETIC_VOCAB`), saved to `directory`; None without the model2vec extra."""
    try:
        import numpy as np
        from model2vec import StaticModel
        from tokenizers import Tokenizer
        from tokenizers.models import WordLevel
        from tokenizers.pre_tokenizers import Whitespace
    except ImportError:
        return None
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(re.findall(r"\w+|[^\w\s]+", text))
    words = [word for word, _ in counts.most_common(SYNTHETIC_VOCAB - 1)]
    words += [f"synthetic{i}" for i in range(SYNTHETIC_VOCAB - 1 - len(words))]
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(0).standard_normal((len(vocab), SYNTHETIC_DIM))
    StaticModel(vectors.astype(np.float32), tokenizer).save_pretrained(directory)
    return directory


def model2vec_line(contents: list[str], files: int) -> str:
    """The model2vec embedder's throughput on `contents`, scaling to unit length included."""
    from cce_retrieval.embed.model2vec_static import Model2VecEmbedder
    from cce_retrieval.embed.unit import unit_rows

    with tempfile.TemporaryDirectory(prefix="cce-bench-m2v-") as scratch:
        model = synthetic_model2vec(scratch, contents)
        if model is None:
            return "  model2vec      skipped: the optional model2vec extra is not installed"
        embedder = Model2VecEmbedder(model)
        embedder.check()  # loading is not embedding

        def embed() -> None:
            matrix, lengths = embed_contents(embedder, contents)
            unit_rows(matrix, lengths)

        _, seconds = timed(embed)
    return line("model2vec", files, len(contents), seconds)


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
    print(model2vec_line([c.content for c in chunks], files))
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
