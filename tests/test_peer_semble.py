"""bench/peer_semble.py's own parts, without semble: its runs, its copy of semble's
scoring, and the agreement it claims with cce's.

Why it exists: the peer comparison (docs/peer-comparison.md) stands on three things that
need no semble installed to check: the TREC run it writes is what `cce relevance --run`
reads, its rewrite of semble's benchmark scoring gives the textbook values (and semble's
path rule its known differences), and that scoring with exact paths equals cce's own
per query at full precision.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).parents[1]


def _peer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peer_semble", REPO / "bench/peer_semble.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peer = _peer()


def test_semble_ndcg_counts_each_target_once_at_its_first_overlapping_result() -> None:
    targets = [("core.py", None, None), ("util.py", 10, 20)]
    ranking = [("other.py", 1, 9), ("util.py", 21, 30), ("core.py", 1, 5), ("util.py", 15, 25)]
    ideal = 1 + 1 / math.log2(3)
    expected = (1 / math.log2(4) + 1 / math.log2(5)) / ideal
    assert peer.semble_ndcg(ranking, targets, 10) == pytest.approx(expected, abs=1e-12)
    # Only the first k results count.
    assert peer.semble_ndcg(ranking, targets, 3) == pytest.approx((1 / 2) / ideal, abs=1e-12)
    assert peer.semble_ndcg(ranking, [], 10) == 0.0


def test_semble_path_rule_lets_a_root_file_match_a_same_named_target_in_a_folder() -> None:
    targets = [("src/pkg/app.py", None, None), ("src/pkg/sansio/app.py", None, None)]
    ranking = [("app.py", 1, 9), ("sansio/app.py", 1, 9)]
    # semble's rule: `app.py` ends both targets, both are found at rank 1, one gain.
    assert peer.semble_ndcg(ranking, targets, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    exact = [("src/pkg/" + path, start, end) for path, start, end in ranking]
    assert peer.semble_ndcg(exact, targets, 10, exact_paths=True) == pytest.approx(1.0)


def _suite(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpora" / "demo"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "app.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(30)))
    (corpus / "sub" / "app.py").write_text("class App:\n    pass\n")
    (corpus / "util.py").write_text("def helper():\n    return 1\n")
    cases = [
        {"id": "demo-01", "query": "app", "expected": ["app.py"], "secondary": ["sub/app.py"]},
        {"id": "demo-02", "query": "helper", "expected": ["util.py@1-2"], "secondary": []},
        {"id": "demo-03", "query": "nothing", "expected": ["util.py"], "secondary": []},
    ]
    fixtures = tmp_path / "fixtures" / "demo.jsonl"
    fixtures.parent.mkdir()
    header = {"schema": "cce.relevance/v1", "corpus": "../corpora/demo"}
    lines = [header, *({**case, "k": 10} for case in cases)]
    fixtures.write_text("".join(json.dumps(line) + "\n" for line in lines))
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'schema = "cce.suite/v1"\n\n[[members]]\nname = "demo"\n'
        'fixtures = "fixtures/demo.jsonl"\ncorpus = "corpora/demo"\n'
    )
    return suite


def test_a_written_run_is_scored_by_cce_as_the_exact_semble_scoring_says(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    rankings = {
        "demo": {
            "demo-01": [["sub/app.py", 1, 2, 3.0], ["util.py", 1, 2, 2.0], ["app.py", 5, 8, 1.5]],
            "demo-02": [["app.py", 1, 2, 1.0], ["util.py", 1, 2, 0.5]],
        }
    }
    run = tmp_path / "semble-bm25.trec"
    run.write_text(peer.trec_run("semble-bm25", rankings))
    assert run.read_text().splitlines()[0] == "demo/demo-01 Q0 sub/app.py:1-2 1 3.0 semble-bm25"
    results = tmp_path / "results.trec"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cce_cli",
            "relevance",
            str(suite),
            "--backend",
            "semble-bm25",
            "--run",
            f"semble-bm25={run}",
            "--metrics",
            "ndcg",
            "--json",
            "--results",
            str(results),
            "--results-format",
            "trec",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    per_query = report["members"][0]["report"]["backends"][0]["per_query"]
    reported = {query["id"]: query["ndcg_at_k"] for query in per_query}
    members = peer.read_members(suite)
    full = peer.cce_full_precision(members, results)["semble-bm25"]
    read_back = peer.read_trec(results)["semble-bm25"]
    targets, source = peer.semble_targets(suite, members, None, None)
    assert source.startswith("the fixtures' anchors")
    for case_id, (prefix, case_targets) in targets["demo"].items():
        hits = read_back.get(f"demo/{case_id}", [])
        exact = peer.semble_ndcg(
            [(prefix + p, s, e) for p, s, e in hits], case_targets, 10, exact_paths=True
        )
        assert abs(exact - full[f"demo/{case_id}"]) <= 1e-9
        assert f"{exact:.6f}" == reported[case_id]
    # The hand values: demo-01 finds its secondary at 1 and its expected at 3; demo-02
    # its ranged anchor at 2; demo-03 has no results.
    ideal = 1 + 1 / math.log2(3)
    assert full["demo/demo-01"] == pytest.approx((1 + 1 / 2) / ideal, abs=1e-12)
    assert full["demo/demo-02"] == pytest.approx(1 / math.log2(3), abs=1e-12)
    assert full["demo/demo-03"] == 0.0


def test_a_path_with_white_space_cannot_be_written_to_a_trec_run() -> None:
    with pytest.raises(peer.PeerError, match="white space"):
        peer.trec_run("semble-bm25", {"demo": {"demo-01": [["a b.py", 1, 2, 1.0]]}})
