"""The exported qrels and judged run give trec_eval's tools cce's own nDCG@k and AP.

cce judges anchors, not documents: every anchor (expected and secondary) counts once, at
the first rank that matches it, and a chunk matching two anchors earns one gain. The
qrels list each judged anchor with cce's gain and the judged run names, at each
considered rank, the anchor that rank finds first
(docs/metrics.md#reproducing-cces-numbers-with-trec_eval).
These tests score the pair with ir_measures and pytrec_eval and require, query for
query, cce's full-precision nDCG@k and AP to 1e-9: on fixtures built to hit every
difference (secondary anchors, a chunk satisfying two anchors, a repeated anchor, kind
and ranged anchors, more anchors than k, an anchor nothing matches, a query with no
results), on a suite (ids `member/case-id`), and on the flask member of the semble
dev suite, where file-level qrels without secondary anchors used to give ir_measures
nDCG@10 0.5259 against cce's 0.5526.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import ir_measures
import pytest
import pytrec_eval

from cce_cli.evaluation import harness
from cce_cli.formats.trec import judged_run_text, qrels_text
from cce_fixtures import FixtureSet, parse_fixtures
from cce_retrieval import HashEmbedder, build_index

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "eval" / "corpus" / "sample"
TOLERANCE = 1e-9

# ir_measures' readers are untyped: each yields named tuples (query_id, doc_id, ...).
read_trec_qrels: Callable[[str], Iterable[Any]] = ir_measures.read_trec_qrels
read_trec_run: Callable[[str], Iterable[Any]] = ir_measures.read_trec_run

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

CASES = [
    # One chunk of cache.py covers both ranged anchors: one gain, two ideal places.
    {
        "id": "overlap",
        "query": "cache get drops an expired entry",
        "expected": ["cache.py@18-27", "cache.py@20-25"],
        "secondary": ["config.py"],
        "k": 5,
    },
    # A repeated anchor counts twice in R but can be found once.
    {
        "id": "repeated",
        "query": "load config settings from the cache",
        "expected": ["config.py", "config.py"],
        "secondary": ["cache.py"],
        "k": 5,
    },
    {
        "id": "kinds",
        "query": "eviction strategy enum",
        "expected": ["#enum_item"],
        "secondary": ["store.rs", "queue.ts#interface_declaration"],
        "k": 3,
    },
    # The secondary anchor is what the query finds: hit and AP count it, MRR does not.
    {
        "id": "secondary-first",
        "query": "Job interface with payload and attempts",
        "expected": ["retry.js"],
        "secondary": ["queue.ts"],
        "k": 5,
    },
    # R = 6 > k = 4: AP divides by R, the nDCG ideal stops at k.
    {
        "id": "many",
        "query": "requeue a failed job with the next retry delay and warm the cache",
        "expected": ["queue.ts", "retry.js", "worker.rb"],
        "secondary": ["cache.py", "ring.c", "config.py"],
        "k": 4,
    },
    {
        "id": "unmatchable",
        "query": "push a value into the ring buffer",
        "expected": ["ring.c@5000-5001"],
        "secondary": ["ring.c"],
        "k": 5,
    },
    # No term of the query is in the corpus: bm25 returns nothing, every metric is 0.
    {
        "id": "no-results",
        "query": "zyzzyva quixotic",
        "expected": ["config.py"],
        "secondary": ["cache.py"],
        "k": 5,
    },
]


def fixture_text(cases: Iterable[Mapping[str, object]]) -> str:
    lines = [json.dumps({"schema": "cce.relevance/v1"})]
    lines.extend(json.dumps(case) for case in cases)
    return "\n".join(lines) + "\n"


def trec_scores(
    qrels_path: Path, run_path: Path, cutoffs: Iterable[int]
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Per query, `ndcg@K` and `ap` from ir_measures and from pytrec_eval (by their
    own TREC readers), for every cut-off K the queries use."""
    cutoffs = sorted(set(cutoffs))
    measures = [*(ir_measures.nDCG @ k for k in cutoffs), ir_measures.AP]
    by_ir: dict[str, dict[str, float]] = {}
    qrels = list(read_trec_qrels(str(qrels_path)))
    run = list(read_trec_run(str(run_path)))
    for row in ir_measures.iter_calc(measures, qrels, run):
        name = "ap" if row.measure == ir_measures.AP else f"ndcg@{row.measure['cutoff']}"
        by_ir.setdefault(row.query_id, {})[name] = row.value
    qrels_dict: dict[str, dict[str, int]] = {}
    for qrel in qrels:
        qrels_dict.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    run_dict: dict[str, dict[str, float]] = {}
    for scored in run:
        run_dict.setdefault(scored.query_id, {})[scored.doc_id] = scored.score
    wanted = {"map", "ndcg_cut." + ",".join(str(k) for k in cutoffs)}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels_dict, wanted).evaluate(run_dict)
    by_trec = {
        qid: {
            "ap": values["map"],
            **{f"ndcg@{k}": values[f"ndcg_cut_{k}"] for k in cutoffs},
        }
        for qid, values in evaluated.items()
    }
    return by_ir, by_trec


def assert_reproduced(
    expected: Mapping[str, tuple[int, float, float]],
    qrels_path: Path,
    run_path: Path,
) -> None:
    """`expected[qid]` is (k, cce's nDCG@k, cce's AP); a query the run does not hold
    (no results) is scored 0 by cce, 0 by ir_measures and left out by pytrec_eval."""
    by_ir, by_trec = trec_scores(qrels_path, run_path, (k for k, _, _ in expected.values()))
    assert set(by_trec) <= set(by_ir) == set(expected)
    for qid, (k, ndcg, ap) in expected.items():
        for tool in (by_ir, by_trec):
            got = tool.get(qid, {f"ndcg@{k}": 0.0, "ap": 0.0})
            assert got[f"ndcg@{k}"] == pytest.approx(ndcg, abs=TOLERANCE), (qid, k)
            assert got["ap"] == pytest.approx(ap, abs=TOLERANCE), qid


def cce_values(
    fixture_set: FixtureSet,
    reports: Iterable[harness.BackendReport],
    prefix: str = "",
) -> dict[str, tuple[int, float, float]]:
    (report,) = reports
    return {
        prefix + case.id: (case.k, case.score.values["ndcg_at_k"], case.score.values["ap_at_k"])
        for case in report.cases
    }


@pytest.fixture(scope="module")
def sample_index() -> object:
    return build_index(str(SAMPLE), HashEmbedder()).index


@pytest.mark.parametrize("backend", ["bm25", "hybrid"])
@pytest.mark.parametrize("granularity", ["chunk", "file"])
@pytest.mark.parametrize("graded", [False, True])
def test_judged_qrels_and_run_give_cces_ndcg_and_ap_per_query(
    sample_index: object, tmp_path: Path, backend: str, granularity: str, graded: bool
) -> None:
    fixture_set = parse_fixtures(fixture_text(CASES))
    reports = harness.evaluate(
        sample_index,  # type: ignore[arg-type]
        HashEmbedder(),
        fixture_set,
        [backend],
        graded=graded,
        granularity=granularity,
    )
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(
        qrels_text(fixture_set, granularity=granularity, graded=graded), encoding="utf-8"
    )
    run.write_text(judged_run_text(fixture_set, reports, granularity=granularity), "utf-8")
    expected = cce_values(fixture_set, reports)
    assert_reproduced(expected, qrels, run)
    if graded:
        # Expected anchors carry relevance 2: at that level MRR (expected only) is cce's.
        qrels_rows = list(read_trec_qrels(str(qrels)))
        run_rows = list(read_trec_run(str(run)))
        rr = {
            row.query_id: row.value
            for row in ir_measures.iter_calc([ir_measures.RR(rel=2)], qrels_rows, run_rows)
        }
        for case in reports[0].cases:
            assert rr.get(case.id, 0.0) == pytest.approx(case.score.mrr, abs=TOLERANCE)
    # The cases do differ from a naive export: scores that are not all 0 or 1.
    assert any(0.0 < ndcg < 1.0 for _, ndcg, _ in expected.values())


def test_the_qrels_hold_secondary_anchors_with_cces_gains() -> None:
    fixture_set = parse_fixtures(fixture_text(CASES[:3]))
    assert qrels_text(fixture_set).splitlines()[:6] == [
        "overlap 0 cache.py@18-27 1",
        "overlap 0 cache.py@20-25 1",
        "overlap 0 config.py 1",
        "repeated 0 config.py 1",
        "repeated 0 config.py~2 1",
        "repeated 0 cache.py 1",
    ]
    graded = qrels_text(fixture_set, granularity="file", graded=True).splitlines()
    # By file: distinct paths; anchors without a path (`#enum_item`) judge nothing.
    assert graded == [
        "overlap 0 cache.py 2",
        "overlap 0 config.py 1",
        "repeated 0 config.py 2",
        "repeated 0 cache.py 1",
        "kinds 0 store.rs 1",
        "kinds 0 queue.ts 1",
    ]


def test_a_suite_exports_qualified_qrels_and_run_that_reproduce_each_member(
    tmp_path: Path, run_cce: RunCce
) -> None:
    members = {"alpha": CASES[:4], "beta": CASES[4:]}
    for name, cases in members.items():
        (tmp_path / f"{name}.jsonl").write_text(fixture_text(cases), encoding="utf-8")
    shutil.copytree(SAMPLE, tmp_path / "sample")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n'
        + "".join(
            f'\n[[members]]\nname = "{name}"\nfixtures = "{name}.jsonl"\ncorpus = "sample"\n'
            for name in members
        ),
        encoding="utf-8",
    )
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    code, out, err = run_cce(
        *("relevance", str(manifest), "--backend", "bm25", "--metrics", "ndcg,map", "--json"),
        *("--export-qrels", str(qrels), "--results", str(run), "--results-format", "trec-judged"),
    )
    assert code == 0, err
    assert {line.split()[0] for line in qrels.read_text("utf-8").splitlines()} == {
        f"{name}/{case['id']}" for name, cases in members.items() for case in cases
    }
    expected: dict[str, tuple[int, float, float]] = {}
    index = build_index(str(SAMPLE), HashEmbedder()).index
    for name, cases in members.items():
        fixture_set = parse_fixtures(fixture_text(cases))
        reports = harness.evaluate(index, HashEmbedder(), fixture_set, ["bm25"])
        expected.update(cce_values(fixture_set, reports, prefix=f"{name}/"))
    assert_reproduced(expected, qrels, run)
    # The suite report's own (six-decimal) rows are the values reproduced.
    for member in json.loads(out)["members"]:
        (backend,) = member["report"]["backends"]
        for row in backend["per_query"]:
            _, ndcg, ap = expected[f"{member['name']}/{row['id']}"]
            assert (row["ndcg_at_k"], row["ap_at_k"]) == (f"{ndcg:.6f}", f"{ap:.6f}")


@pytest.mark.parametrize("granularity", ["chunk", "file"])
def test_the_flask_member_reproduces_in_ir_measures(
    tmp_path: Path, granularity: str, semble_dev: Path
) -> None:
    text = (semble_dev / "fixtures" / "flask.jsonl").read_text(encoding="utf-8")
    fixture_set = parse_fixtures(text)
    assert any(case.secondary for case in fixture_set.cases)
    index = build_index(str(semble_dev / "corpora" / "flask"), HashEmbedder()).index
    reports = harness.evaluate(
        index, HashEmbedder(), fixture_set, ["bm25"], granularity=granularity
    )
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(qrels_text(fixture_set, granularity=granularity), encoding="utf-8")
    run.write_text(judged_run_text(fixture_set, reports, granularity=granularity), "utf-8")
    expected = cce_values(fixture_set, reports)
    assert_reproduced(expected, qrels, run)
    measured = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10],
        list(read_trec_qrels(str(qrels))),
        list(read_trec_run(str(run))),
    )
    (report,) = reports
    assert measured[ir_measures.nDCG @ 10] == pytest.approx(
        report.averages.values["ndcg_at_k"], abs=TOLERANCE
    )


def test_an_anchor_with_whitespace_cannot_be_exported(tmp_path: Path, run_cce: RunCce) -> None:
    shutil.copytree(SAMPLE, tmp_path / "sample")
    (tmp_path / "sample" / "my notes.py").write_text("def load():\n    pass\n", "utf-8")
    fixtures = tmp_path / "f.jsonl"
    case = {"id": "spaced", "query": "load", "expected": ["my notes.py"], "k": 3}
    fixtures.write_text(fixture_text([case]), encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    code, out, err = run_cce(
        "relevance", str(fixtures), "--dir", str(tmp_path / "sample"), "--export-qrels", str(qrels)
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: fixture case 'spaced'") and "TREC docno" in err, err
    assert not qrels.exists()
