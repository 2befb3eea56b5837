"""Why one file on disk is not indexed: the walker's rules, asked about a single path.

Why it exists: a fixture anchor naming a file the walker skips can never match, and "not
in the index" alone does not tell its author what to change. `why_not_indexed` answers
for one root-relative path by following the walk's own steps down to it - the pruned
names, dot-directories, `.gitignore` scopes nearest first, no symlinks, and for the file
itself the walker's per-file check (`cce_retrieval.walk.walker`) - so the explanation and the
walk cannot disagree. It owns the explanation only; the rules stay in the walker.
"""

from __future__ import annotations

import enum
import os

import attrs

from cce_retrieval.walk.gitignore import Gitignore, Match, read_gitignore
from cce_retrieval.walk.walker import (
    _GITIGNORE_NAME,
    _PRUNED_DIR_NAMES_BYTES,
    MAX_FILE_BYTES,
    PRUNED_DIR_NAMES,
    _has_jsonl_extension,
    _is_ignored,
    _read_candidate,
    _Rejection,
)

__all__ = ["Exclusion", "ExclusionReason", "why_not_indexed"]


class Exclusion(enum.Enum):
    """The walker rule that keeps a path out of the index."""

    MISSING = "missing"
    SYMLINK = "symlink"
    NOT_A_FILE = "not a regular file"
    PRUNED_DIRECTORY = "pruned directory"
    DOT_DIRECTORY = "dot-directory"
    GITIGNORE = ".gitignore"
    SENSITIVE = "sensitive name"
    UNSUPPORTED_EXTENSION = "unsupported extension"
    SIZE_LIMIT = "size limit"
    NOT_UTF8 = "not UTF-8"
    UNREADABLE = "unreadable"


@attrs.frozen(slots=True)
class ExclusionReason:
    """Which rule applies, to which root-relative path (the file or a parent directory),
    and a sentence saying so."""

    rule: Exclusion
    path: str
    message: str


# A `.gitignore` in scope, its offset in root-relative paths (as the walker keeps them),
# and where it lives, to name it in the explanation.
_NamedScope = tuple[Gitignore, int, str]


def _with_gitignore(
    scopes: tuple[_NamedScope, ...], dir_path: bytes, dir_rel: str
) -> tuple[_NamedScope, ...]:
    gitignore_path = os.path.join(dir_path, _GITIGNORE_NAME)
    if not os.path.lexists(gitignore_path):
        return scopes
    gitignore = read_gitignore(gitignore_path)
    if gitignore is None:
        return scopes
    offset = len(os.fsencode(dir_rel)) + 1 if dir_rel else 0
    where = f"{dir_rel}/.gitignore" if dir_rel else ".gitignore"
    return ((gitignore, offset, where), *scopes)


def _ignoring_file(scopes: tuple[_NamedScope, ...], rel: str, is_dir: bool) -> str | None:
    """The `.gitignore` that ignores `rel`, or None (the walker's nearest-match rule)."""
    plain = tuple((gitignore, offset) for gitignore, offset, _ in scopes)
    if not _is_ignored(plain, os.fsencode(rel), is_dir):
        return None
    encoded = os.fsencode(rel)
    for gitignore, offset, where in scopes:
        if gitignore.matched(encoded[offset:], is_dir) is not Match.NONE:
            return where
    return ".gitignore"  # unreachable: _is_ignored found a match in some scope


def _file_reason(entry: os.DirEntry[bytes], rel: str, protect: bool) -> ExclusionReason | None:
    outcome = _read_candidate(entry, protect)
    if isinstance(outcome, str):
        return None
    if outcome is _Rejection.SENSITIVE:
        return ExclusionReason(
            Exclusion.SENSITIVE,
            rel,
            f"{rel} has a sensitive name (keys, credentials, .env files are never read)",
        )
    # The walker only says "skipped"; name which of its checks it was, in its order.
    if _has_jsonl_extension(entry.name):
        return ExclusionReason(
            Exclusion.UNSUPPORTED_EXTENSION, rel, f"{rel}: .jsonl files are never indexed"
        )
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return ExclusionReason(Exclusion.UNREADABLE, rel, f"{rel} cannot be read")
    if size > MAX_FILE_BYTES:
        return ExclusionReason(
            Exclusion.SIZE_LIMIT,
            rel,
            f"{rel} is {size} bytes, over the {MAX_FILE_BYTES}-byte size limit",
        )
    try:
        with open(entry.path, "rb") as handle:
            handle.read().decode("utf-8")
    except OSError:
        return ExclusionReason(Exclusion.UNREADABLE, rel, f"{rel} cannot be read")
    except UnicodeDecodeError:
        return ExclusionReason(Exclusion.NOT_UTF8, rel, f"{rel} is not valid UTF-8 text")
    return ExclusionReason(Exclusion.UNREADABLE, rel, f"{rel} cannot be read")


def _entry(dir_path: bytes, name: bytes) -> os.DirEntry[bytes] | None:
    try:
        with os.scandir(dir_path) as iterator:
            for entry in iterator:
                if entry.name == name:
                    return entry
    except OSError:
        return None
    return None


def why_not_indexed(root: str, rel_path: str, protect: bool = True) -> ExclusionReason | None:
    """Why the walk of `root` leaves out `rel_path` (`/`-separated), or None if it keeps it.

    A path with empty, `.` or `..` components is never a walker path: MISSING.
    """
    parts = rel_path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return ExclusionReason(Exclusion.MISSING, rel_path, f"{rel_path} is not a corpus path")
    dir_path = os.fsencode(root)
    dir_rel = ""
    scopes = _with_gitignore((), dir_path, dir_rel)
    for depth, part in enumerate(parts):
        name = os.fsencode(part)
        rel = f"{dir_rel}/{part}" if dir_rel else part
        entry = _entry(dir_path, name)
        if entry is None:
            return ExclusionReason(Exclusion.MISSING, rel, f"{rel} does not exist")
        if entry.is_symlink():
            return ExclusionReason(
                Exclusion.SYMLINK, rel, f"{rel} is a symbolic link (links are not followed)"
            )
        is_last = depth == len(parts) - 1
        is_dir = entry.is_dir(follow_symlinks=False)
        if not is_last:
            if not is_dir:
                return ExclusionReason(Exclusion.MISSING, rel, f"{rel} is not a directory")
            if name in _PRUNED_DIR_NAMES_BYTES:
                pruned = ", ".join(sorted(PRUNED_DIR_NAMES))
                return ExclusionReason(
                    Exclusion.PRUNED_DIRECTORY,
                    rel,
                    f"{rel}/ is a pruned directory (never indexed: {pruned})",
                )
            if name.startswith(b"."):
                return ExclusionReason(
                    Exclusion.DOT_DIRECTORY,
                    rel,
                    f"{rel}/ is a dot-directory (directories starting with '.' are skipped)",
                )
            where = _ignoring_file(scopes, rel, True)
            if where is not None:
                return ExclusionReason(Exclusion.GITIGNORE, rel, f"{rel}/ is ignored by {where}")
            dir_path, dir_rel = entry.path, rel
            scopes = _with_gitignore(scopes, dir_path, dir_rel)
            continue
        if is_dir or not entry.is_file(follow_symlinks=False):
            return ExclusionReason(Exclusion.NOT_A_FILE, rel, f"{rel} is not a regular file")
        where = _ignoring_file(scopes, rel, False)
        if where is not None:
            return ExclusionReason(Exclusion.GITIGNORE, rel, f"{rel} is ignored by {where}")
        return _file_reason(entry, rel, protect)
    return None  # unreachable: the loop returns on the last part
