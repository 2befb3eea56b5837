"""The corpus walk: which files of a directory tree get indexed
(docs/index-store.md#walking-the-tree).

Why it exists: every index, conformance table and relevance run starts from the same list
of `(rel_path, text)` pairs, and the reference builds it with ripgrep's `ignore` crate. This
module reproduces that crate's *effect* with `os.scandir`: hard-pruned directory names and
dot-directories, nested `.gitignore` files (via `cce_retrieval.walk.gitignore`), no symlinks, and
the exact per-file check order with its counters. It owns the traversal only; redaction and
chunking happen later on the returned text.

Paths are handled as bytes internally so gitignore globs see the raw name bytes (globset
matches bytes). A non-UTF-8 name is shown in `rel_path` lossily (invalid bytes become
U+FFFD), as the reference does, unless that would give two entries of one directory the
same name; then the colliding non-UTF-8 names spell each invalid byte as `\\xNN`, so
`x\\xff.py`, `x\\xfe.py` and a real `x\ufffd.py` stay three files. An entry whose name
still collides is a walk error rather than a silent merge (docs/hostile-input.md#file-names).
A failing `os.scandir` on the root itself (missing, not a directory) counts as one walk
error and yields nothing.

Files and `.gitignore`s are opened non-blocking and read only if `fstat` says regular file,
with a size bound, so a FIFO or a device swapped in cannot hang or exhaust the walk.
"""

from __future__ import annotations

import collections
import enum
import os

import attrs

from cce_retrieval.protect.sensitive import is_sensitive
from cce_retrieval.protect.strict import REFERENCE, STRICT, is_strict_sensitive
from cce_retrieval.walk.gitignore import (
    Gitignore,
    GitignoreReadError,
    Match,
    read_gitignore,
    read_regular_file,
)

MAX_FILE_BYTES = 2 * 1024 * 1024
PRUNED_DIR_NAMES = frozenset(
    {".git", ".cce", "node_modules", ".venv", "venv", "__pycache__", "dist", "build"}
)

_PRUNED_DIR_NAMES_BYTES = frozenset(os.fsencode(name) for name in PRUNED_DIR_NAMES)
_GITIGNORE_NAME = b".gitignore"


@attrs.frozen(slots=True)
class WalkedFile:
    """A kept file: its `/`-joined path relative to the root and its decoded text."""

    rel_path: str
    text: str


@attrs.frozen(slots=True)
class WalkResult:
    """The kept files (sorted by `rel_path`) and the walk's three counters."""

    files: tuple[WalkedFile, ...]
    skipped: int
    sensitive_skipped: int
    walk_errors: int
    strict_only_skipped: int = 0
    """Files only strict protection skips: kept under reference protection (so a notice can
    say what strict would have left out), and part of `sensitive_skipped` under strict."""
    strict_only_paths: tuple[str, ...] = ()
    """Their `rel_path`s, sorted, so that the notice can name them."""
    gitignore_errors: int = 0
    """The part of `walk_errors` that is a `.gitignore` refused as not a regular file or
    too large: its directory was walked as if it had none, so nothing under it is lost."""


# A `.gitignore` in scope, with the byte offset at which paths relative to its directory
# start inside a root-relative path (0 for the root, len(dir) + 1 below it).
_Scope = tuple[Gitignore, int]


def _is_ignored(scopes: tuple[_Scope, ...], rel_path: bytes, is_dir: bool) -> bool:
    """Nearest `.gitignore` with any match decides; scopes are ordered nearest first."""
    for gitignore, offset in scopes:
        verdict = gitignore.matched(rel_path[offset:], is_dir)
        if verdict is not Match.NONE:
            return verdict is Match.IGNORE
    return False


def _has_jsonl_extension(name: bytes) -> bool:
    dot = name.rfind(b".")
    return dot > 0 and name[dot + 1 :] == b"jsonl"


class _Rejection(enum.Enum):
    """Why a regular file that survived pruning and gitignore is not kept."""

    SENSITIVE = "sensitive"
    SKIPPED = "skipped"


def _read_candidate(
    entry: os.DirEntry[bytes], protect: bool, sensitive: bool | None = None
) -> str | _Rejection:
    """Apply the per-file checks of docs/index-store.md#per-file-checks in their exact order; the
    text if all pass.

    `sensitive` overrides the name check (the walk decides it once, strict names included).
    """
    name = entry.name
    if sensitive is None:
        sensitive = protect and is_sensitive(name.decode("utf-8", "replace"))
    if sensitive:
        return _Rejection.SENSITIVE
    if _has_jsonl_extension(name):
        return _Rejection.SKIPPED
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return _Rejection.SKIPPED
    if size > MAX_FILE_BYTES:
        return _Rejection.SKIPPED
    try:
        # Non-blocking and regular-only: the entry may have been swapped for a FIFO since
        # `scandir` saw it; the bound holds even if the file grew meanwhile.
        data = read_regular_file(entry.path, MAX_FILE_BYTES)
    except OSError:
        return _Rejection.SKIPPED
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _Rejection.SKIPPED


def _is_utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def display_names(names: list[bytes]) -> dict[bytes, str | None]:
    """The `rel_path` component of each name of one directory; None for an unresolvable clash.

    Lossy U+FFFD decoding (the reference's form) wherever it keeps names distinct;
    `\\xNN` escapes for non-UTF-8 names whose lossy forms clash; None for a non-UTF-8
    name whose escaped form is still another entry's name (it is then a walk error).
    """
    lossy = {name: name.decode("utf-8", "replace") for name in names}
    clashes = collections.Counter(lossy.values())
    shown: dict[bytes, str] = {}
    for name in names:
        text = lossy[name]
        if clashes[text] > 1 and not _is_utf8(name):
            text = name.decode("utf-8", "backslashreplace")
        shown[name] = text
    # Distinct non-UTF-8 names have distinct escaped forms, so a remaining clash is with a
    # valid name spelled with a literal `\\xNN`; that real name keeps its spelling.
    final = collections.Counter(shown.values())
    return {
        name: (None if final[text] > 1 and not _is_utf8(name) else text)
        for name, text in shown.items()
    }


def walk(root: str, protect: bool = True, protection: str = REFERENCE) -> WalkResult:
    """Walk `root` and return the indexable files with the skip/error counters.

    With `protect` on, sensitive basenames (docs/index-store.md#sensitive-file-names) are counted
    and never opened; with
    `protection="strict"` also the names `cce_retrieval.protect.strict` adds.
    """
    strict = protection == STRICT
    files: list[WalkedFile] = []
    skipped = 0
    sensitive_skipped = 0
    walk_errors = 0
    strict_only: list[str] = []
    gitignore_errors = 0
    pending: list[tuple[bytes, bytes, str, tuple[_Scope, ...]]] = [(os.fsencode(root), b"", "", ())]
    while pending:
        dir_path, dir_rel, dir_shown, scopes = pending.pop()
        try:
            with os.scandir(dir_path) as iterator:
                entries = list(iterator)
        except OSError:
            walk_errors += 1
            continue
        if any(entry.name == _GITIGNORE_NAME for entry in entries):
            try:
                gitignore = read_gitignore(os.path.join(dir_path, _GITIGNORE_NAME))
            except GitignoreReadError:
                walk_errors += 1
                gitignore_errors += 1
                gitignore = None
            if gitignore is not None:
                scopes = ((gitignore, len(dir_rel) + 1 if dir_rel else 0), *scopes)
        shown_names = display_names([entry.name for entry in entries])
        for entry in entries:
            name = entry.name
            rel = dir_rel + b"/" + name if dir_rel else name
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                walk_errors += 1
                continue
            if is_dir:
                if name in _PRUNED_DIR_NAMES_BYTES or name.startswith(b"."):
                    continue
                if not _is_ignored(scopes, rel, True):
                    shown = shown_names[name]
                    if shown is None:
                        walk_errors += 1
                        continue
                    shown_rel = f"{dir_shown}/{shown}" if dir_rel else shown
                    pending.append((entry.path, rel, shown_rel, scopes))
                continue
            if not is_file or _is_ignored(scopes, rel, False):
                continue
            shown = shown_names[name]
            if shown is None:
                walk_errors += 1
                continue
            shown_rel = f"{dir_shown}/{shown}" if dir_rel else shown
            sensitive = protect and is_sensitive(name.decode("utf-8", "replace"))
            if protect and not sensitive and is_strict_sensitive(shown_rel):
                strict_only.append(shown_rel)
                sensitive = strict
            outcome = _read_candidate(entry, protect, sensitive)
            if outcome is _Rejection.SENSITIVE:
                sensitive_skipped += 1
            elif outcome is _Rejection.SKIPPED:
                skipped += 1
            else:
                files.append(WalkedFile(shown_rel, outcome))
    files.sort(key=lambda walked: walked.rel_path)
    return WalkResult(
        tuple(files),
        skipped,
        sensitive_skipped,
        walk_errors,
        len(strict_only),
        tuple(sorted(strict_only)),
        gitignore_errors,
    )
