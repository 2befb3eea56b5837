"""Wall time of `cce relevance` (all three backends, 100 queries), indexing vs scoring.

Why it exists: the speed target is scoring (everything after the index is built: the
retrieval structures, every backend over every case, the metrics and the rendering)
under 5 s for 100 queries over a corpus of at least 50,000 chunks. This runs the same
code path as the command, in process, timing the two halves separately, and then the
real command end to end. Usage: `uv run python bench/bench_relevance.py [DIR]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import default_corpus
from queries import make_queries

from cce_cli.evaluation import harness
from cce_cli.render import relevance as render
from cce_fixtures import parse_fixtures
from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk

CASES = 100
BACKENDS = ("bm25", "vector", "hybrid")


def fixture_text(corpus: str, chunks: Sequence[Chunk]) -> str:
    lines = [json.dumps({"schema": "cce.relevance/v1", "corpus": corpus})]
    for i, (query, chunk) in enumerate(make_queries(chunks, CASES)):
        anchor = chunk.file_path
        if i % 4 == 0:  # a quarter of the cases carry ranged anchors (token metrics)
            anchor = f"{chunk.file_path}@{chunk.start_line}-{chunk.end_line}"
        lines.append(json.dumps({"id": f"bench-{i:03d}", "query": query, "expected": [anchor]}))
    return "\n".join(lines) + "\n"


def main() -> int:
    corpus = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_corpus())
    embedder = HashEmbedder()

    started = time.perf_counter()
    result = build_index(corpus, embedder)
    indexing = time.perf_counter() - started
    index = result.index
    text = fixture_text(corpus, index.chunks)

    started = time.perf_counter()
    fixture_set = parse_fixtures(text)
    reports = harness.evaluate(index, embedder, fixture_set, BACKENDS)
    comparison = harness.compare_reports(reports[0], reports[2])
    summary = render.RunSummary(corpus, index.embedder, reports, comparison)
    human = render.render_human(summary)
    render.render_json(summary)
    scoring = time.perf_counter() - started

    print(f"corpus   : {corpus}")
    print(f"chunks   : {len(index.chunks)} in {result.files_indexed} files")
    print(f"cases    : {len(fixture_set.cases)} x backends {','.join(BACKENDS)}")
    print(f"indexing : {indexing:8.2f} s  ({len(index.chunks) / indexing:,.0f} chunks/s)")
    print(f"scoring  : {scoring:8.2f} s  (retrieval set-up, 300 searches, metrics, rendering)")
    print(f"total    : {indexing + scoring:8.2f} s")
    print()
    print(human.rstrip("\n"))

    with tempfile.TemporaryDirectory(prefix="cce-bench-") as tmp:
        path = os.path.join(tmp, "bench.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        started = time.perf_counter()
        subprocess.run(["cce", "relevance", path, "--json"], check=True, capture_output=True)
        print(f"\n`cce relevance` end to end (new process): {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
