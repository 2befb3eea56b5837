"""What a store was built from, written beside it, and whether the corpus has moved on.

Why it exists: a store is a snapshot; the files under it change every day, and scores
from a stale store describe code that no longer exists. `index.json` and its fingerprint
are contracts with the reference and keep their bytes, so the record lives in a file of
its own beside them: the corpus directory (relative to the store's directory, so the
two can move together), whether secret protection was on, and the `/`-separated
relative path, size and SHA-256 of every indexed file's bytes. `compare_sources` walks
the corpus again with the same walker and says which files changed, appeared or went.
See docs/relevance.md#stale-stores.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Iterable
from typing import Final

import attrs

from cce_retrieval.store.fileio import read_input_file, write_atomic
from cce_retrieval.walk.walker import WalkedFile, walk

__all__ = [
    "SOURCES_SCHEMA",
    "SourceFile",
    "Sources",
    "SourcesError",
    "Staleness",
    "compare_sources",
    "read_sources",
    "source_files",
    "sources_path",
    "sources_root",
    "write_sources",
]

SOURCES_SCHEMA: Final = "cce.sources/v1"


class SourcesError(ValueError):
    """A sources file that exists but cannot be used; `str()` names it and the cause."""


@attrs.frozen(slots=True)
class SourceFile:
    """One indexed file: its root-relative path, its size and SHA-256 (hex) in bytes."""

    path: str
    size: int
    sha256: str


@attrs.frozen(slots=True)
class Sources:
    """The corpus a store was built from: `root` relative to the store's directory."""

    root: str
    protect: bool
    files: tuple[SourceFile, ...]


@attrs.frozen(slots=True)
class Staleness:
    """Root-relative paths that differ between a store's record and the corpus now."""

    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def stale(self) -> bool:
        return bool(self.changed or self.added or self.removed)


def _source_file(walked: WalkedFile) -> SourceFile:
    # The walker decoded the bytes strictly as UTF-8, so encoding gives them back exactly.
    data = walked.text.encode("utf-8")
    return SourceFile(walked.rel_path, len(data), hashlib.sha256(data).hexdigest())


def source_files(walked: Iterable[WalkedFile]) -> tuple[SourceFile, ...]:
    """The record of the walked files, in walk (path) order."""
    return tuple(_source_file(file) for file in walked)


def sources_path(store_path: str) -> str:
    """`sources.json` beside an `index.json`, else `<store name>.sources.json`."""
    directory, name = os.path.split(store_path)
    file_name = "sources.json" if name == "index.json" else f"{name}.sources.json"
    return os.path.join(directory, file_name)


def _relative_root(store_path: str, root: str) -> str:
    store_dir = os.path.dirname(os.path.abspath(store_path))
    return os.path.relpath(os.path.abspath(root), store_dir).replace(os.sep, "/")


def write_sources(store_path: str, root: str, protect: bool, files: Iterable[SourceFile]) -> str:
    """Write the record of a store built from `root`, atomically; returns its path.

    Compact JSON with sorted keys and one trailing newline. Raises OSError.
    """
    document = {
        "files": [[file.path, file.size, file.sha256] for file in files],
        "protect": protect,
        "root": _relative_root(store_path, root),
        "schema": SOURCES_SCHEMA,
    }
    text = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    target = sources_path(store_path)
    write_atomic(target, (text + "\n").encode("utf-8"))
    return target


def _parse(document: object) -> Sources:
    if not isinstance(document, dict) or document.get("schema") != SOURCES_SCHEMA:
        raise ValueError(f'"schema" is not {SOURCES_SCHEMA}')
    root, protect, rows = document.get("root"), document.get("protect"), document.get("files")
    if not isinstance(root, str) or not isinstance(protect, bool) or not isinstance(rows, list):
        raise ValueError('"root", "protect" or "files" has the wrong type')
    files = []
    for row in rows:
        if not (
            isinstance(row, list)
            and len(row) == 3
            and isinstance(row[0], str)
            and type(row[1]) is int
            and isinstance(row[2], str)
        ):
            raise ValueError("a file entry is not [path, size, sha256]")
        files.append(SourceFile(row[0], row[1], row[2]))
    return Sources(root, protect, tuple(files))


MAX_SOURCES_BYTES: Final = 1 << 30
"""The largest sources record read: about 120 bytes per indexed file, so 1 GiB is some
eight million files, far past any corpus a store of at most 64 GiB can hold."""


def read_sources(store_path: str) -> Sources | None:
    """The record beside the store at `store_path`; None when there is none (older stores).

    Raises SourcesError when the file exists but cannot be read or understood.
    """
    path = sources_path(store_path)
    try:
        data = read_input_file(path, MAX_SOURCES_BYTES, "sources records")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SourcesError(f"could not read {path}: {error.strerror or error}") from None
    try:
        return _parse(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError) as error:
        raise SourcesError(f"could not read {path}: {error}") from None
    except RecursionError:
        raise SourcesError(
            f"could not read {path}: its JSON is nested too deeply to be a sources record"
        ) from None


def _written_form(root: str) -> bool:
    """Whether `root` has the form `write_sources` gives it: relative, `/`-separated,
    normalised (`..` only in front), without NUL."""
    if not root or "\x00" in root or root.startswith("/"):
        return False
    return posixpath.normpath(root) == root


def sources_root(store_path: str, sources: Sources) -> str:
    """The corpus directory the record names, as a path usable from here.

    Raises SourcesError when the record cannot be trusted to name it, so the corpus is
    not walked (docs/hostile-input.md#stores): a root not in the form `cce index` writes
    (absolute, holding a NUL, not normalised), or, for a store in a `.cce` directory (the
    default location, `<dir>/.cce/index.json`, the index of `<dir>`), a root outside
    `<dir>`: `..` or `../src` are walked, `../../../usr/lib` is not. A record crafted to
    name a system directory would otherwise have thousands of files outside the project
    walked, and their names listed as changes. A store kept elsewhere (`--store PATH`) may
    record any root of that form: its place says nothing about its corpus.
    """
    shown = sources_path(store_path)
    if not _written_form(sources.root):
        raise SourcesError(
            f"{shown} records the corpus as {sources.root!r}, not the relative, normalised "
            "path cce index writes; it is not walked"
        )
    store_dir = os.path.dirname(store_path) or "."
    in_cce_dir = os.path.basename(os.path.abspath(store_dir)) == ".cce"
    parts = sources.root.split("/")
    if in_cce_dir and not (parts[0] == ".." and ".." not in parts[1:]):
        raise SourcesError(
            f"{shown} records the corpus as {sources.root!r}, outside the directory that "
            "holds its .cce directory (a store there indexes that directory or one inside "
            "it); it is not walked"
        )
    return os.path.normpath(os.path.join(store_dir, sources.root))


def compare_sources(sources: Sources, root: str) -> Staleness:
    """Walk `root` as the store's build did and compare with the record."""
    recorded = {file.path: file for file in sources.files}
    now = {file.path: file for file in source_files(walk(root, sources.protect).files)}
    changed = tuple(
        path for path in sorted(recorded.keys() & now.keys()) if recorded[path] != now[path]
    )
    added = tuple(sorted(now.keys() - recorded.keys()))
    removed = tuple(sorted(recorded.keys() - now.keys()))
    return Staleness(changed, added, removed)
