"""Wall time of a suite: 8 members (slices of the stdlib) with `--jobs 1`, `--jobs 2` and a
two-worker Dask `LocalCluster`, beside the sum of the members' single runs.

Why it exists: a suite should cost no more than its members scored one by one, and
should use the cores it is given. This builds a suite of eight stdlib packages, each with
25 queries drawn from its own chunks (bench/queries.py, fixed seed), then times, in one
run: every member alone (`cce relevance MEMBER.jsonl --dir SLICE --json`, summed), the
suite with `--jobs 1` and `--jobs 2`, and the suite on a local Dask cluster (its start-up
timed apart). Every suite output must be byte-identical; the ratios are printed side by
side. The build cache is off so every run builds its indexes. Usage:
`uv run python bench/bench_suite.py [STDLIB_MIRROR_DIR]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import default_corpus
from queries import make_queries

from cce_retrieval import HashEmbedder, build_index

SLICES = ("asyncio", "email", "json", "xml", "http", "unittest", "importlib", "concurrent")
QUERIES_PER_MEMBER = 25


def cce(*argv: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cce_cli", *argv, "--no-cache"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"cce {' '.join(argv)} failed: {done.stderr.decode(errors='replace')}")
    return time.perf_counter() - started, done.stdout


def write_suite(stdlib: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    members: list[tuple[str, str]] = []
    tables = ['schema = "cce.suite/v1"\n']
    for name in SLICES:
        corpus = os.path.join(stdlib, name)
        if not os.path.isdir(corpus):
            continue
        index = build_index(corpus, HashEmbedder()).index
        lines = [json.dumps({"schema": "cce.relevance/v1"})]
        for n, (query, chunk) in enumerate(make_queries(index.chunks, QUERIES_PER_MEMBER)):
            case = {"id": f"q{n:02d}", "query": query, "expected": [chunk.file_path], "k": 10}
            lines.append(json.dumps(case))
        fixtures = os.path.join(where, f"{name}.jsonl")
        with open(fixtures, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        members.append((fixtures, corpus))
        tables.append(
            f'[[members]]\nname = "{name}"\nfixtures = "{name}.jsonl"\ncorpus = "{corpus}"\n'
        )
    manifest = os.path.join(where, "suite.toml")
    with open(manifest, "w", encoding="utf-8") as handle:
        handle.write("\n".join(tables))
    return manifest, members


def main() -> None:
    stdlib = sys.argv[1] if len(sys.argv) > 1 else default_corpus()
    with tempfile.TemporaryDirectory(prefix="cce-bench-suite-") as where:
        manifest, members = write_suite(stdlib, where)
        print(f"suite: {len(members)} members x {QUERIES_PER_MEMBER} queries, stdlib slices")
        alone = sum(cce("relevance", f, "--dir", c, "--json")[0] for f, c in members)
        one, out_one = cce("relevance", manifest, "--json", "--jobs", "1")
        two, out_two = cce("relevance", manifest, "--json", "--jobs", "2")
        assert out_one == out_two, "--jobs changed the suite report"
        dask_line = "dask: distributed is not installed (uv sync --all-extras)"
        import importlib.util

        if importlib.util.find_spec("distributed") is not None:
            from distributed import LocalCluster

            started = time.perf_counter()
            with LocalCluster(
                n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
            ) as cluster:
                startup = time.perf_counter() - started
                address = cluster.scheduler_address.replace("tcp://", "dask://")
                dask, out_dask = cce("relevance", manifest, "--json", "--executor", address)
            assert out_dask == out_one, "the Dask cluster changed the suite report"
            dask_line = (
                f"dask (2 workers)  {dask:7.2f} s   {one / dask:5.2f}x vs --jobs 1"
                f"   (cluster start-up {startup:.2f} s, not counted)"
            )
        print(f"members alone     {alone:7.2f} s   (sum of {len(members)} single runs)")
        print(f"suite --jobs 1    {one:7.2f} s   overhead {one / alone - 1:+.1%} over the sum")
        print(f"suite --jobs 2    {two:7.2f} s   {one / two:5.2f}x vs --jobs 1")
        print(dask_line)
        print("outputs: byte-identical across --jobs 1, --jobs 2 and Dask")


if __name__ == "__main__":
    main()
