"""`--protection strict` on index, conformance and relevance, and the reference-mode notice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.main import main

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

NOTICE = (
    "warning: --protection strict would also redact 1 secret(s) and skip 1 credential "
    "file(s) that the default protection kept (in .envrc, deploy.sh); re-run with "
    "--protection strict to leave them out\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def alpha():\n    return 1\n")
    (root / "deploy.sh").write_text('export DB_PASSWORD="hunter2-hunter2"\ndeploy\n')
    (root / ".envrc").write_text("export GITHUB_TOKEN=abc\n")
    return root


def test_default_index_keeps_bytes_and_prints_the_notice(run_cce: RunCce, repo: Path) -> None:
    code, _out, err = run_cce("index", str(repo), "--no-metrics")
    assert code == 0
    assert err == NOTICE
    store = (repo / ".cce" / "index.json").read_text()
    assert "hunter2-hunter2" in store and ".envrc" in store
    fingerprint = json.loads((repo / ".cce" / "fingerprint.json").read_text())
    assert "protection" not in fingerprint and fingerprint["redaction"] is True


def test_strict_index_redacts_skips_and_records_the_mode(run_cce: RunCce, repo: Path) -> None:
    code, out, err = run_cce("index", str(repo), "--no-metrics", "--protection", "strict")
    assert (code, err) == (0, "")
    assert "  sensitive skipped : 1\n" in out
    store = (repo / ".cce" / "index.json").read_text()
    assert "hunter2" not in store and ".envrc" not in store
    assert "[REDACTED:SECRET]" in store
    fingerprint = json.loads((repo / ".cce" / "fingerprint.json").read_text())
    assert fingerprint["protection"] == "strict"
    assert list(fingerprint) == sorted(fingerprint)


def test_strict_search_snippets_hold_no_secret(run_cce: RunCce, repo: Path) -> None:
    run_cce("index", str(repo), "--no-metrics", "--protection", "strict")
    store = str(repo / ".cce" / "index.json")
    code, out, _ = run_cce("search", "DB_PASSWORD deploy", "--store", store, "--no-metrics")
    assert code == 0 and "deploy.sh" in out and "hunter2" not in out


def test_allow_secrets_with_strict_is_a_usage_error(run_cce: RunCce, repo: Path) -> None:
    code, out, err = run_cce("index", str(repo), "--allow-secrets", "--protection", "strict")
    assert (code, out) == (2, "")
    assert err.startswith("error: --allow-secrets and --protection strict")
    assert not (repo / ".cce").exists()


def test_unknown_protection_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["index", str(repo), "--protection", "paranoid"])
    assert caught.value.code == 2


def test_conformance_strict(run_cce: RunCce, repo: Path, tmp_path: Path) -> None:
    out_default = tmp_path / "default.json"
    code, _, err = run_cce("conformance", str(repo), "-o", str(out_default))
    assert code == 0 and err == NOTICE
    out_strict = tmp_path / "strict.json"
    code, _, err = run_cce(
        "conformance", str(repo), "-o", str(out_strict), "--protection", "strict"
    )
    assert code == 0 and err == ""
    assert ".envrc" in out_default.read_text() and ".envrc" not in out_strict.read_text()


def _fixtures(path: Path) -> Path:
    path.write_text(
        '{"schema": "cce.relevance/v1", "k": 3}\n'
        '{"id": "q1", "query": "alpha", "expected": ["app.py"]}\n'
    )
    return path


def test_relevance_dir_strict_and_notice(run_cce: RunCce, repo: Path, tmp_path: Path) -> None:
    fixtures = str(_fixtures(tmp_path / "f.jsonl"))
    code, _, err = run_cce("relevance", fixtures, "--dir", str(repo), "--json")
    assert code == 0 and err == NOTICE
    code, _, err = run_cce(
        "relevance", fixtures, "--dir", str(repo), "--json", "--protection", "strict"
    )
    assert code == 0 and err == ""


def test_relevance_store_refuses_protection(run_cce: RunCce, repo: Path, tmp_path: Path) -> None:
    run_cce("index", str(repo), "--no-metrics")
    fixtures = str(_fixtures(tmp_path / "f.jsonl"))
    store = str(repo / ".cce" / "index.json")
    code, out, err = run_cce("relevance", fixtures, "--store", store, "--protection", "strict")
    assert (code, out) == (2, "")
    assert err.startswith("error: --protection applies when relevance builds the corpus")


def test_check_builds_with_strict_protection(run_cce: RunCce, repo: Path, tmp_path: Path) -> None:
    fixture = tmp_path / "f.jsonl"
    fixture.write_text(
        '{"schema": "cce.relevance/v1", "k": 3}\n'
        '{"id": "q1", "query": "token", "expected": [".envrc"]}\n'
    )
    code, out, _ = run_cce("check", str(fixture), "--dir", str(repo))
    assert code == 0 and ".envrc" not in out
    code, out, _ = run_cce("check", str(fixture), "--dir", str(repo), "--protection", "strict")
    assert code == 1 and ".envrc" in out  # the anchor names a file strict never indexes
    store = repo / ".cce" / "index.json"
    run_cce("index", str(repo), "--no-metrics")
    code, _, err = run_cce("check", str(fixture), "--store", str(store), "--protection", "strict")
    assert code == 2 and "--protection applies when check builds" in err


def test_the_notice_names_the_files_and_is_printed_once_per_corpus(
    run_cce: RunCce, repo: Path, tmp_path: Path
) -> None:
    fixtures = str(_fixtures(tmp_path / "f.jsonl"))
    argv = ["relevance", fixtures, "--dir", str(repo), "--json"]
    code, first, err = run_cce(*argv)
    assert (code, err) == (0, NOTICE)
    # The same corpus again: the build cache remembers the notice; the report is the same.
    assert run_cce(*argv) == (0, first, "")
    assert run_cce("index", str(repo), "--no-metrics")[2] == ""  # same files, same cache
    assert run_cce(*argv, "--verbose") == (0, first, NOTICE)
    # A secret file edited: the corpus changed, so the notice is shown again.
    (repo / "deploy.sh").write_text('export DB_PASSWORD="hunter3-hunter3"\ndeploy\n')
    code, _, err = run_cce(*argv)
    assert (code, err) == (0, NOTICE)
    assert run_cce(*argv)[2] == ""


def test_the_notice_names_five_files_then_counts_the_rest(run_cce: RunCce, repo: Path) -> None:
    for number in range(6):
        (repo / f"s{number}.sh").write_text(f'export API_PASSWORD="hunter2-{number}xyz"\n')
    code, _, err = run_cce("index", str(repo), "--no-metrics", "--no-cache")
    assert code == 0
    assert "kept (in .envrc, deploy.sh, s0.sh, s1.sh, s2.sh and 3 more); re-run" in err
    # Without a cache nothing can be remembered: the notice is printed every time.
    assert run_cce("index", str(repo), "--no-metrics", "--no-cache")[2] == err
