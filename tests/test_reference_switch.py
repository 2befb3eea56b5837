"""The root conftest's reference-data switch: skip without data, fail when it is required.

Runs pytest in a subprocess on a one-test project that uses the `reference_path` fixture
of the workspace's conftest.py, under each combination of CCE_REFERENCE_DIR and
CCE_REQUIRE_REFERENCE that CI and developers use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TEST = """
from collections.abc import Callable
from pathlib import Path


def test_reads_reference(reference_path: Callable[..., Path]) -> None:
    assert reference_path("data.txt").read_text() == "x"
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    shutil.copy(ROOT / "conftest.py", project / "conftest.py")
    (project / "test_one.py").write_text(TEST)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CCE_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(project)],
        cwd=project,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def data(tmp_path: Path) -> Path:
    directory = tmp_path / "reference"
    directory.mkdir()
    (directory / "data.txt").write_text("x")
    return directory


def test_unset_directory_skips(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout and "CCE_REFERENCE_DIR is not set" in done.stdout


def test_unset_directory_fails_when_required(tmp_path: Path) -> None:
    done = _run(tmp_path, CCE_REQUIRE_REFERENCE="1")
    assert done.returncode == 1, done.stdout
    assert "1 error" in done.stdout or "1 failed" in done.stdout
    assert "CCE_REQUIRE_REFERENCE is set" in done.stdout


def test_missing_file_fails_when_required(tmp_path: Path, data: Path) -> None:
    (data / "data.txt").unlink()
    done = _run(tmp_path, CCE_REFERENCE_DIR=str(data), CCE_REQUIRE_REFERENCE="1")
    assert done.returncode == 1, done.stdout
    assert "data.txt does not exist" in done.stdout


def test_present_data_is_used(tmp_path: Path, data: Path) -> None:
    done = _run(tmp_path, CCE_REFERENCE_DIR=str(data), CCE_REQUIRE_REFERENCE="1")
    assert done.returncode == 0, done.stdout
    assert "1 passed" in done.stdout
