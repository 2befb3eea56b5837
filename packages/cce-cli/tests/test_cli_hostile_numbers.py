"""Integers past Python's `int(str)` digit limit and JSON nested past its recursion limit.

`json.loads` raises a plain `ValueError` for an integer of more than 4,300 digits and a
`RecursionError` for arrays nested 100,000 deep; in every file a command reads (fixture
anchors, reports, stores, event logs, judgments, run files, sources records) each must
be an `error:` line, or a skipped line where the docs say so, never a traceback
(docs/hostile-input.md#huge-integers-and-deep-nesting).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

DATA = Path(__file__).parent / "data"
BIG = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("def login(user):\n    return user\n")
    return root


def _fixtures(path: Path, anchor: str = "auth.py") -> Path:
    path.write_text(
        '{"schema": "cce.relevance/v1", "k": 3}\n'
        f'{{"id": "q1", "query": "login user", "expected": ["{anchor}"]}}\n'
    )
    return path


@pytest.mark.parametrize("command", ["relevance", "check"])
def test_a_huge_anchor_range_is_an_invalid_range(
    tmp_path: Path, run_cce: RunCce, command: str
) -> None:
    fixture = _fixtures(tmp_path / "f.jsonl", f"auth.py@1-{BIG}")
    code, out, err = run_cce(command, str(fixture), "--dir", str(_repo(tmp_path)))
    assert code == 1, err
    assert "has an invalid line range after '@'" in out + err  # check lists findings on stdout
    assert "Traceback" not in err


def test_validate_reports_a_huge_anchor_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cce_fixtures.cli import main as validate_main

    fixture = _fixtures(tmp_path / "f.jsonl", f"auth.py@{BIG}-{BIG}")
    code = validate_main(["validate", str(fixture)])
    captured = capsys.readouterr()
    assert code == 1
    assert "has an invalid line range after '@'" in captured.out + captured.err
    assert "Traceback" not in captured.err


def _report_with_big_number(tmp_path: Path) -> Path:
    text = (DATA / "diff-base.json").read_text()
    text = re.sub(r'"queries": \d+', f'"queries": {BIG}', text, count=1)
    path = tmp_path / "big.json"
    path.write_text(text)
    return path


def _deep(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    return path


@pytest.mark.parametrize("make", [_report_with_big_number, _deep], ids=["big", "deep"])
@pytest.mark.parametrize("command", ["diff", "plan", "report"])
def test_a_report_that_cannot_be_read_is_an_error(
    tmp_path: Path, run_cce: RunCce, make: object, command: str
) -> None:
    assert callable(make)
    report = str(make(tmp_path))
    args = (
        [command, report, str(DATA / "diff-head.json")] if command == "diff" else [command, report]
    )
    code, out, err = run_cce(*args)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {report}: line ")
    assert ("an integer of 5000 digits" if "big" in report else "nested too deeply") in err


def test_a_store_holding_a_huge_integer_is_refused(tmp_path: Path, run_cce: RunCce) -> None:
    root = _repo(tmp_path)
    assert run_cce("index", str(root), "--no-metrics")[0] == 0
    store = root / ".cce" / "index.json"
    text = store.read_text()
    store.write_text(re.sub(r'"start_line": ?\d+', f'"start_line":{BIG}', text, count=1))
    for part in (root / ".cce").iterdir():  # no sidecar to answer in the store's place
        if part.name.startswith("index.json") and part.name != "index.json":
            part.unlink() if part.is_file() else None
    code, out, err = run_cce("search", "login", "--store", str(store), "--no-metrics")
    assert (code, out) == (1, "")
    assert err == (
        f"error: could not load store {store}: not a cce store: it holds an integer of more "
        "than 4300 digits\n"
    )


def test_an_event_log_line_with_a_huge_integer_is_skipped(tmp_path: Path, run_cce: RunCce) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        f'{{"event": "search", "query": "lost", "ts": {BIG}}}\n'
        '{"event": "search", "query": "kept", "ts": "2026-01-01T00:00:00Z"}\n'
    )
    code, out, err = run_cce("queries", str(log))
    assert code == 0, err
    assert "kept" in out and "lost" not in out
    assert err == f"warning: {log}:1: not a JSON event (torn or foreign line)\n"


@pytest.mark.parametrize("body", [f'{{"schema": "cce.judging/v1", "n": {BIG}}}', DEEP])
def test_judgments_that_cannot_be_read_are_an_error(
    tmp_path: Path, run_cce: RunCce, body: str
) -> None:
    fixture = _fixtures(tmp_path / "f.jsonl")
    judged = tmp_path / "judged.jsonl"
    judged.write_text(body + "\n")
    code, out, err = run_cce(
        "pool", str(fixture), "--apply", str(judged), "-o", str(tmp_path / "out.jsonl")
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "body",
    [f'{{"schema": "cce.run/v1", "k": {BIG}}}', '{"schema": "cce.run/v1", "k": ' + DEEP + "}"],
)
def test_a_run_file_that_cannot_be_read_is_an_error(
    tmp_path: Path, run_cce: RunCce, body: str
) -> None:
    fixture = _fixtures(tmp_path / "f.jsonl")
    run = tmp_path / "run.jsonl"
    run.write_text(body + "\n")
    code, out, err = run_cce(
        "relevance", str(fixture), "--dir", str(_repo(tmp_path)), "--run", f"x={run}"
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "invalid JSON" in err


def test_a_deeply_nested_sources_record_is_a_warning(tmp_path: Path, run_cce: RunCce) -> None:
    root = _repo(tmp_path)
    assert run_cce("index", str(root), "--no-metrics")[0] == 0
    (root / ".cce" / "sources.json").write_text(DEEP)
    fixture = _fixtures(tmp_path / "f.jsonl")
    store = str(root / ".cce" / "index.json")
    code, _, err = run_cce("relevance", str(fixture), "--store", store)
    assert code == 0, err
    assert "its JSON is nested too deeply to be a sources record" in err
