"""An output path that names one of the command's inputs is refused before any work.

Each case gives a command the same file (by its own path, a symlink or a hard link) as
an input and as an output, and checks the usage error (exit 2) and that the input's
bytes are untouched (docs/hostile-input.md#outputs-never-replace-inputs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cce_cli.main import main

FIXTURES = (
    '{"schema": "cce.relevance/v1", "k": 3}\n'
    '{"id": "q1", "query": "login user", "expected": ["auth.py"]}\n'
)


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "auth.py").write_text("def login(user):\n    return user\n")
    (tmp_path / "fx.jsonl").write_text(FIXTURES)
    (tmp_path / "judged.jsonl").write_text("{}\n")
    (tmp_path / "metrics.jsonl").write_text('{"event": "search"}\n')
    (tmp_path / "report.json").write_text('{"schema": "cce.relevance-report/v1"}\n')
    (tmp_path / "run.jsonl").write_text('{"schema": "cce.run/v1"}\n')
    (tmp_path / "cce.toml").write_text("")
    return tmp_path


def _symlink(tmp_path: Path, target: str) -> str:
    link = tmp_path / "link.out"
    link.symlink_to(tmp_path / target)
    return str(link)


def _hardlink(tmp_path: Path, target: str) -> str:
    link = tmp_path / "hard.out"
    os.link(tmp_path / target, link)
    return str(link)


def _dotdot(tmp_path: Path, target: str) -> str:
    (tmp_path / "sub").mkdir()
    return str(tmp_path / "sub" / ".." / target)


# (argv, the input file the output names); `{}` is the output path, `T/` the workspace.
CASES: list[tuple[str, list[str], str]] = [
    (
        "relevance-results",
        ["relevance", "T/fx.jsonl", "--dir", "T/repo", "--results", "{}"],
        "fx.jsonl",
    ),
    (
        "relevance-qrels",
        ["relevance", "T/fx.jsonl", "--dir", "T/repo", "--export-qrels", "{}"],
        "fx.jsonl",
    ),
    (
        "relevance-config",
        ["relevance", "T/fx.jsonl", "--dir", "T/repo", "--results", "{}"],
        "cce.toml",
    ),
    (
        "relevance-run",
        ["relevance", "T/fx.jsonl", "--dir", "T/repo", "--run", "x=T/run.jsonl", "--results", "{}"],
        "run.jsonl",
    ),
    ("pool", ["pool", "T/fx.jsonl", "--dir", "T/repo", "-o", "{}"], "fx.jsonl"),
    (
        "pool-apply-judged",
        ["pool", "T/fx.jsonl", "--apply", "T/judged.jsonl", "-o", "{}"],
        "judged.jsonl",
    ),
    (
        "pool-apply-fixtures",
        ["pool", "T/fx.jsonl", "--apply", "T/judged.jsonl", "-o", "{}"],
        "fx.jsonl",
    ),
    ("queries", ["queries", "T/metrics.jsonl", "--fixtures", "{}"], "metrics.jsonl"),
    ("report", ["report", "T/report.json", "-o", "{}"], "report.json"),
    (
        "report-fixtures",
        ["report", "T/report.json", "--fixtures", "T/fx.jsonl", "-o", "{}"],
        "fx.jsonl",
    ),
]

SPELLINGS: dict[str, Callable[[Path, str], str]] = {
    "path": lambda tmp_path, target: str(tmp_path / target),
    "symlink": _symlink,
    "hardlink": _hardlink,
    "dotdot": _dotdot,
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize(
    ("argv", "target"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_an_output_naming_an_input_is_a_usage_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spelling: str,
    argv: Sequence[str],
    target: str,
) -> None:
    workspace = _workspace(tmp_path)
    before = {path.name: path.read_bytes() for path in workspace.iterdir() if path.is_file()}
    output = SPELLINGS[spelling](workspace, target)
    args = [output if arg == "{}" else arg.replace("T/", f"{workspace}/", 1) for arg in argv]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    assert "is the same file as the input" in captured.err
    assert captured.err.startswith("error: ")
    assert "Choose another output path" in captured.err
    after = {name: (workspace / name).read_bytes() for name in before}
    assert after == before


def test_a_distinct_output_is_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = _workspace(tmp_path)
    (workspace / "cce.toml").unlink()
    out = workspace / "results.jsonl"
    code = main(
        [
            "relevance",
            str(workspace / "fx.jsonl"),
            "--dir",
            str(workspace / "repo"),
            "--results",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert out.read_text().startswith("{")
    assert (workspace / "fx.jsonl").read_text() == FIXTURES
