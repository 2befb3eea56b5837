"""Reports built from input files that are hostile or merely mismatched: the code they
show, the ids they cut, the fixtures they compare (docs/hostile-input.md, docs/gating.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cce_retrieval import chunk_file

DATA = Path(__file__).parent / "data"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


# --- a huge case id in the pull-request comment ----------------------------------------------


def test_a_200_kb_case_id_is_cut_in_the_comment_not_dropped(
    tmp_path: Path, run_cce: RunCce
) -> None:
    huge = "q-ring-" + "x" * 200_000
    paths = []
    for source in (BASE, HEAD):
        body: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
        for backend in body["backends"]:
            for row in backend["per_query"]:
                if row["id"] == "q-ring":  # a query the head makes worse
                    row["id"] = huge
        target = tmp_path / source.name
        target.write_text(json.dumps(body), encoding="utf-8")
        paths.append(target)
    status, out, _ = run_cce("diff", str(paths[0]), str(paths[1]), "--format", "markdown")
    assert status == 0
    assert len(out) <= 65_536
    rows = [line for line in out.splitlines() if line.startswith("| q-ring-")]
    assert len(rows) == 1, "the row of the query with the long id is kept"
    assert "q-ring-" + "x" * 92 + "…" in rows[0]
    assert "left out to" not in out


# --- the code a report shows is what the index kept ------------------------------------------

PASSWORD = "hunter2-Sup3rSecret"
KEY_BODY = "MIIEpAIBAAKCAQEAx7Tb2KdQ9pT0pUlY2v0wZ3Rj8JmKp1pRr7C0n0XcV2L3q"
SETTINGS = (
    "import os\n"
    "\n"
    "\n"
    "def database_settings():\n"
    f'    DB_PASSWORD = "{PASSWORD}"\n'
    '    return {"host": os.environ.get("DB_HOST"), "password": DB_PASSWORD}\n'
)
KEYS = (
    'PEM = """-----BEGIN RSA PRIVATE KEY-----\n'
    f"{KEY_BODY}\n"
    f"{KEY_BODY[::-1]}\n"
    f"{KEY_BODY.lower()}\n"
    '-----END RSA PRIVATE KEY-----"""\n'
    "\n"
    "\n"
    "def load_signing_material():\n"
    "    return PEM.encode()\n"
)


def _secret_workspace(root: Path) -> Path:
    """A corpus with a password in code and a private key above a function, and the
    fixtures whose queries find both; returns the fixture file."""
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (corpus / "keys.py").write_text(KEYS, encoding="utf-8")
    fixtures = root / "fixtures.jsonl"
    fixtures.write_text(
        '{"schema": "cce.relevance/v1", "corpus": "corpus"}\n'
        '{"id": "db", "query": "database settings password", "expected": ["settings.py"], '
        '"k": 5}\n'
        '{"id": "sign", "query": "load_signing_material PEM encode", "expected": ["keys.py"], '
        '"k": 5}\n',
        encoding="utf-8",
    )
    return fixtures


def _code_in_page(page: str) -> str:
    start = page.index('<script type="application/json"')
    data = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    return "\n".join(line for lines in data["code"] for line in lines)


@pytest.mark.parametrize("protection", ["reference", "strict"])
def test_report_pages_never_show_what_the_index_redacted(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch, protection: str
) -> None:
    fixtures = _secret_workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["relevance", str(fixtures), "--protection", protection, "--backend", "bm25"]
    status, report, err = run_cce(*argv, "--json", "--results", "run.jsonl")
    assert status == 0, err
    (tmp_path / "report.json").write_text(report, encoding="utf-8")
    status, from_results, err = run_cce("report", "report.json", "--results", "run.jsonl")
    assert status == 0, err
    status, in_run, err = run_cce(*argv, "--format", "html")
    assert status == 0, err
    for page in (from_results, in_run):
        code = _code_in_page(page)
        assert KEY_BODY not in page and KEY_BODY[::-1] not in page
        assert KEY_BODY.lower() not in page
        assert "def load_signing_material():" in code  # the stored lines, not the key's
        if protection == "strict":
            assert PASSWORD not in page
            assert "[REDACTED:" in code


def test_a_results_file_naming_a_corpus_outside_the_working_directory_shows_no_code(
    tmp_path: Path, run_cce: RunCce, report_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "etc"
    outside.mkdir()
    secret = "root:x:0:0:root:/root:/bin/bash\n"
    (outside / "passwd").write_text(secret, encoding="utf-8")
    (report_data / "link").symlink_to(outside)
    (report_data / "corpus" / "linked.py").symlink_to(outside / "passwd")
    chunk = chunk_file("passwd", secret).chunks[0]
    linked = chunk_file("linked.py", secret).chunks[0]
    monkeypatch.chdir(report_data)

    def page_for(corpus: str, path: str, chunk_id: str, *extra: str) -> tuple[str, str]:
        header = {"corpus": corpus, "embedder": "hash", "schema": "cce.run/v1"}
        hit = {
            "chunk_id": chunk_id,
            "end_line": 1,
            "file_path": path,
            "kind": "module",
            "matches": [],
            "rank": 1,
            "score": "1.000000",
            "start_line": 1,
        }
        record = {"backend": "bm25", "id": "code-load-config", "k": 5, "query": "q"}
        lines = [json.dumps(header), json.dumps({**record, "results": [hit]})]
        (report_data / "evil.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        status, out, err = run_cce("report", "bm25.report.json", "--results", "evil.jsonl", *extra)
        assert status == 0, err
        return out, err

    page, err = page_for(str(outside), "passwd", chunk.chunk_id)
    assert "root:x:0:0" not in page
    assert "is outside the working directory, so no code is shown" in err
    page, _ = page_for("link", "passwd", chunk.chunk_id)  # inside by name, outside by link
    assert "root:x:0:0" not in page
    page, _ = page_for("corpus", "linked.py", linked.chunk_id)  # a file linked out of it
    assert "root:x:0:0" not in page
    page, err = page_for(str(outside), "passwd", chunk.chunk_id, "--corpus", str(outside))
    assert "root:x:0:0" in page and err == ""  # the command line's corpus is trusted


# --- suite reports over different member fixtures ----------------------------------------------


def _suite_report(path: Path, source: Path, fixture_hash: str) -> str:
    """A suite report with one member whose report is `source`'s, and whose provenance
    records `fixture_hash` as that member's fixture file."""
    member_report = json.loads(source.read_text(encoding="utf-8"))
    member_report.pop("provenance", None)
    document = {
        "schema": "cce.suite.report/v1",
        "members": [{"name": "alpha", "groups": [], "report": member_report}],
        "provenance": {"members": [{"name": "alpha", "fixtures_sha256": fixture_hash}]},
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_diff_strict_refuses_suite_reports_whose_member_fixtures_differ(
    tmp_path: Path, run_cce: RunCce
) -> None:
    base = _suite_report(tmp_path / "base.json", BASE, "a" * 64)
    head = _suite_report(tmp_path / "head.json", HEAD, "b" * 64)
    status, out, err = run_cce("diff", base, head, "--strict")
    assert (status, out) == (1, "")
    assert err == (
        f"error: the fixture files of alpha differ between {base} and {head} (fixtures_sha256 "
        "of their provenance): the same case ids may not ask the same questions; --strict "
        "refuses to compare them\n"
    )
    status, out, err = run_cce("diff", base, head)
    assert status == 0 and out
    assert err.startswith("warning: the fixture files of alpha differ between")
    same = _suite_report(tmp_path / "same.json", HEAD, "a" * 64)
    status, out, err = run_cce("diff", base, same, "--strict")
    assert (status, err) == (0, "")


def test_an_external_run_shows_the_stored_text_of_the_lines_it_names(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixtures = _secret_workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    # keys.py's function is at lines 8-9 of the file and 4-5 of the store, where the
    # redacted key block is one line; the file's lines 4-5 are the key's body.
    (tmp_path / "run.trec").write_text("sign Q0 keys.py:4-5 1 1.0 tag\n", encoding="utf-8")
    argv = ["relevance", str(fixtures), "--run", "x=run.trec", "--backend", "x"]
    status, page, err = run_cce(*argv, "--format", "html")
    assert status == 0, err
    assert KEY_BODY not in page and KEY_BODY[::-1] not in page
    assert "def load_signing_material():" in _code_in_page(page)
