"""External results checked before they are scored: paths, facets, case ids, repairs.

A run or plugin that cannot match its fixtures used to score zero without a word; these
tests pin the stderr report, `--strict` and the repair of unambiguous paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from cce_retrieval.rank import backends as registry

REPO = Path(__file__).parents[3]

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def scores(out: str, backend: str) -> dict[str, str]:
    entry = next(item for item in json.loads(out)["backends"] if item["backend"] == backend)
    return {row["id"]: row["mrr"] for row in entry["per_query"]}


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: backend mine")]


def test_a_run_that_does_not_fit_is_named_counted_and_refused_with_strict(
    workspace: Path, run_cce: RunCce
) -> None:
    run = workspace / "mine.trec"
    run.write_text(
        "code-job-interface Q0 queue.ts 1 3.0 t\n"  # a whole file: no kind for #kind
        "code-kv-get-span Q0 store.rs 1 2.0 t\n"
        "code-kv-get-span Q0 nosuch.rs 2 1.0 t\n"
        "code-kv-get-span Q0 gone/a.rs 3 0.5 t\n"
        "unknown-1 Q0 config.py 1 1.0 t\nunknown-2 Q0 config.py 1 1.0 t\n",
        encoding="utf-8",
    )
    fixtures = str(workspace / "code.jsonl")
    argv = ("relevance", fixtures, "--run", f"mine={run}", "--backend", "mine", "--json")
    code, out, err = run_cce(*argv)
    assert code == 0, err
    found = warnings(err)
    source = f"warning: backend mine ({run}): "
    assert found == [
        source + "2 case ids not in the fixture set (e.g. unknown-1, unknown-2); "
        "their results are never scored; check the run's query ids",
        source + "9 cases without results (e.g. code-load-config, code-env-overrides, "
        "code-lru-evict); they score as empty result lists",
        source + "2 results whose path is not in the corpus (e.g. code-kv-get-span #2 "
        "nosuch.rs:1-1, code-kv-get-span #3 gone/a.rs:1-1); paths must be relative to the "
        "corpus root, as the index stores them",
        source + "1 result that can never match an anchor of their case, which needs a kind "
        "or line span the result lacks (e.g. code-job-interface #1 queue.ts:4-39 has no "
        "kind); a retriever that returns whole files is judged by path with --granularity file",
    ]
    assert json.loads(out)["backends"][0]["backend"] == "mine"
    code, out, err = run_cce(*argv, "--strict")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1].startswith("error: the results of mine (")
    assert "refusing to score with --strict" in err


def test_a_run_that_fits_says_nothing(workspace: Path, run_cce: RunCce) -> None:
    results = workspace / "bm25.jsonl"
    fixtures = str(workspace / "code.jsonl")
    code, _, err = run_cce("relevance", fixtures, "--backend", "bm25", "--results", str(results))
    assert code == 0, err
    code, _, err = run_cce(
        "relevance", fixtures, "--run", f"mine={results}", "--backend", "mine", "--strict"
    )
    assert (code, err) == (0, "")


def test_dot_and_absolute_paths_are_read_as_corpus_relative(
    workspace: Path, run_cce: RunCce
) -> None:
    root = (workspace.parent / "corpus" / "sample").resolve()
    plain, spelt = workspace / "plain.trec", workspace / "spelt.trec"
    plain.write_text(
        "code-load-config Q0 config.py 1 2.0 t\ncode-lru-evict Q0 cache.py 1 2.0 t\n",
        encoding="utf-8",
    )
    spelt.write_text(
        f"code-load-config Q0 ./config.py 1 2.0 t\ncode-lru-evict Q0 {root}/cache.py 1 2.0 t\n",
        encoding="utf-8",
    )
    fixtures = str(workspace / "code.jsonl")
    code, expected, err = run_cce(
        "relevance", fixtures, "--run", f"mine={plain}", "--backend", "mine", "--json"
    )
    assert code == 0, err
    assert "note:" not in err
    code, out, err = run_cce(
        "relevance", fixtures, "--run", f"mine={spelt}", "--backend", "mine", "--json"
    )
    assert code == 0, err
    assert scores(out, "mine")["code-load-config"] == "1.000000"
    assert out == expected
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: backend mine ({spelt}): read 2 paths written as ./path or under the corpus "
        "root as corpus-relative (e.g. ./config.py)"
    ]
    assert "not in the corpus" not in err


class _FileLevel:
    """A plugin that answers with whole files, spelt `./path`, and one stray path."""

    name = "files"

    def search(self, index: object, query: object, k: int) -> Sequence[dict[str, object]]:
        return [
            {"file_path": "./queue.ts", "start_line": 1, "end_line": 40, "score": 2.0},
            {"file_path": "elsewhere.ts", "start_line": 1, "end_line": 2, "score": 1.0},
        ]


@pytest.fixture
def file_plugin() -> Iterator[None]:
    spec = registry.BackendSpec("files", "whole files", (), lambda values: _FileLevel(), adapt=True)
    registry.register_backend(spec)
    yield
    registry.BACKENDS.pop("files", None)


def test_plugin_results_are_checked_and_repaired(
    file_plugin: None, workspace: Path, run_cce: RunCce
) -> None:
    fixtures = str(workspace / "code.jsonl")
    code, out, err = run_cce("relevance", fixtures, "--backend", "files", "--json")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == (
        "note: backend files (plugin): read 11 paths written as ./path or under the corpus "
        "root as corpus-relative (e.g. ./queue.ts)"
    )
    assert lines[1].startswith(
        "warning: backend files (plugin): 11 results whose path is not in the corpus "
        "(e.g. code-load-config #2 elsewhere.ts:1-2, "
    )
    assert lines[2].startswith(
        "warning: backend files (plugin): 2 results that can never match an anchor of their "
        "case, which needs a kind or line span the result lacks (e.g. code-job-interface #1 "
        "queue.ts:1-40 has no kind, code-eviction-kind #1 queue.ts:1-40 has no kind)"
    )
    assert scores(out, "files")["code-requeue"] == "1.000000"  # ./queue.ts read as queue.ts
    code, out, err = run_cce("relevance", fixtures, "--backend", "files", "--strict")
    assert (code, out) == (1, "")
    assert "error: the results of files (13)" in err


def test_pooled_runs_are_checked_and_repaired(workspace: Path, run_cce: RunCce) -> None:
    run = workspace / "mine.trec"
    run.write_text(
        "code-load-config Q0 ./config.py 1 2.0 t\ncode-lru-evict Q0 nosuch.py 1 2.0 t\n"
        "stray Q0 config.py 1 1.0 t\n",
        encoding="utf-8",
    )
    fixtures = str(workspace / "code.jsonl")
    argv = ("pool", fixtures, "--backends", "mine", "--run", f"mine={run}", "--depth", "2")
    code, out, err = run_cce(*argv)
    assert code == 0, err
    assert '"config.py' in out and "./config.py" not in out
    source = f"backend mine ({run}): "
    assert f"note: {source}read 1 path written as ./path" in err
    assert f"warning: {source}1 case id not in the fixture set (e.g. stray)" in err
    assert f"warning: {source}9 cases without results" in err
    assert f"warning: {source}1 result whose path is not in the corpus (e.g. code-lru-evict" in err
    code, out, err = run_cce(*argv, "--strict")
    assert (code, out) == (1, "")
    assert "error: the results of mine (11)" in err


class _RootReader:
    """A plugin that records the corpus root each query brings."""

    name = "roots"

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def search(self, index: object, query: object, k: int) -> Sequence[dict[str, object]]:
        self.seen.append(getattr(query, "corpus_root", None))
        return []


def test_plugins_receive_the_corpus_root(workspace: Path, run_cce: RunCce) -> None:
    reader = _RootReader()
    spec = registry.BackendSpec("roots", "reads roots", (), lambda values: reader, adapt=True)
    registry.register_backend(spec)
    try:
        code, _, err = run_cce("relevance", str(workspace / "code.jsonl"), "--backend", "roots")
    finally:
        registry.BACKENDS.pop("roots", None)
    assert code == 0, err
    root = str((workspace.parent / "corpus" / "sample").absolute())
    assert set(reader.seen) == {root}


def test_a_run_ranked_otherwise_than_by_score_is_noted(workspace: Path, run_cce: RunCce) -> None:
    """`--run` keeps the rank column; tools that sort by score would not. Tied scores in an
    order other than trec_eval's (document id descending), or a lower score ranked first,
    get one note; a run in score order with trec_eval's tie order gets none."""
    fixtures = str(workspace / "code.jsonl")
    tied = workspace / "tied.trec"
    tied.write_text(
        "code-load-config Q0 cache.py 1 1.0 t\ncode-load-config Q0 config.py 2 1.0 t\n"
        "code-lru-evict Q0 cache.py 1 0.2 t\ncode-lru-evict Q0 queue.ts 2 0.9 t\n"
    )
    code, _, err = run_cce("relevance", fixtures, "--run", f"mine={tied}", "--backend", "mine")
    assert code == 0
    notes = [line for line in err.splitlines() if line.startswith("note: backend mine")]
    assert notes == [
        f"note: backend mine ({tied}): 2 cases rank results otherwise than by score, ties as "
        "trec_eval breaks them (e.g. code-load-config, code-lru-evict); scored in the file's "
        "rank order, while tools that sort by score (trec_eval, ir_measures, "
        "cce_metrics.evaluate) re-rank them"
    ]
    ordered = workspace / "ordered.trec"
    ordered.write_text(
        "code-load-config Q0 config.py 1 1.0 t\ncode-load-config Q0 cache.py 2 1.0 t\n"
        "code-lru-evict Q0 queue.ts 1 0.9 t\ncode-lru-evict Q0 cache.py 2 0.2 t\n"
    )
    code, _, err = run_cce("relevance", fixtures, "--run", f"mine={ordered}", "--backend", "mine")
    assert code == 0
    assert not [line for line in err.splitlines() if line.startswith("note: backend mine")]
