"""cce's TREC exports read by the standard tools give cce's own numbers.

Why it exists: `--export-qrels` and `--results --results-format trec` promise that a team
can hand cce's judgments and runs to trec_eval (pytrec_eval), ir_measures and ranx. That
promise only holds if the docnos of the two files fit together and the tools' measures
equal cce's at `--granularity file`; this workspace-level test, where those tools are
installed as test-only oracles, checks both per query (docs/backends.md#external-runs).
"""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval

from cce_cli.main import main

REPO = Path(__file__).parents[1]
TOLERANCE = 5e-7  # cce prints six decimals


def _fixtures(tmp_path: Path) -> Path:
    """eval/relevance/code.jsonl without its path-less case, which qrels cannot carry."""
    corpus = (REPO / "eval" / "corpus" / "sample").resolve()
    lines = (REPO / "eval" / "relevance" / "code.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.dumps({"schema": "cce.relevance/v1", "corpus": str(corpus)})
    cases = [line for line in lines[1:] if '"#' not in line]
    path = tmp_path / "code.jsonl"
    path.write_text("\n".join([header, *cases]) + "\n", encoding="utf-8")
    return path


def _cce(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_exported_qrels_and_file_level_run_score_the_same_in_ir_measures_and_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = _fixtures(tmp_path)
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    out = _cce(
        capsys,
        *("relevance", str(fixtures), "--backend", "bm25,hybrid", "--granularity", "file"),
        *("--metrics", "ndcg", "--json", "--results", str(run), "--results-format", "trec"),
        *("--export-qrels", str(qrels)),
    )
    report = json.loads(out)
    judged = [
        ir_measures.Qrel(qid, docno, int(relevance))
        for qid, _, docno, relevance in (
            line.split() for line in qrels.read_text(encoding="utf-8").splitlines()
        )
    ]
    trec_qrels: dict[str, dict[str, int]] = {}
    for row in judged:
        trec_qrels.setdefault(row.query_id, {})[row.doc_id] = row.relevance
    by_backend: dict[str, list[ir_measures.ScoredDoc]] = {}
    for line in run.read_text(encoding="utf-8").splitlines():
        qid, _, docno, _, score, tag = line.split()
        by_backend.setdefault(tag, []).append(ir_measures.ScoredDoc(qid, docno, float(score)))
    k = {case["id"]: case["k"] for case in report["backends"][0]["per_query"]}
    assert set(k) == set(trec_qrels)  # every case is judged, none is lost
    for backend in report["backends"]:
        scored = by_backend[backend["backend"]]
        trec_run: dict[str, dict[str, float]] = {}
        for doc in scored:
            trec_run.setdefault(doc.query_id, {})[doc.doc_id] = doc.score
        evaluator = pytrec_eval.RelevanceEvaluator(
            trec_qrels, {"P.3,5", "recall.3,5", "recip_rank", "ndcg_cut.3,5"}
        )
        trec = evaluator.evaluate(trec_run)
        for row in backend["per_query"]:
            cut = row["k"]
            measures = [
                ir_measures.P @ cut,
                ir_measures.R @ cut,
                ir_measures.RR,
                ir_measures.nDCG @ cut,
            ]
            values = {
                str(m.measure): m.value
                for m in ir_measures.iter_calc(measures, judged, scored)
                if m.query_id == row["id"]
            }
            expected = {
                f"P@{cut}": float(row["precision_at_k"]),
                f"R@{cut}": float(row["recall"]),
                "RR": float(row["mrr"]),
                f"nDCG@{cut}": float(row["ndcg_at_k"]),
            }
            for name, value in expected.items():
                assert values.get(name, 0.0) == pytest.approx(value, abs=TOLERANCE), (
                    backend["backend"],
                    row["id"],
                    name,
                )
            tools = trec.get(row["id"], {})
            assert tools.get(f"P_{cut}", 0.0) == pytest.approx(expected[f"P@{cut}"], abs=TOLERANCE)
            assert tools.get(f"recall_{cut}", 0.0) == pytest.approx(
                expected[f"R@{cut}"], abs=TOLERANCE
            )
            assert tools.get("recip_rank", 0.0) == pytest.approx(expected["RR"], abs=TOLERANCE)
            assert tools.get(f"ndcg_cut_{cut}", 0.0) == pytest.approx(
                expected[f"nDCG@{cut}"], abs=TOLERANCE
            )


def test_a_file_level_run_replays_to_the_same_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = _fixtures(tmp_path)
    run = tmp_path / "run.trec"
    common = ("relevance", str(fixtures), "--granularity", "file", "--json")
    first = _cce(
        capsys, *common, "--backend", "hybrid", "--results", str(run), "--results-format", "trec"
    )
    replay = _cce(capsys, *common, "--run", f"mine={run}", "--backend", "mine")
    rows = json.loads(first)["backends"][0]["per_query"]
    again = json.loads(replay)["backends"][0]["per_query"]
    assert rows == again
