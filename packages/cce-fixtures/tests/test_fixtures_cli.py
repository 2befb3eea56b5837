"""The `cce-fixtures validate` command: output format, exit status, and reference files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cce_fixtures.cli import file_problems, main

_VALID = '{"schema":"cce.relevance/v1"}\n{"query":"a","expected":["auth.py"]}\n'
# A bad anchor on line 3 and bad JSON on line 5, with a valid case between them.
_BROKEN = (
    '{"schema":"cce.relevance/v1"}\n'
    '{"query":"a","expected":["auth.py"]}\n'
    '{"query":"b","expected":["f.py@42"]}\n'
    '{"query":"c","expected":["c.py"]}\n'
    '{"query":"d",\n'
)


def _write(directory: Path, name: str, content: str | bytes) -> str:
    path = directory / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return str(path)


def test_bad_anchor_on_line_3_and_bad_json_on_line_5_are_both_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = _write(tmp_path, "broken.jsonl", _BROKEN)
    assert main(["validate", broken]) == 1
    assert capsys.readouterr().out == (
        f"{broken}:3: anchor \"f.py@42\" has an invalid line range after '@'; "
        "expected a-b with 1 <= a <= b\n"
        f"{broken}:5: invalid JSON: Expecting property name enclosed in double quotes "
        "at column 14\n"
    )


def test_valid_files_print_nothing_and_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    valid = _write(tmp_path, "valid.jsonl", _VALID)
    assert main(["validate", valid, valid]) == 0
    assert capsys.readouterr() == ("", "")


def test_every_file_is_checked_even_after_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = _write(tmp_path, "empty.jsonl", "")
    valid = _write(tmp_path, "valid.jsonl", _VALID)
    latin1 = _write(tmp_path, "latin1.jsonl", b'{"query":"caf\xe9","expected":["a"]}')
    missing = str(tmp_path / "missing.jsonl")
    assert main(["validate", empty, valid, latin1, missing]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{empty}: the fixture set contains no query cases",
        f"{latin1}: could not read fixtures: invalid UTF-8 at byte offset 13",
        f"{missing}: could not read fixtures: No such file or directory",
    ]


def test_a_directory_is_an_unreadable_file(tmp_path: Path) -> None:
    assert file_problems(str(tmp_path)) == [f"{tmp_path}: could not read fixtures: Is a directory"]


@pytest.mark.parametrize("argv", [[], ["validate"], ["check", "x.jsonl"], ["--bogus"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage: cce-fixtures" in capsys.readouterr().err


def test_reference_fixture_sets_are_valid(reference_relevance_dir: Path) -> None:
    files = [str(reference_relevance_dir / name) for name in ("code.jsonl", "docs.jsonl")]
    assert all(file_problems(path) == [] for path in files)


def test_python_dash_m_runs_the_same_command(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.jsonl", _BROKEN)
    valid = _write(tmp_path, "valid.jsonl", _VALID)
    failed = subprocess.run(
        [sys.executable, "-m", "cce_fixtures", "validate", valid, broken],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 1
    assert [line.split(": ")[0] for line in failed.stdout.splitlines()] == [
        f"{broken}:3",
        f"{broken}:5",
    ]
    passed = subprocess.run(
        [sys.executable, "-m", "cce_fixtures", "validate", valid],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (passed.returncode, passed.stdout) == (0, "")
