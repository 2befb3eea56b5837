"""The pre-commit hook: the shipped manifest, and a real `pre-commit run` in a temp repo.

The real run uses a `repo: local` hook whose entry is this interpreter running
`-m cce_fixtures validate`, so pre-commit installs nothing and needs no network; the
manifest test checks that the published hook declares the same command.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

import cce_fixtures.cli

HOOK_ID = "cce-fixtures-validate"


def _manifest_hook(repo_root: Path) -> dict[str, Any]:
    manifest = yaml.safe_load((repo_root / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert isinstance(manifest, list)
    hooks = [hook for hook in manifest if hook["id"] == HOOK_ID]
    assert len(hooks) == 1
    hook: dict[str, Any] = hooks[0]
    return hook


def test_manifest_declares_the_hook_consistently(repo_root: Path) -> None:
    hook = _manifest_hook(repo_root)
    assert hook["entry"] == "cce-fixtures validate"
    assert hook["language"] == "python"
    project = tomllib.loads(
        (repo_root / "packages" / "cce-fixtures" / "pyproject.toml").read_text(encoding="utf-8")
    )
    script, command = hook["entry"].split()
    assert project["project"]["scripts"][script] == "cce_fixtures.cli:main"
    assert callable(cce_fixtures.cli.main)
    assert command == "validate"


def test_manifest_file_pattern_selects_relevance_fixtures_only(repo_root: Path) -> None:
    pattern = re.compile(_manifest_hook(repo_root)["files"])
    assert pattern.search("eval/relevance/code.jsonl")
    assert pattern.search("relevance/docs.jsonl")
    assert not pattern.search("logs/run.jsonl")
    assert not pattern.search("eval/relevance/code.json")
    assert not pattern.search("eval/irrelevance/code.jsonl")


def test_pre_commit_accepts_the_manifest(repo_root: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", ".pre-commit-hooks.yaml"],
        cwd=repo_root,
        env=_hermetic_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _hermetic_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(
        HOME=str(home),
        PRE_COMMIT_HOME=str(home / "pre-commit-cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        NO_COLOR="1",
    )
    return env


def _git(repo: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_pre_commit_run_flags_the_broken_fixture(repo_root: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    fixtures = repo / "eval" / "relevance"
    fixtures.mkdir(parents=True)
    (fixtures / "good.jsonl").write_text(
        '{"schema":"cce.relevance/v1"}\n{"query":"a","expected":["auth.py"]}\n', newline=""
    )
    (fixtures / "bad.jsonl").write_text(
        '{"query":"a","expected":["auth.py#"]}\nnot json\n', newline=""
    )
    (repo / "unrelated.jsonl").write_text("not a fixture\n")
    entry = f"{shlex.quote(sys.executable)} -m cce_fixtures validate"
    config = {
        "repos": [
            {
                "repo": "local",
                "hooks": [
                    {
                        "id": HOOK_ID,
                        "name": "validate cce.relevance/v1 fixtures",
                        "entry": entry,
                        "language": "system",
                        "files": _manifest_hook(repo_root)["files"],
                    }
                ],
            }
        ]
    }
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    env = _hermetic_env(tmp_path)
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", ".")
    command = [sys.executable, "-m", "pre_commit", "run", HOOK_ID, "--all-files", "--color=never"]

    failed = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "eval/relevance/bad.jsonl:1: anchor \"auth.py#\" has an empty kind after '#'" in (
        failed.stdout
    )
    assert "eval/relevance/bad.jsonl:2: invalid JSON: " in failed.stdout
    assert "good.jsonl" not in failed.stdout
    assert "unrelated.jsonl" not in failed.stdout

    (fixtures / "bad.jsonl").write_text('{"query":"a","expected":["auth.py#function"]}\n')
    _git(repo, env, "add", ".")
    passed = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
