"""The shared build options: progress on stderr only, and stdout bytes never change."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.evaluation import building as buildopts
from cce_cli.main import main

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def without_elapsed(text: str) -> str:
    return re.sub(r"elapsed( +): [0-9.]+s", r"elapsed\1: Xs", text)


def test_progress_goes_to_stderr_and_stdout_is_unchanged(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    store = str(tmp_path / "index.json")
    base = ["index", str(root), "--store", store, "--no-metrics"]
    quiet = run_cce(*base, "--no-progress")
    quiet_bytes = Path(store).read_bytes()
    monkeypatch.setattr(buildopts, "PROGRESS_DELAY_S", 0.0)
    loud = run_cce(*base, "--progress", "--no-cache", "--jobs", "1")
    assert loud[0] == quiet[0] == 0
    assert without_elapsed(loud[1]) == without_elapsed(quiet[1])
    assert Path(store).read_bytes() == quiet_bytes
    assert quiet[2] == ""
    assert "indexing" in loud[2] and "file" in loud[2]


def test_progress_is_off_by_default_when_stderr_is_not_a_terminal(
    tmp_path: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buildopts, "PROGRESS_DELAY_S", 0.0)
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    code, _, err = run_cce("conformance", str(root), "-o", str(tmp_path / "c.json"))
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
    tmp_path: Path, run_cce: RunCce, _private_build_cache: Path
) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    out = str(tmp_path / "c.json")
    assert run_cce("conformance", str(root), "-o", out, "--no-cache")[0] == 0
    assert not any(_private_build_cache.rglob("*.entry"))
    assert run_cce("conformance", str(root), "-o", out)[0] == 0
    assert any(_private_build_cache.rglob("*.entry"))
