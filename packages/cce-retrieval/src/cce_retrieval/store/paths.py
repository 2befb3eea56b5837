"""Where a store lives, and the error that names it.

Why it exists: every command that reads or writes a store resolves its path the same
way (docs/index-store.md): `--store` verbatim, else `<directory>/.cce/index.json`, else
`./.cce/index.json`; and every store failure is a `StoreError` naming the path.
"""

from __future__ import annotations

import os
from typing import Final

MAX_STORE_BYTES: Final = 64 << 30
"""The largest `index.json` read (docs/hostile-input.md#special-files-as-inputs). A chunk
takes about 4 KB with 256-wide vectors and 12 KB with 1024-wide ones, so a million-chunk
store is 4 to 12 GB; parsing needs several times the file's size in memory, so a store
past 64 GiB could not be loaded anyway, while a device behind the path never ends."""


class StoreError(Exception):
    """A store that could not be written or loaded; `str()` names the path and the cause."""

    def __init__(self, action: str, path: str, cause: str) -> None:
        super().__init__(f"could not {action} store {path}: {cause}")
        self.action = action
        self.path = path
        self.cause = cause


def default_store_path(directory: str) -> str:
    """`<directory>/.cce/index.json`, joined onto the directory exactly as typed
    (docs/index-store.md#location)."""
    return os.path.join(directory, ".cce", "index.json")


def resolve_store_path(store: str | None, directory: str | None) -> str:
    """docs/index-store.md#location: `--store` verbatim, else `<directory>/.cce/index.json`, else
    `./.cce/index.json`."""
    if store is not None:
        return store
    return default_store_path(directory if directory is not None else ".")
