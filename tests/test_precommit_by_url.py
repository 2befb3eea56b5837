"""pre-commit installs this repository's hooks by URL, from a clean cache, offline.

A consumer writes `repo: <url>`, `rev: <tag>` and a hook id; pre-commit then clones the
repository at that tag, creates a virtual environment and runs `pip install .` at the
clone's root. These tests do exactly that against a `file://` repository made from this
working tree (its tracked and new files, committed and tagged), with a fresh
PRE_COMMIT_HOME, and check both hooks the manifest offers: `cce-fixtures-validate`
(the fixture grammar) and `cce-check` (which needs the whole `cce` command, tree-sitter
and numpy included).

Hermetic: pip runs with `--no-index` and finds every wheel in a local wheelhouse that
the test fills by repacking distributions already installed in this environment (the
build backend, its dependencies and the root wheel's runtime dependencies). Nothing is
downloaded; a missing distribution fails the test instead of reaching the network.
"""

from __future__ import annotations

import csv
import importlib.metadata
import io
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
TAG = "v0.0.0-hook-test"

pytestmark = [
    pytest.mark.skipif(
        shutil.which("git") is None or not (ROOT / ".git").exists(),
        reason="needs git and a git checkout of the project",
    ),
    # Each test builds and installs the whole project in a fresh environment: minutes,
    # not seconds. `.ci/run` runs them (`nox -s hooks -- -m slow`).
    pytest.mark.slow,
]


def _env(home: Path, wheelhouse: Path, cache: Path | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PIP_", "VIRTUALENV_", "PRE_COMMIT", "UV_"))
    }
    env.update(
        HOME=str(home),
        PRE_COMMIT_HOME=str(cache or home / "pre-commit-cache"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="cce",
        GIT_AUTHOR_EMAIL="cce@example.invalid",
        GIT_COMMITTER_NAME="cce",
        GIT_COMMITTER_EMAIL="cce@example.invalid",
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        NO_COLOR="1",
    )
    return env


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


# --- a local wheelhouse from the installed distributions ----------------------------------


def _wheel_tag(wheel_file: str) -> str:
    """The compressed tag set (`py-abi-platform`) of an installed distribution."""
    tags = [
        line.split(":", 1)[1].strip() for line in wheel_file.splitlines() if line.startswith("Tag:")
    ]
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(part) for part in parts)


def _repack(dist: importlib.metadata.Distribution, wheelhouse: Path) -> None:
    """Write an installed distribution back into a wheel, from the files its RECORD lists."""
    wheel_text = dist.read_text("WHEEL")
    assert wheel_text is not None, f"{dist.metadata['Name']} was not installed from a wheel"
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    target = wheelhouse / f"{name}-{dist.version}-{_wheel_tag(wheel_text)}.whl"
    record = dist.read_text("RECORD") or ""
    rows = [row for row in csv.reader(io.StringIO(record)) if row]
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for row in rows:
            relative = row[0]
            if relative.startswith("..") or relative.startswith("/"):
                continue  # console scripts: pip writes them again from entry_points.txt
            if relative.endswith(("/INSTALLER", "/REQUESTED", "/direct_url.json")):
                continue
            source = Path(str(dist.locate_file(relative)))
            if source.is_file():
                archive.write(source, relative)


def _closure(requirements: Iterable[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions that satisfy `requirements`, transitively."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(requirement.name)
        if key in seen:
            continue
        dist = importlib.metadata.distribution(requirement.name)
        seen[key] = dist
        pending.extend(Requirement(text) for text in dist.requires or [])
    return [seen[key] for key in sorted(seen)]


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    needed = [*project["build-system"]["requires"], *project["project"]["dependencies"]]
    house = tmp_path_factory.mktemp("wheelhouse")
    for dist in _closure(needed):
        _repack(dist, house)
    return house


# --- the upstream repository and a consumer -----------------------------------------------


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PRE_COMMIT_HOME for this module, empty at its start: both hooks share the clone
    and its environment, which pre-commit builds once (that is the expensive part)."""
    return tmp_path_factory.mktemp("pre-commit-cache")


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree as a fresh repository with one tagged commit."""
    repo = tmp_path_factory.mktemp("upstream")
    home = tmp_path_factory.mktemp("git-home")
    env = _env(home, home)
    listed = _git(ROOT, env, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if source.is_file():
            destination = repo / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    _git(repo, env, "init", "-q")
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-q", "-m", "snapshot")
    _git(repo, env, "tag", TAG)
    return repo


def _consumer(tmp_path: Path, upstream: Path, env: dict[str, str], hook_id: str) -> Path:
    repo = tmp_path / "consumer"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "auth.py").write_text("def login(user):\n    return user\n")
    config = {"repos": [{"repo": upstream.as_uri(), "rev": TAG, "hooks": [{"id": hook_id}]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    _git(repo, env, "init", "-q")
    return repo


def _run(repo: Path, env: dict[str, str], hook_id: str) -> subprocess.CompletedProcess[str]:
    _git(repo, env, "add", "-A")
    # Only the hook's own environment may provide the command (as on a user's machine).
    env = {
        **env,
        "PATH": os.pathsep.join(
            p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)
        ),
    }
    command = [sys.executable, "-m", "pre_commit", "run", hook_id, "--all-files", "--color=never"]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, check=False)


def test_the_validate_hook_installs_by_url_and_flags_a_broken_fixture(
    tmp_path: Path, upstream: Path, wheelhouse: Path, cache: Path
) -> None:
    env = _env(tmp_path, wheelhouse, cache)
    repo = _consumer(tmp_path, upstream, env, "cce-fixtures-validate")
    fixtures = repo / "eval" / "relevance"
    fixtures.mkdir(parents=True)
    (fixtures / "code.jsonl").write_text('{"query":"login","expected":["auth.py#"]}\n')

    failed = _run(repo, env, "cce-fixtures-validate")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert 'eval/relevance/code.jsonl:1: anchor "auth.py#" has an empty kind' in failed.stdout
    # pre-commit built the hook's environment from the clone: `pip install .` at its root
    # gave it both console scripts of the root wheel.
    environments = list(cache.glob("repo*/py_env-*/bin"))
    assert len(environments) == 1
    assert {"cce", "cce-fixtures"} <= {path.name for path in environments[0].iterdir()}

    (fixtures / "code.jsonl").write_text('{"query":"login","expected":["auth.py"]}\n')
    passed = _run(repo, env, "cce-fixtures-validate")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def test_the_check_hook_runs_the_whole_cce_command(
    tmp_path: Path, upstream: Path, wheelhouse: Path, cache: Path
) -> None:
    env = _env(tmp_path, wheelhouse, cache)
    repo = _consumer(tmp_path, upstream, env, "cce-check")
    fixtures = repo / "relevance"
    fixtures.mkdir()
    header = '{"schema":"cce.relevance/v1","corpus":"../src"}\n'
    (fixtures / "code.jsonl").write_text(
        header + '{"id":"gone","query":"login","expected":["moved.py"]}\n'
    )

    failed = _run(repo, env, "cce-check")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "relevance/code.jsonl:2:" in failed.stdout and "moved.py" in failed.stdout

    (fixtures / "code.jsonl").write_text(
        header + '{"id":"ok","query":"login","expected":["auth.py#function_definition"]}\n'
    )
    passed = _run(repo, env, "cce-check")
    assert passed.returncode == 0, passed.stdout + passed.stderr
