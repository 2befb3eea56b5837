"""The workspace root's wheel stays the sum of its members.

Why it exists: pre-commit installs this repository's hooks with `pip install .` at the
root, so the root's pyproject.toml builds one wheel holding all five packages. Its
dependency list, its console scripts and its package list repeat what the members
declare; these tests fail as soon as a member changes and the root does not follow.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = ["cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli"]


def _toml(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _member(name: str) -> dict[str, Any]:
    return _toml(ROOT / "packages" / name / "pyproject.toml")


def test_root_runtime_dependencies_are_the_members_third_party_ones() -> None:
    wanted = {
        requirement
        for name in MEMBERS
        for requirement in _member(name)["project"]["dependencies"]
        if not requirement.startswith("cce-")
    }
    assert set(_toml(ROOT / "pyproject.toml")["project"]["dependencies"]) == wanted


def test_root_extras_are_the_members_third_party_ones() -> None:
    wanted: dict[str, set[str]] = {}
    for name in MEMBERS:
        extras = _member(name)["project"].get("optional-dependencies", {})
        for extra, requirements in extras.items():
            wanted.setdefault(extra, set()).update(
                r for r in requirements if not r.startswith("cce-")
            )
    root = _toml(ROOT / "pyproject.toml")["project"].get("optional-dependencies", {})
    assert {extra: set(requirements) for extra, requirements in root.items()} == wanted


def test_root_wheel_carries_every_member_package_and_script() -> None:
    root = _toml(ROOT / "pyproject.toml")
    packages = root["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert packages == [f"packages/{name}/src/{name.replace('-', '_')}" for name in MEMBERS]
    scripts: dict[str, str] = {}
    for name in MEMBERS:
        scripts.update(_member(name)["project"].get("scripts", {}))
    assert root["project"]["scripts"] == scripts


def test_uv_installs_the_members_and_never_builds_the_root() -> None:
    root = _toml(ROOT / "pyproject.toml")
    assert root["tool"]["uv"]["package"] is False
    assert set(MEMBERS) <= set(root["dependency-groups"]["dev"])
    assert set(root["tool"]["uv"]["workspace"]["members"]) == {"packages/*"}
