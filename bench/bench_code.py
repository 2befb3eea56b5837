"""The `code` backends beside `bm25` on a persisted store: query latency and the cost of
what `code` derives.

Why it exists: `code` must answer in the same order of time as `bm25` (p50 at most 5 ms
and at most 3x bm25's on the stdlib's ~72k chunks) and building its code index (split
terms, path terms, re-cut chunks, gap chunks read from the corpus) may cost at most 2x
a BM25 build (docs/ranking.md#speed). Usage: `uv run python bench/bench_code.py [DIR]`
(default: a mirror of the interpreter's stdlib); the store is kept under
`.bench/code-store` and reused while the corpus is unchanged.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_search import percentile
from corpus import default_corpus
from queries import make_queries

from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.rank.backends import Query, create_backend
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.code import text
from cce_retrieval.rank.code.index import CodeIndex, CodeOptions
from cce_retrieval.rank.derived import retrieval_index
from cce_retrieval.rank.hybrid import bm25_only_search
from cce_retrieval.store.persist import persist_index
from cce_retrieval.store.sidecar import load_store

QUERIES = 200
BUILD_REPEATS = 3
TOP_K = 10


def main() -> int:
    corpus = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_corpus())
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    name = "stdlib" if len(sys.argv) <= 1 else os.path.basename(corpus.rstrip(os.sep))
    store = os.path.join(here, ".bench", "code-store", name, ".cce", "index.json")
    embedder = HashEmbedder()
    started = time.perf_counter()
    persist_index(corpus, embedder, store)
    print(f"corpus   : {corpus}")
    print(f"store    : {store} (index or reuse {time.perf_counter() - started:.2f}s)")
    started = time.perf_counter()
    index = load_store(store)
    print(f"chunks   : {len(index.chunks)} (store loaded in {time.perf_counter() - started:.2f}s)")
    derived = retrieval_index(index)

    ids = [c.chunk_id for c in derived.chunks]
    # Both builds read the chunks from the store (a sidecar decodes them on access).
    builds: dict[str, Callable[[], object]] = {
        "bm25 (tokenise + postings)": lambda: Bm25Index.build(
            [c.content for c in derived.chunks], ids
        ),
        "code index, no gap chunks": lambda: CodeIndex.build(
            derived, CodeOptions(gap_chunks=False)
        ),
        "code index (default)": lambda: CodeIndex.build(derived, CodeOptions(), corpus),
    }
    # Best of BUILD_REPEATS, in wall-clock and in CPU seconds: on a shared machine the
    # CPU time of the process is the steadier of the two.
    print(f"\n  derived build (best of {BUILD_REPEATS})       seconds   x bm25  cpu s  x bm25 cpu")
    base = base_cpu = 0.0
    for label, build in builds.items():
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(BUILD_REPEATS):
            text.identifier_terms.cache_clear()  # each build pays for its own splitting
            started, started_cpu = time.perf_counter(), time.process_time()
            build()
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - started_cpu)
        seconds, cpu = min(walls), min(cpus)
        base, base_cpu = base or seconds, base_cpu or cpu
        print(
            f"  {label:<32}{seconds:>9.2f}{seconds / base:>9.2f}{cpu:>7.2f}{cpu / base_cpu:>11.2f}"
        )

    workload = [q for q, _ in make_queries(index.chunks, QUERIES)]
    code = create_backend("code")
    hybrid = create_backend("code-hybrid")
    backends: dict[str, Callable[[str], object]] = {
        "bm25": lambda q: bm25_only_search(index, q, TOP_K),
        "code": lambda q: code.search(index, Query(q, embedder, corpus_root=corpus), TOP_K),
        "code-hybrid": lambda q: hybrid.search(
            index, Query(q, embedder, corpus_root=corpus), TOP_K
        ),
    }
    for run in backends.values():  # derived structures built outside the timings
        run(workload[0])
    print(f"\n  {'backend':<12}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}{'x bm25 p50':>12}")
    bm25_p50 = 0.0
    for label, run in backends.items():
        times = []
        for query in workload:
            t0 = time.perf_counter()
            run(query)
            times.append((time.perf_counter() - t0) * 1000.0)
        p50 = percentile(times, 0.5)
        bm25_p50 = bm25_p50 or p50
        print(
            f"  {label:<12}{p50:>10.3f}{percentile(times, 0.95):>10.3f}"
            f"{statistics.fmean(times):>10.3f}{p50 / bm25_p50:>12.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
