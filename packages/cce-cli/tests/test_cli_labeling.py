"""The labeling workflow end to end: `cce queries` mines the log, `cce pool` pools, applies.

The event log is written by real `cce search` runs over a copy of the project's sample
corpus; the pooled union is checked against each backend's own ranked lists; applied
judgments are checked by matching: every candidate judged relevant is matched by an
expected anchor of the output, and the output passes `cce-fixtures validate`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.evaluation import harness
from cce_cli.labeling.pooling import (
    Candidate,
    JudgedCase,
    apply_judgments,
    parse_judging,
    pool_candidates,
)
from cce_cli.labeling.querylog import draft_case_id, read_query_log
from cce_fixtures import Anchor, parse_fixtures
from cce_fixtures.cli import main as validate_main
from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

REPO = Path(__file__).parents[3]
SAMPLE = REPO / "eval" / "corpus" / "sample"

SEARCHES = (
    "load config",
    "parse arguments",
    "load config",
    "password = hunter2hunter2",
    "retry policy",
    "load config",
    "parse arguments",
)


@pytest.fixture
def corpus(tmp_path: Path, run_cce: RunCce) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    assert run_cce("index", str(root))[0] == 0
    for query in SEARCHES:
        assert run_cce("search", query, "--dir", str(root))[0] == 0
    return root


def test_queries_counts_most_frequent_first_and_drops_credentials(
    corpus: Path, run_cce: RunCce
) -> None:
    code, out, err = run_cce("queries", str(corpus / ".cce" / "metrics.jsonl"))
    assert code == 0, err
    rows = [line.split(maxsplit=2) for line in out.splitlines()]
    assert [(int(count), text) for count, _, text in rows] == [
        (3, "load config"),
        (2, "parse arguments"),
        (1, "retry policy"),
    ]
    assert "hunter2" not in out
    assert "1 distinct query dropped because they look like credentials" in err


def test_the_same_log_twice_counts_each_search_once(corpus: Path, run_cce: RunCce) -> None:
    log = str(corpus / ".cce" / "metrics.jsonl")
    once = run_cce("queries", log)[1]
    assert run_cce("queries", log, log)[1] == once


def test_queries_filters(corpus: Path, run_cce: RunCce) -> None:
    log = str(corpus / ".cce" / "metrics.jsonl")
    out = run_cce("queries", log, "--min-count", "2")[1]
    assert [line.split(maxsplit=2)[2] for line in out.splitlines()] == [
        "load config",
        "parse arguments",
    ]
    assert len(run_cce("queries", log, "--limit", "1")[1].splitlines()) == 1
    assert run_cce("queries", log, "--since", "2999-01-01")[1] == ""
    assert run_cce("queries", log, "--since", "yesterday")[0] == 2


def test_queries_skips_torn_lines_and_reports_missing_log(tmp_path: Path, run_cce: RunCce) -> None:
    log = tmp_path / "metrics.jsonl"
    event = {"event": "search", "query": "q", "ts": "2026-01-01T00:00:00Z"}
    log.write_text(json.dumps(event) + '\n{"event":"sea\n' + json.dumps(event) + "\n")
    code, out, err = run_cce("queries", str(log))
    assert (code, out) == (0, "     2  2026-01-01T00:00:00Z  q\n")
    assert f"{log}:2: not a JSON event" in err
    code, out, err = run_cce("queries", str(tmp_path / "absent.jsonl"))
    assert code == 1 and out == "" and err.startswith("error: could not read event log")


def test_last_seen_and_stable_order() -> None:
    lines = [
        json.dumps({"event": "search", "query": q, "ts": ts}).encode()
        for q, ts in [
            ("b", "2026-01-02T00:00:00Z"),
            ("a", "2026-01-01T00:00:00Z"),
            ("a", "2026-01-03T00:00:00Z"),
            ("b", "2026-01-01T00:00:00Z"),
        ]
    ]
    log = read_query_log([("log", lines)], lambda _: False)
    assert [(q.text, q.count, q.last_seen) for q in log.queries] == [
        ("a", 2, "2026-01-03T00:00:00Z"),
        ("b", 2, "2026-01-02T00:00:00Z"),
    ]


def test_draft_ids_are_stable_and_distinct() -> None:
    assert draft_case_id("load config") == draft_case_id("load config")
    assert draft_case_id("load config") != draft_case_id("load  config")
    assert draft_case_id("load config").startswith("q-load-config-")
    assert draft_case_id("???").startswith("q-")


def test_draft_fixtures_validate_only_for_the_empty_expected(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    draft = tmp_path / "draft.jsonl"
    log = str(corpus / ".cce" / "metrics.jsonl")
    assert run_cce("queries", log, "--fixtures", str(draft), "--corpus", "corpus")[0] == 0
    lines = draft.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"schema": "cce.relevance/v1", "corpus": "corpus"}
    assert len(lines) == 4
    code = validate_main(["validate", str(draft)])
    err = capsys.readouterr()
    assert code == 1
    problems = [line for line in (err.out + err.err).splitlines() if line.strip()]
    assert problems and all('"expected"' in line for line in problems)


def _pool(corpus: Path, tmp_path: Path, run_cce: RunCce, depth: int = 4) -> tuple[Path, Path]:
    draft = tmp_path / "draft.jsonl"
    log = str(corpus / ".cce" / "metrics.jsonl")
    assert run_cce("queries", log, "--fixtures", str(draft), "--corpus", "corpus")[0] == 0
    judging = tmp_path / "judging.jsonl"
    code, _, err = run_cce(
        "pool",
        str(draft),
        "--backends",
        "bm25,vector,hybrid",
        "--depth",
        str(depth),
        "-o",
        str(judging),
    )
    assert code == 0, err
    return draft, judging


def test_pool_is_the_deduplicated_union_in_blind_order(
    corpus: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    draft, judging = _pool(corpus, tmp_path, run_cce)
    first = judging.read_bytes()
    _pool(corpus, tmp_path, run_cce)
    assert judging.read_bytes() == first
    index = build_index(str(corpus), HashEmbedder()).index
    judged = parse_judging(str(judging), first.decode("utf-8"))
    queries = [json.loads(line)["query"] for line in draft.read_text().splitlines()[1:]]
    assert [case.query for case in judged] == queries
    for case in judged:
        query = harness.Query(case.query, HashEmbedder())
        union = {
            (hit.file_path, hit.start_line, hit.end_line, hit.kind)
            for backend in ("bm25", "vector", "hybrid")
            for hit in harness.run_backend(index, backend, query, 4)
        }
        locations = [c.location for c in case.candidates]
        assert locations == sorted(union)
        assert all(c.judgment is None and c.snippet for c in case.candidates)


def _judge(judging: Path, out: Path) -> dict[str, list[Candidate]]:
    """Judge the first candidate relevant, the second secondary, the rest not (one open)."""
    relevant: dict[str, list[Candidate]] = {}
    lines = []
    for line in judging.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for position, candidate in enumerate(row["candidates"]):
            verdict: str | None = ["relevant", "secondary"][position] if position < 2 else "not"
            if position == len(row["candidates"]) - 1 and position >= 2:
                verdict = None
            candidate["judgment"] = verdict
        lines.append(json.dumps(row))
        relevant[row["id"]] = [
            Candidate(c["file_path"], c["start_line"], c["end_line"], c["kind"])
            for c in row["candidates"]
            if c["judgment"] == "relevant"
        ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return relevant


def test_apply_turns_judgments_into_matching_anchors(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    draft, judging = _pool(corpus, tmp_path, run_cce)
    judged = tmp_path / "judged.jsonl"
    relevant = _judge(judging, judged)
    labeled = tmp_path / "labeled.jsonl"
    code, _, err = run_cce("pool", "--apply", str(judged), str(draft), "-o", str(labeled))
    assert code == 0, err
    assert "candidates still unjudged" in err
    assert validate_main(["validate", str(labeled)]) == 0
    fixture_set = parse_fixtures(labeled.read_text(encoding="utf-8"))
    assert fixture_set.corpus == "corpus"
    judged_rows = {
        json.loads(line)["id"]: json.loads(line)["candidates"]
        for line in judged.read_text(encoding="utf-8").splitlines()
    }
    for case in fixture_set.cases:
        for hit in relevant[case.id]:
            assert any(anchor.matches(hit) for anchor in case.expected)
        # ...and nothing judged otherwise is credited, unless it shares path, lines, kind.
        for row in judged_rows[case.id]:
            if row["judgment"] == "relevant":
                continue
            other = Candidate(row["file_path"], row["start_line"], row["end_line"], row["kind"])
            twins = [h for h in relevant[case.id] if h.touches(other) and h.kind == other.kind]
            assert twins or not any(anchor.matches(other) for anchor in case.expected)
        assert case.secondary and not set(case.secondary) & set(case.expected)
    code, _, err = run_cce("relevance", str(labeled), "--backend", "hybrid")
    assert code == 0, err


def test_apply_merges_with_existing_anchors_and_keeps_other_fields(
    tmp_path: Path, run_cce: RunCce
) -> None:
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1"}\n'
        '{"id":"a","query":"q","expected":["x.py"],"k":3,"note":"keep me"}\n',
        encoding="utf-8",
    )
    judged = tmp_path / "j.jsonl"
    candidate = {
        "file_path": "y.py",
        "start_line": 2,
        "end_line": 4,
        "kind": "function",
        "judgment": "relevant",
        "use_kind": True,
    }
    judged.write_text(
        json.dumps({"schema": "cce.judging/v1", "id": "a", "query": "q", "candidates": [candidate]})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    assert run_cce("pool", "--apply", str(judged), str(fixtures), "-o", str(out))[0] == 0
    row = json.loads(out.read_text().splitlines()[1])
    assert row["expected"] == ["x.py", "y.py#function@2-4"]
    assert row["note"] == "keep me"
    assert Anchor.parse(row["expected"][1]).kind == "function"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "not JSON"),
        (
            '{"schema":"cce.judging/v1","id":"a","query":"q","candidates":[{"file_path":"x",'
            '"start_line":3,"end_line":1,"kind":"k"}]}',
            "not a range",
        ),
        (
            '{"schema":"cce.judging/v1","id":"a","query":"q","candidates":[{"file_path":"x",'
            '"start_line":1,"end_line":1,"kind":"k","judgment":"maybe"}]}',
            "is not one of",
        ),
    ],
)
def test_bad_judging_lines_are_errors_with_file_and_line(
    tmp_path: Path, run_cce: RunCce, line: str, fragment: str
) -> None:
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text('{"id":"a","query":"q","expected":["x.py"]}\n', encoding="utf-8")
    judged = tmp_path / "j.jsonl"
    judged.write_text(line + "\n", encoding="utf-8")
    code, out, err = run_cce(
        "pool", "--apply", str(judged), str(fixtures), "-o", str(tmp_path / "o.jsonl")
    )
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {judged}:1: ") and fragment in err
    assert not (tmp_path / "o.jsonl").exists()


def test_pool_candidates_dedupes_by_location() -> None:
    class Hit:
        def __init__(self, path: str, start: int) -> None:
            self.file_path, self.start_line, self.end_line = path, start, start + 1
            self.kind, self.content = "function", "def f():\n    pass\n"

    pooled = pool_candidates([[Hit("b", 1), Hit("a", 5)], [Hit("a", 5), Hit("c", 1)]], depth=1)
    assert [c.location for c in pooled] == [("a", 5, 6, "function"), ("b", 1, 2, "function")]


def test_pool_takes_configured_backends_and_external_runs(
    corpus: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"a","query":"load config","expected":["config.py"],"k":3}\n',
        encoding="utf-8",
    )
    (tmp_path / "cce.toml").write_text('[backends.bm25-b04]\nuse = "bm25"\nb = 0.4\n')
    results = tmp_path / "run.jsonl"
    code, _, err = run_cce(
        "relevance", str(fixtures), "--backend", "vector", "--results", str(results)
    )
    assert code == 0, err
    judging = tmp_path / "j.jsonl"
    code, _, err = run_cce(
        "pool",
        str(fixtures),
        "--backends",
        "bm25-b04,mine",
        "--run",
        f"mine={results}",
        "--depth",
        "3",
        "-o",
        str(judging),
    )
    assert code == 0, err
    pooled = {c.location for c in parse_judging(str(judging), judging.read_text())[0].candidates}
    recorded = json.loads(results.read_text().splitlines()[1])["results"]
    assert {(r["file_path"], r["start_line"], r["end_line"], r["kind"]) for r in recorded} <= pooled
    code, _, err = run_cce("pool", str(fixtures), "--backends", "nope")
    assert code == 2 and "unknown backend 'nope'" in err


def test_overlapping_candidates_judged_otherwise_get_the_kind() -> None:
    case = parse_fixtures('{"id":"a","query":"q","expected":["x.c"]}\n').cases[0]
    struct = Candidate("ring.c", 12, 12, "struct_specifier", judgment="relevant")
    function = Candidate("ring.c", 12, 22, "function_definition", judgment="not")
    alone = Candidate("ring.c", 30, 40, "function_definition", judgment="relevant")
    judged = JudgedCase("a", "q", (struct, function, alone))
    applied = apply_judgments([case], [judged], {"a": {"id": "a", "query": "q"}})
    expected = applied.cases[0]["expected"]
    assert expected == ["x.c", "ring.c#struct_specifier@12-12", "ring.c@30-40"]
    anchors = [Anchor.parse(text) for text in expected]
    assert not any(anchor.matches(function) for anchor in anchors)
    assert applied.overlapping == ()


def test_apply_ends_anchors_at_the_last_line_of_the_file(tmp_path: Path, run_cce: RunCce) -> None:
    """A chunk running to the end of a newline-terminated file is numbered one line past
    it; the anchors written from it stop at the file's last line, so `cce check` has
    nothing to say about the tool's own output."""
    source = tmp_path / "corpus" / "src"
    source.mkdir(parents=True)
    (source / "shallow.ts").write_text(
        "export const retryLimit = 3;\nexport const retryDelay = 10;\n", encoding="utf-8"
    )
    (source / "other.ts").write_text("export const unrelated = 1;\n", encoding="utf-8")
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"a","query":"retry limit delay","expected":["src/other.ts"],"k":3}\n',
        encoding="utf-8",
    )
    judging = tmp_path / "judging.jsonl"
    code, _, err = run_cce("pool", str(fixtures), "--backends", "vector", "-o", str(judging))
    assert code == 0, err
    row = json.loads(judging.read_text(encoding="utf-8"))
    spans = {c["file_path"]: (c["start_line"], c["end_line"]) for c in row["candidates"]}
    assert spans["src/shallow.ts"] == (1, 3)
    for candidate in row["candidates"]:
        candidate["judgment"] = "relevant" if candidate["file_path"] == "src/shallow.ts" else "not"
    judged = tmp_path / "judged.jsonl"
    judged.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "labeled.jsonl"
    assert run_cce("pool", "--apply", str(judged), str(fixtures), "-o", str(out))[0] == 0
    case = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert case["expected"] == ["src/other.ts", "src/shallow.ts@1-2"]
    code, stdout, err = run_cce("check", str(out))
    assert code == 0, err
    assert "past the end" not in stdout + err
