"""What cce writes as TREC reads back with cce-metrics' TREC reader, query for query.

The two modules differ on purpose (formats/trec.py: the rank column is the ranking and
queries keep fixture order; cce_metrics.trec: ranks follow scores, for evaluation), so
this checks they agree on the data: the same queries, documents, scores and judgments.
"""

from __future__ import annotations

from pathlib import Path

from cce_cli.evaluation import harness
from cce_cli.formats.trec import qrels_text, read_trec_results, trec_run_text
from cce_fixtures import parse_fixtures
from cce_metrics.trec import parse_qrels, parse_run
from cce_retrieval import HashEmbedder, build_index

REPO = Path(__file__).resolve().parents[3]


def test_runs_and_qrels_cce_writes_read_back_the_same_with_cce_metrics() -> None:
    fixture_set = parse_fixtures((REPO / "eval" / "relevance" / "code.jsonl").read_text())
    index = build_index(str(REPO / "eval" / "corpus" / "sample"), HashEmbedder()).index
    reports = harness.evaluate(index, HashEmbedder(), fixture_set, ["bm25"])
    text = trec_run_text(fixture_set, reports)
    run = parse_run(text)
    replayed = read_trec_results("run.trec", text)
    assert set(run) == set(replayed) == {case.id for case in fixture_set.cases}
    for case_id, hits in replayed.items():
        docnos = {f"{hit.file_path}:{hit.start_line}-{hit.end_line}": hit.score for hit in hits}
        assert docnos == run[case_id]
        assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    # Chunks are judged by anchor, so the chunk qrels name anchors; files by path.
    qrels = parse_qrels(qrels_text(fixture_set))
    by_file = parse_qrels(qrels_text(fixture_set, granularity="file"))
    for case in fixture_set.cases:
        anchors = {str(anchor) for anchor in case.expected}
        files = {anchor.file_path for anchor in case.expected if anchor.file_path is not None}
        assert set(qrels.get(case.id, {})) == anchors
        assert set(by_file.get(case.id, {})) == files
        assert set(qrels.get(case.id, {}).values()) <= {1}
