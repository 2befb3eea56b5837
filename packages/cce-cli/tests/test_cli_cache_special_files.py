"""Build-cache entries that are not regular files, or too large to be entries: a miss,
never followed, never waited on (docs/hostile-input.md#build-cache)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_retrieval.build.cache.entry_files import MAX_ENTRY_BYTES

SAMPLE_CORPUS = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"
_MEMORY_LIMIT = 3 << 30
"""Address space given to the command: reading `/dev/zero` whole runs into it at once."""

_DEADLINE_S = 120
"""Far above the few seconds a build of the sample takes: only a hang gets near it."""


def _limited_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_LIMIT, _MEMORY_LIMIT))


def _cce(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cce_cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=_DEADLINE_S,
        preexec_fn=_limited_memory,
    )


def _dev_zero(entry: Path) -> None:
    entry.unlink()
    entry.symlink_to("/dev/zero")


def _fifo(entry: Path) -> None:
    entry.unlink()
    os.mkfifo(entry)


def _directory(entry: Path) -> None:
    entry.unlink()
    entry.mkdir()
    (entry / "inside").write_bytes(b"kept")


def _oversized(entry: Path) -> None:
    # Sparse: its size is past the bound, its blocks are not on disk.
    with open(entry, "r+b") as handle:
        handle.truncate(MAX_ENTRY_BYTES + 1)


SPECIAL_ENTRIES: dict[str, Callable[[Path], None]] = {
    "symlink to /dev/zero": _dev_zero,
    "fifo": _fifo,
    "directory": _directory,
    "oversized file": _oversized,
}


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*.entry"))


@pytest.mark.parametrize("special", list(SPECIAL_ENTRIES))
def test_special_files_as_cache_entries_are_misses_and_the_build_is_unchanged(
    tmp_path: Path, special: str
) -> None:
    cache_dir = Path(os.environ["CCE_CACHE_DIR"])
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, root)
    first = tmp_path / "first" / "index.json"
    assert _cce("index", str(root), "--store", str(first), "--no-metrics").returncode == 0
    entries = _entries(cache_dir)
    # Every file's entry, and the store record a whole build keeps.
    assert len(entries) > len(list(root.iterdir()))
    for entry in entries:
        SPECIAL_ENTRIES[special](entry)

    again = tmp_path / "again" / "index.json"
    indexed = _cce("index", str(root), "--store", str(again), "--no-metrics")
    assert indexed.returncode == 0, indexed.stderr
    assert again.read_bytes() == first.read_bytes()
    conformance = tmp_path / "conformance.json"
    table = _cce("conformance", str(root), "-o", str(conformance))
    assert table.returncode == 0, table.stderr
    uncached = tmp_path / "uncached.json"
    assert _cce("conformance", str(root), "-o", str(uncached), "--no-cache").returncode == 0
    assert conformance.read_bytes() == uncached.read_bytes()

    for entry in entries:
        if special == "directory":  # cannot be replaced by a rename: left as it was
            assert entry.is_dir() and (entry / "inside").read_bytes() == b"kept"
        else:  # written again as a regular entry, in place of the link or special file
            assert entry.is_file() and not entry.is_symlink()
            assert entry.stat().st_size <= MAX_ENTRY_BYTES
