"""Hostile input to the labeling commands: credentials in queries and snippets, bad
judgments, run files and event logs, and dates and counts past what they allow."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

CREDENTIAL_QUERIES = (
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV",
    "glpat-abcdefghij0123456789",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "Authorization: Bearer abcdef0123456789abcdef",
    "Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh",
    "DB_PASSWORD=hunter2hunter2",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    'client_secret: "abc123def456"',
    '"client_secret": "abc123def456"',
    "postgresql://admin:s3cr3tpw@db.example.com/app",
    "mysql -u root -ps3cr3tpw",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----",
)


def _search_log(path: Path, queries: Sequence[str], ts: str = "2026-11-01T12:00:30Z") -> Path:
    events = [
        {"event": "search", "id": f"e{n}", "query": query, "ts": ts}
        for n, query in enumerate(queries)
    ]
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


@pytest.mark.parametrize("secret", CREDENTIAL_QUERIES)
def test_queries_never_prints_or_drafts_a_credential(
    tmp_path: Path, run_cce: RunCce, secret: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config", secret])
    draft = tmp_path / "draft.jsonl"
    code, out, err = run_cce("queries", str(log), "--fixtures", str(draft))
    assert code == 0, err
    assert out.splitlines()[0].endswith("  load config") and len(out.splitlines()) == 1
    assert "1 distinct query dropped because they look like credentials" in err
    drafted = draft.read_text(encoding="utf-8")
    assert secret not in drafted and json.dumps(secret)[1:-1] not in drafted
    assert [json.loads(line)["query"] for line in drafted.splitlines()[1:]] == ["load config"]


@pytest.mark.parametrize(
    "since", ["2026-13-45", "2026-02-30", "2026-11-01T25:00", "2026-11-01T12:61:00Z", "soon"]
)
def test_queries_since_that_is_no_date_is_a_usage_error(
    tmp_path: Path, run_cce: RunCce, since: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    code, out, err = run_cce("queries", str(log), "--since", since)
    assert (code, out) == (2, "")
    assert "--since" in err and "2026-11-01T12:00:00Z" in err and "Traceback" not in err


def test_queries_since_compares_partial_times_as_times(tmp_path: Path, run_cce: RunCce) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"], ts="2026-11-01T12:00:30Z")
    for since in ("2026-11-01", "2026-11-01T12:00", "2026-11-01T12:00Z", "2026-11-01T12:00:30Z"):
        assert run_cce("queries", str(log), "--since", since)[1].endswith("  load config\n"), since
    for since in ("2026-11-02", "2026-11-01T12:01Z", "2026-11-01T12:00:31Z"):
        assert run_cce("queries", str(log), "--since", since)[1] == "", since


@pytest.mark.parametrize("k", ["18446744073709551616", "1" + "0" * 5000, "0"])
def test_queries_k_past_the_fixture_contract_is_a_usage_error(
    tmp_path: Path, run_cce: RunCce, k: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    draft = tmp_path / "draft.jsonl"
    code, out, err = run_cce("queries", str(log), "--fixtures", str(draft), "--k", k)
    assert (code, out) == (2, "")
    assert "--k" in err and not draft.exists()


def test_queries_largest_k_drafts_a_case_the_contract_reads(
    tmp_path: Path, run_cce: RunCce
) -> None:
    from cce_fixtures import MAX_K, parse_fixtures

    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    draft = tmp_path / "draft.jsonl"
    code = run_cce("queries", str(log), "--fixtures", str(draft), "--k", str(MAX_K))[0]
    assert code == 0
    row = json.loads(draft.read_text(encoding="utf-8").splitlines()[1])
    assert row["k"] == MAX_K
    row["expected"] = ["a.py"]
    assert parse_fixtures(json.dumps(row)).cases[0].k == MAX_K


POOLED_SECRETS = (
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "eyJhbGciOiJIUzI1NiJ9abcdefgh",
    "MIIEowIBAAKCAQEAabcdefghijklmnop",
)


@pytest.fixture
def secret_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "deploy.sh").write_text(
        "publish() {\n"
        "  export NPM_TOKEN=npm_abcdefghijklmnopqrstuvwxyz0123456789\n"
        "  export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        '  curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh" publish.example\n'
        "}\n",
        encoding="utf-8",
    )
    (root / "deploy_key.txt").write_text(
        "deploy key\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAabcdefghijklmnop\n",
        encoding="utf-8",
    )
    (root / ".npmrc").write_text(
        "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
        encoding="utf-8",
    )
    fixtures = tmp_path / "draft.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"publish","query":"publish token deploy key","expected":[]}\n',
        encoding="utf-8",
    )
    return fixtures


def test_pool_protection_strict_keeps_credentials_out_of_the_judging_file(
    secret_corpus: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    judging = tmp_path / "judging.jsonl"
    base = ["pool", str(secret_corpus), "--no-cache", "-o", str(judging)]
    code, _, err = run_cce(*base)
    assert code == 0, err
    leaked = judging.read_text(encoding="utf-8")
    assert any(secret in leaked for secret in POOLED_SECRETS)
    assert "re-run with --protection strict" in err
    code, _, err = run_cce(*base, "--protection", "strict")
    assert code == 0, err
    assert "re-run with" not in err
    written = judging.read_text(encoding="utf-8")
    assert "[REDACTED:" in written and ".npmrc" not in written
    assert not [secret for secret in POOLED_SECRETS if secret in written]


def test_pool_protection_strict_redacts_whatever_a_backend_returned() -> None:
    from cce_cli.labeling.pooling import pool_candidates
    from cce_retrieval import protect_text

    class Hit:
        file_path, start_line, end_line, kind = "a.env.sh", 1, 3, "block"
        content = "x = 1\nDB_PASSWORD=hunter2hunter2\n"

    plain = pool_candidates([[Hit()]], 1)
    protected = pool_candidates([[Hit()]], 1, lambda text, path: protect_text(text, "strict"))
    assert "hunter2hunter2" in plain[0].snippet
    assert protected[0].snippet == "x = 1\nDB_PASSWORD=[REDACTED:SECRET]"


def test_pool_protection_conflicts_with_a_store(
    secret_corpus: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    store = tmp_path / "corpus" / ".cce" / "index.json"
    assert run_cce("index", str(tmp_path / "corpus"), "--no-metrics")[0] == 0
    code, out, err = run_cce(
        "pool", str(secret_corpus), "--store", str(store), "--protection", "strict"
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: --protection applies when pool builds the corpus")


def _judging(candidates: Sequence[dict[str, object]], case_id: str = "a") -> str:
    line = {"candidates": candidates, "id": case_id, "query": "q", "schema": "cce.judging/v1"}
    return json.dumps(line, ensure_ascii=True) + "\n"


def _candidate(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "end_line": 12,
        "file_path": "README.md",
        "judgment": "relevant",
        "kind": "section",
        "start_line": 1,
    }
    return {**base, **fields}


@pytest.fixture
def drafts(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "README.md").write_text("".join(f"line {n}\n" for n in range(30)), "utf-8")
    fixtures = tmp_path / "draft.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        + "".join(f'{{"id":"{c}","query":"q","expected":[]}}\n' for c in "abcdef"),
        encoding="utf-8",
    )
    return fixtures


BAD_JUDGMENTS = (
    (_candidate(kind="", use_kind=True), "'use_kind' is true but 'kind' is empty"),
    (_candidate(file_path=""), "'file_path' is empty"),
    (_candidate(file_path="  "), "'file_path' is empty"),
    (_candidate(end_line=10**30), "'end_line' 1000000000000000000000000000000 is past"),
    (_candidate(start_line=2**64, end_line=2**64), "'start_line' 18446744073709551616 is past"),
    (_candidate(end_line=1e30), "'end_line' must be an integer"),
    (_candidate(file_path="docs#intro.md"), "'file_path' 'docs#intro.md' cannot be written"),
    (_candidate(kind=" section"), "'kind' ' section' cannot be written"),
    (_candidate(file_path="READ\udc80ME.md"), "'file_path' holds an unpaired surrogate"),
    (_candidate(kind="sec\ud800"), "'kind' holds an unpaired surrogate"),
)


@pytest.mark.parametrize(("candidate", "message"), BAD_JUDGMENTS)
def test_apply_refuses_a_judgment_that_makes_no_valid_anchor(
    drafts: Path,
    tmp_path: Path,
    run_cce: RunCce,
    candidate: dict[str, object],
    message: str,
) -> None:
    judged = tmp_path / "judged.jsonl"
    judged.write_text(_judging([_candidate(), candidate]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n", encoding="utf-8")
    code, stdout, err = run_cce("pool", "--apply", str(judged), str(drafts), "-o", str(out))
    assert (code, stdout) == (1, ""), err
    assert err.startswith(f"error: {judged}:1: candidate 2: {message}"), err
    assert "Traceback" not in err
    assert out.read_text(encoding="utf-8") == "previous\n"


def test_apply_names_every_bad_judgment(drafts: Path, tmp_path: Path, run_cce: RunCce) -> None:
    judged = tmp_path / "judged.jsonl"
    judged.write_text(
        _judging([_candidate(file_path="")], "a")
        + _judging([_candidate()], "b")
        + _judging([_candidate(), _candidate(kind="", use_kind=True)], "c"),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run_cce("pool", "--apply", str(judged), str(drafts), "-o", str(out))
    assert code == 1 and not out.exists()
    assert [line.split(": ")[1] for line in err.splitlines()] == [f"{judged}:1", f"{judged}:3"]
    assert all(line.startswith("error: ") for line in err.splitlines())


def test_apply_writes_fixtures_that_validate_from_kindless_overlapping_candidates(
    drafts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_cce: RunCce
) -> None:
    from cce_fixtures.cli import main as validate_main

    judged = tmp_path / "judged.jsonl"
    # A TREC run gives no kind: the overlapping candidates cannot be told apart by one.
    judged.write_text(
        _judging([_candidate(kind=""), _candidate(kind="", start_line=5, judgment="not")]),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run_cce("pool", "--apply", str(judged), str(drafts), "-o", str(out))
    assert code == 0, err
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[1])["expected"] == [
        "README.md@1-12"
    ]
    assert "also matches an overlapping candidate" in err
    capsys.readouterr()
    assert validate_main(["validate", str(out)]) == 0


def test_apply_writes_nothing_when_the_merged_fixtures_would_not_parse(
    drafts: Path,
    tmp_path: Path,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cce_cli.commands import pool
    from cce_cli.labeling.pooling import apply_judgments

    def broken(*args: object, **kwargs: object) -> object:
        applied = apply_judgments(*args, **kwargs)  # type: ignore[arg-type]
        return type(applied)(({**applied.cases[0], "expected": ["@1-12"]},), {}, (), 1, ())

    monkeypatch.setattr(pool, "apply_judgments", broken)
    judged = tmp_path / "judged.jsonl"
    judged.write_text(_judging([_candidate()]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n", encoding="utf-8")
    code, _, err = run_cce("pool", "--apply", str(judged), str(drafts), "-o", str(out))
    assert code == 1
    assert err.startswith(f"error: {judged}: the fixtures merged from these judgments would not")
    assert "anchor is empty" in err and f"{out} is unchanged" in err
    assert out.read_text(encoding="utf-8") == "previous\n"


def test_apply_refuses_fixtures_holding_a_surrogate_escape(tmp_path: Path, run_cce: RunCce) -> None:
    fixtures = tmp_path / "draft.jsonl"
    fixtures.write_text('{"id":"a","query":"q\\udc80","expected":[]}\n', encoding="utf-8")
    judged = tmp_path / "judged.jsonl"
    judged.write_text(_judging([_candidate()]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    code, _, err = run_cce("pool", "--apply", str(judged), str(fixtures), "-o", str(out))
    assert code == 1 and err.startswith(f"error: {fixtures}: ") and "surrogate" in err
    assert not out.exists()


@pytest.fixture
def run_fixtures(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.rs").write_text("fn a() {\n    1\n}\n", encoding="utf-8")
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"a","query":"q","expected":["a.rs@1-2"]}\n',
        encoding="utf-8",
    )
    return fixtures


BAD_RUNS = (
    ("run.trec", "a Q0 a.rs:23-17 1 1.0 t\n", "line 1: docno 'a.rs:23-17' ends before it starts"),
    ("run.trec", f"a Q0 a.rs:1-{'9' * 5000} 1 1.0 t\n", "line 1: docno 'a.rs:1-999"),
    (
        "run.jsonl",
        '{"schema":"cce.run/v1"}\n{"backend":"x","id":"a","results":[{"rank":1,'
        '"file_path":"a.rs","start_line":5,"end_line":2,"score":1}]}\n',
        "line 2: result a.rs:5-2 ends before it starts",
    ),
    (
        "run.jsonl",
        '{"schema":"cce.run/v1"}\n{"backend":"x","id":"a","results":[{"rank":1,'
        '"file_path":"a\\udc80.rs","start_line":1,"end_line":2,"score":1}]}\n',
        "line 2: `file_path` holds an unpaired surrogate",
    ),
    (
        "run.jsonl",
        '{"schema":"cce.run/v1"}\n{"backend":"x","id":"a","results":[{"rank":1,'
        '"file_path":"a.rs","kind":"\\ud800","start_line":1,"end_line":2,"score":1}]}\n',
        "line 2: `kind` holds an unpaired surrogate",
    ),
)


@pytest.mark.parametrize("command", ["relevance", "pool"])
@pytest.mark.parametrize(("name", "text", "message"), BAD_RUNS)
def test_a_run_file_with_a_bad_span_or_text_is_an_error_naming_its_line(
    run_fixtures: Path,
    tmp_path: Path,
    run_cce: RunCce,
    command: str,
    name: str,
    text: str,
    message: str,
) -> None:
    run = tmp_path / name
    run.write_text(text, encoding="utf-8")
    argv = [command, str(run_fixtures), "--run", f"x={run}", "--no-cache"]
    if command == "relevance":
        argv += ["--backend", "x"]
    else:
        argv += ["--backends", "x", "-o", str(tmp_path / "judging.jsonl")]
    code, out, err = run_cce(*argv)
    assert (code, out) == (1, ""), err
    assert err.startswith(f"error: {run} {message}"), err
    assert "Traceback" not in err


def test_apply_weighs_a_large_case_without_comparing_every_pair(tmp_path: Path) -> None:
    """50,000 candidates in one case: comparing every pair took minutes; the deadline,
    far above the time it takes now, only proves that is gone."""
    script = textwrap.dedent(
        """
        import random
        from cce_cli.labeling.pooling import Candidate, JudgedCase, apply_judgments
        from cce_fixtures import parse_fixtures

        chooser = random.Random(7)
        candidates = []
        for n in range(50_000):
            start = chooser.randint(1, 2_000)
            candidates.append(Candidate(
                f"src/m{n % 400}.py", start, start + chooser.randint(0, 40),
                chooser.choice(("function", "class")), "",
                chooser.choice(("relevant", "secondary", "not", None)),
            ))
        case = parse_fixtures('{"id":"big","query":"q","expected":["x.py"]}').cases[0]
        raw = {"big": {"id": "big", "query": "q", "expected": ["x.py"]}}
        applied = apply_judgments([case], [JudgedCase("big", "q", tuple(candidates))], raw)
        print(len(applied.cases[0]["expected"]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert int(done.stdout) > 10_000


def test_queries_skips_a_query_holding_a_surrogate_escape(tmp_path: Path, run_cce: RunCce) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        '{"event":"search","query":"a\\udc80b","ts":"2026-11-01T12:00:00Z"}\n'
        '{"event":"search","query":"load config","ts":"2026-11-01T12:00:00Z"}\n',
        encoding="utf-8",
    )
    draft = tmp_path / "draft.jsonl"
    code, out, err = run_cce("queries", str(log), "--fixtures", str(draft))
    assert code == 0, err
    assert out.endswith("  load config\n") and len(out.splitlines()) == 1
    assert f"warning: {log}:1: search query holds an unpaired surrogate escape" in err
    assert len(draft.read_text(encoding="utf-8").splitlines()) == 2


def test_apply_names_a_judged_file_that_is_not_utf8_as_such(
    drafts: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    judged = tmp_path / "judged.jsonl"
    judged.write_bytes(b'{"id":"a\xff"}\n')
    out = tmp_path / "out.jsonl"
    code, _, err = run_cce("pool", "--apply", str(judged), str(drafts), "-o", str(out))
    assert code == 1 and not out.exists()
    assert (
        err == f"error: could not read judged file {judged}: stream did not contain valid UTF-8\n"
    )
