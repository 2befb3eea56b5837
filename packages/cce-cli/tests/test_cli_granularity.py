"""`--granularity file`: anchors and results compared by path, each file once per ranking.

A retriever that returns whole files has no tree-sitter kind and no chunk span, so at the
default chunk granularity it can never match `path#kind` anchors; by file it is judged
fairly, and the report says which granularity it was scored at.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden" / "code.report.json"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def rows(out: str, backend: str) -> dict[str, dict[str, object]]:
    entry = next(item for item in json.loads(out)["backends"] if item["backend"] == backend)
    return {row["id"]: row for row in entry["per_query"]}


RUN = """\
code-job-interface Q0 queue.ts 1 3.0 t
code-lru-evict Q0 cache.py:1-5 1 3.0 t
code-lru-evict Q0 worker.rb 2 2.5 t
code-lru-evict Q0 cache.py:18-27 3 2.0 t
"""


def test_a_file_level_run_is_judged_by_path_and_each_file_counts_once(
    workspace: Path, run_cce: RunCce
) -> None:
    run = workspace / "files.trec"
    run.write_text(RUN, encoding="utf-8")
    fixtures = str(workspace / "code.jsonl")
    argv = ("relevance", fixtures, "--run", f"mine={run}", "--backend", "mine", "--json")
    code, chunk, err = run_cce(*argv)
    assert code == 0, err
    code, by_file, err = run_cce(*argv, "--granularity", "file")
    assert code == 0, err
    assert "granularity" not in json.loads(chunk)
    assert json.loads(by_file)["granularity"] == "file"
    # `queue.ts#interface_declaration` cannot match a kind-less whole file, but its path can.
    assert rows(chunk, "mine")["code-job-interface"]["mrr"] == "0.000000"
    assert rows(by_file, "mine")["code-job-interface"]["mrr"] == "1.000000"
    # cache.py twice in the top 5: two relevant chunks, but one relevant file.
    assert rows(chunk, "mine")["code-lru-evict"]["precision_at_k"] == "0.400000"
    assert rows(by_file, "mine")["code-lru-evict"]["precision_at_k"] == "0.200000"
    # Kinds and ranges are not compared by file, so no result is reported as unmatchable.
    assert "can never match" not in err
    assert "1 case in " in err and "(e.g. code-eviction-kind)" in err
    code, out, err = run_cce(*argv[:-1], "--granularity", "file")
    assert code == 0, err
    assert "  matched : by file (kinds and line ranges ignored)\n" in out


def test_chunk_granularity_is_the_default_byte_for_byte(
    run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, out, err = run_cce(
        "relevance", "eval/relevance/code.jsonl", "--json", "--granularity", "chunk"
    )
    assert code == 0, err
    assert out == GOLDEN.read_text(encoding="utf-8")


def test_file_granularity_trec_results_use_the_qrels_docnos(
    workspace: Path, run_cce: RunCce
) -> None:
    fixtures = str(workspace / "code.jsonl")
    results, qrels = workspace / "run.trec", workspace / "qrels.txt"
    code, _, err = run_cce(
        *("relevance", fixtures, "--backend", "hybrid", "--granularity", "file"),
        *("--results", str(results), "--results-format", "trec", "--export-qrels", str(qrels)),
    )
    assert code == 0, err
    lines = [line.split() for line in results.read_text(encoding="utf-8").splitlines()]
    judged = {tuple(line.split()[::2]) for line in qrels.read_text(encoding="utf-8").splitlines()}
    assert all(":" not in docno for _, _, docno, _, _, _ in lines)
    for qid in {line[0] for line in lines}:
        docnos = [docno for case, _, docno, _, _, _ in lines if case == qid]
        assert len(docnos) == len(set(docnos))  # each file once per ranking
        ranks = [int(rank) for case, _, _, rank, _, _ in lines if case == qid]
        assert ranks == list(range(1, len(ranks) + 1))
    assert any((qid, docno) in judged for qid, _, docno, _, _, _ in lines)
