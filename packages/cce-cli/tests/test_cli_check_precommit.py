"""The `cce-check` pre-commit hook: the shipped manifest, and a real `pre-commit run`
of both fixture hooks (`cce-fixtures-validate`, `cce-check`) in a temporary repository.

The run uses `repo: local` hooks whose entries are this interpreter running the two
modules, so pre-commit installs nothing and needs no network; the manifest test checks
that the published hooks declare the same commands and file pattern.
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

REPO = Path(__file__).parents[3]


def _manifest() -> dict[str, dict[str, Any]]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return {hook["id"]: hook for hook in hooks}


def test_manifest_declares_cce_check_like_the_validator() -> None:
    hooks = _manifest()
    check, validate = hooks["cce-check"], hooks["cce-fixtures-validate"]
    assert check["entry"] == "cce check"
    assert check["language"] == "python"
    assert check["files"] == validate["files"]
    assert re.search(check["files"], "eval/relevance/code.jsonl")
    project = tomllib.loads((REPO / "packages" / "cce-cli" / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["cce"] == "cce_cli.entry:main"


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


def _local_hook(hook: dict[str, Any], module: str, command: str) -> dict[str, Any]:
    return {
        "id": hook["id"],
        "name": hook["name"],
        "entry": f"{shlex.quote(sys.executable)} -m {module} {command}",
        "language": "system",
        "files": hook["files"],
    }


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_pre_commit_runs_both_hooks_and_cce_check_flags_a_dead_anchor(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "auth.py").write_text("def login():\n    return True\n")
    fixtures = repo / "eval" / "relevance"
    fixtures.mkdir(parents=True)
    fixture = fixtures / "set.jsonl"
    fixture.write_text(
        '{"schema":"cce.relevance/v1","corpus":"../../src"}\n'
        '{"id":"login","query":"log in","expected":["auth.py#function_definition"]}\n'
        '{"id":"typo","query":"log in","expected":["aut.py"]}\n',
        newline="",
    )
    hooks = _manifest()
    config = {
        "repos": [
            {
                "repo": "local",
                "hooks": [
                    _local_hook(hooks["cce-fixtures-validate"], "cce_fixtures", "validate"),
                    _local_hook(hooks["cce-check"], "cce_cli", "check"),
                ],
            }
        ]
    }
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    env = _hermetic_env(tmp_path)
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", ".")
    command = [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color=never"]

    failed = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    # The set is valid, so only cce-check fails, naming the case and the suggestion.
    assert re.search(r"validate cce\.relevance/v1 fixtures\.+Passed", failed.stdout)
    assert re.search(r"check cce\.relevance/v1 fixture anchors.*\.+Failed", failed.stdout)
    assert (
        'eval/relevance/set.jsonl:3: case typo: anchor "aut.py": path aut.py is not in the '
        'index; did you mean "auth.py"?'
    ) in failed.stdout

    fixture.write_text(fixture.read_text().replace('"aut.py"', '"auth.py"'), newline="")
    _git(repo, env, "add", ".")
    passed = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.count("Passed") == 2
