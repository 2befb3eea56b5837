"""Where a semble target's path points, under semble's two path conventions.

Why it exists: semble's annotation files write target paths from the repository root,
but some write them from the benchmark root instead, and a path can read either way.
This module owns cleaning such a path, deciding which convention a file uses, and
resolving each target to a path from the benchmark root, checked against a checkout
of the pinned commit when there is one. `cce_cli.formats.semble` does the rest of the
conversion.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence

import attrs

from cce_cli.errors import CliError

__all__ = ["Reading", "Repo", "clean_path", "written_from_repository"]


@attrs.frozen
class Repo:
    """One entry of `REPOS.json`: the repository a member is checked out from."""

    name: str
    language: str
    url: str
    revision: str
    root: str | None


def clean_path(text: str, where: str, what: str) -> str:
    """A repository-relative path with `/` separators, empty and `.` parts dropped.

    Absolute paths and `..` parts are refused: both would reach outside the repository.
    """
    if text.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", text):
        raise CliError(
            f"{where}: {what} {json.dumps(text)} is absolute; "
            "write it relative to the repository root, with '/' separators"
        )
    if "\\" in text:
        raise CliError(
            f"{where}: {what} {json.dumps(text)} contains '\\'; use '/' as the separator"
        )
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise CliError(
            f"{where}: {what} {json.dumps(text)} contains '..'; "
            "write the path from the repository root without '..'"
        )
    return "/".join(parts)


class Reading:
    """Which convention each target of one repository was read in, checked against a
    checkout of its pinned commit when there is one."""

    def __init__(self, checkout: str | None, from_repository_root: bool = False) -> None:
        self.checkout = checkout
        # Without a checkout, the file's own convention tells a path written from the
        # benchmark root from a repository path outside it (see `written_from_repository`).
        self.from_repository_root = from_repository_root
        self.root_relative = 0
        self.outside_root = 0

    def _exists(self, relative: str) -> bool:
        assert self.checkout is not None
        full = os.path.join(self.checkout, relative)
        return os.path.isfile(full) and _inside(full, self.checkout)

    def resolve(self, path: str, path_text: str, repo: Repo, where: str) -> str:
        root = repo.root
        if root is None:
            if self.checkout is not None and not self._exists(path):
                raise CliError(
                    f"{where}: path {json.dumps(path_text)} is not a file of {repo.name} at "
                    f"{repo.revision}; fix the path or leave the target out"
                )
            return path
        from_repository = path[len(root) + 1 :] if path.startswith(root + "/") else None
        if self.checkout is None:
            if from_repository is not None:
                return from_repository
            if self.from_repository_root:
                self.outside_root += 1
            else:
                self.root_relative += 1
            return path
        in_repository = from_repository is not None and self._exists(f"{root}/{from_repository}")
        in_root = self._exists(f"{root}/{path}")
        if in_repository and in_root:
            raise CliError(
                f"{where}: path {json.dumps(path_text)} names a file both from the repository "
                f"root and from the benchmark root {json.dumps(root)}; write it from the "
                "repository root in full to say which"
            )
        if in_repository:
            assert from_repository is not None
            return from_repository
        if in_root:
            self.root_relative += 1
            return path
        raise CliError(
            f"{where}: path {json.dumps(path_text)} is not a file under the benchmark root "
            f"{json.dumps(root)} of {repo.name} at {repo.revision}, read from the repository "
            "root or from the benchmark root; fix the path or leave the target out"
        )


def _target_paths(tasks: Sequence[object]) -> Iterator[str]:
    """Every target path of well-formed tasks (malformed ones are reported elsewhere)."""
    for task in tasks:
        if not isinstance(task, dict):
            continue
        for key in ("relevant", "secondary"):
            targets = task.get(key)
            if not isinstance(targets, list):
                continue
            for target in targets:
                path = target.get("path") if isinstance(target, dict) else target
                if isinstance(path, str):
                    yield path


def written_from_repository(tasks: Sequence[object], root: str | None) -> bool:
    """Whether an annotation file writes its targets from the repository root: more of
    its paths start with the benchmark root than not. A path outside the root in such a
    file (exposed's `exposed-jdbc/...` under root `exposed-core/src/main/kotlin`) is then
    a repository path semble never indexes, not one written from the benchmark root."""
    if root is None:
        return False
    prefix = root + "/"
    inside = outside = 0
    for path in _target_paths(tasks):
        # Empty and `.` parts dropped, as `clean_path` does (`./src//a.py` is `src/a.py`).
        cleaned = "/".join(part for part in path.split("/") if part not in ("", "."))
        if cleaned.startswith(prefix):
            inside += 1
        else:
            outside += 1
    return inside > outside


def _inside(path: str, directory: str) -> bool:
    real_directory = os.path.realpath(directory)
    return os.path.realpath(path).startswith(real_directory + os.sep)
