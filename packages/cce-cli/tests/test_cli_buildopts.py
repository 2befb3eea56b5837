"""The shared build options: progress on stderr only, and stdout bytes never change."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cce_cli.commands import build_options as buildopts
from cce_cli.main import main

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_elapsed(text: str) -> str:
    return re.sub(r"elapsed( +): [0-9.]+s", r"elapsed\1: Xs", text)


def test_progress_goes_to_stderr_and_stdout_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    store = str(tmp_path / "index.json")
    base = ["index", str(root), "--store", store, "--no-metrics"]
    quiet = run([*base, "--no-progress"], capsys)
    quiet_bytes = Path(store).read_bytes()
    monkeypatch.setattr(buildopts, "PROGRESS_DELAY_S", 0.0)
    loud = run([*base, "--progress", "--no-cache", "--jobs", "1"], capsys)
    assert loud[0] == quiet[0] == 0
    assert without_elapsed(loud[1]) == without_elapsed(quiet[1])
    assert Path(store).read_bytes() == quiet_bytes
    assert quiet[2] == ""
    assert "indexing" in loud[2] and "file" in loud[2]


def test_progress_is_off_by_default_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buildopts, "PROGRESS_DELAY_S", 0.0)
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    code, _, err = run(["conformance", str(root), "-o", str(tmp_path / "c.json")], capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_integer(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["index", str(tmp_path), "--jobs", value])
    assert exited.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_no_cache_leaves_the_cache_directory_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], _private_build_cache: Path
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    out = str(tmp_path / "c.json")
    assert run(["conformance", str(root), "-o", out, "--no-cache"], capsys)[0] == 0
    assert not any(_private_build_cache.rglob("*.entry"))
    assert run(["conformance", str(root), "-o", out], capsys)[0] == 0
    assert any(_private_build_cache.rglob("*.entry"))
