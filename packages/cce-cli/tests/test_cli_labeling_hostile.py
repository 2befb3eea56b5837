"""Hostile input to the labeling commands: credentials in queries and snippets, bad
judgments, run files and event logs, and dates and counts past what they allow."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from cce_cli.main import main

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


def _cce(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _search_log(path: Path, queries: Sequence[str], ts: str = "2026-11-01T12:00:30Z") -> Path:
    events = [
        {"event": "search", "id": f"e{n}", "query": query, "ts": ts}
        for n, query in enumerate(queries)
    ]
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


@pytest.mark.parametrize("secret", CREDENTIAL_QUERIES)
def test_queries_never_prints_or_drafts_a_credential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], secret: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config", secret])
    draft = tmp_path / "draft.jsonl"
    code, out, err = _cce(["queries", str(log), "--fixtures", str(draft)], capsys)
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
    tmp_path: Path, capsys: pytest.CaptureFixture[str], since: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    code, out, err = _cce(["queries", str(log), "--since", since], capsys)
    assert (code, out) == (2, "")
    assert "--since" in err and "2026-11-01T12:00:00Z" in err and "Traceback" not in err


def test_queries_since_compares_partial_times_as_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"], ts="2026-11-01T12:00:30Z")
    for since in ("2026-11-01", "2026-11-01T12:00", "2026-11-01T12:00Z", "2026-11-01T12:00:30Z"):
        assert _cce(["queries", str(log), "--since", since], capsys)[1].endswith(
            "  load config\n"
        ), since
    for since in ("2026-11-02", "2026-11-01T12:01Z", "2026-11-01T12:00:31Z"):
        assert _cce(["queries", str(log), "--since", since], capsys)[1] == "", since


@pytest.mark.parametrize("k", ["18446744073709551616", "1" + "0" * 5000, "0"])
def test_queries_k_past_the_fixture_contract_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], k: str
) -> None:
    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    draft = tmp_path / "draft.jsonl"
    code, out, err = _cce(["queries", str(log), "--fixtures", str(draft), "--k", k], capsys)
    assert (code, out) == (2, "")
    assert "--k" in err and not draft.exists()


def test_queries_largest_k_drafts_a_case_the_contract_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cce_fixtures import MAX_K, parse_fixtures

    log = _search_log(tmp_path / "metrics.jsonl", ["load config"])
    draft = tmp_path / "draft.jsonl"
    code = _cce(["queries", str(log), "--fixtures", str(draft), "--k", str(MAX_K)], capsys)[0]
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
    secret_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judging = tmp_path / "judging.jsonl"
    base = ["pool", str(secret_corpus), "--no-cache", "-o", str(judging)]
    code, _, err = _cce(base, capsys)
    assert code == 0, err
    leaked = judging.read_text(encoding="utf-8")
    assert any(secret in leaked for secret in POOLED_SECRETS)
    assert "re-run with --protection strict" in err
    code, _, err = _cce([*base, "--protection", "strict"], capsys)
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
    secret_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "corpus" / ".cce" / "index.json"
    assert _cce(["index", str(tmp_path / "corpus"), "--no-metrics"], capsys)[0] == 0
    code, out, err = _cce(
        ["pool", str(secret_corpus), "--store", str(store), "--protection", "strict"], capsys
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: --protection applies when pool builds the corpus")
