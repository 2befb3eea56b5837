"""Hostile store paths and store bytes: no device replaced, no stale files, no bad loads."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval.model import Chunk, Index
from cce_retrieval.rank.hybrid import QueryVectorError, search_with_vector, vector_search
from cce_retrieval.store.fileio import NotARegularFileError, remove_stale_temporaries, write_atomic
from cce_retrieval.store.fingerprint import (
    fingerprint_path,
    repair_stale_fingerprint,
    store_sha256,
    write_fingerprint,
)
from cce_retrieval.store.load import load_index, parse_index
from cce_retrieval.store.paths import StoreError
from cce_retrieval.store.write import save_index


def _chunk(start: int = 1, end: int = 2) -> Chunk:
    return Chunk("fd88a10941ff9519", "a.py", start, end, "function", "fn", "python", "x", 1)


def _index(rows: list[list[float]] | None = None, embedder: str = "hash") -> Index:
    rows = rows if rows is not None else [[0.5] * 256]
    return Index(
        embedder=embedder,
        chunks=[_chunk() for _ in rows],
        embeddings=np.array(rows, dtype=np.float64),
        file_imports={},
        file_tokens={"a.py": 1},
    )


# --- store paths -----------------------------------------------------------------------


def test_device_node_is_never_replaced(tmp_path: Path) -> None:
    device = tmp_path / "null"
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(StoreError, match="exists and is not a regular file"):
        save_index(_index(), str(device))
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_fifo_and_directory_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    with pytest.raises(NotARegularFileError):
        write_atomic(str(tmp_path / "fifo"), b"x")
    with pytest.raises(NotARegularFileError, match="is a directory"):
        write_atomic(str(tmp_path / "dir"), b"x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


def test_symlinked_store_is_written_through(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "index.json"
    shared.parent.mkdir()
    shared.write_bytes(b"old")
    link = tmp_path / "repo" / ".cce" / "index.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(shared)
    save_index(_index(), str(link))
    assert link.is_symlink() and os.readlink(link) == str(shared)
    assert load_index(str(shared)).chunks == [_chunk()]
    assert sorted(p.name for p in shared.parent.iterdir()) == ["index.json"]


def test_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/dev/null")
    with pytest.raises(NotARegularFileError, match="/dev/null"):
        write_atomic(str(tmp_path / "link"), b"x")
    assert (tmp_path / "link").is_symlink()


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".index.json.tmp.{dead_pid}.0"
    stale.write_bytes(b"x" * 1000)
    live = tmp_path / f".index.json.tmp.{os.getpid()}.99"
    live.write_bytes(b"in flight")
    other = tmp_path / ".other.json.tmp.1.0"
    other.write_bytes(b"not ours")
    save_index(_index(), str(tmp_path / "index.json"))
    assert not stale.exists()
    assert live.exists() and other.exists()
    assert remove_stale_temporaries(str(tmp_path), "index.json") == 0


# --- fingerprint left behind by a kill ---------------------------------------------------


def test_mismatched_fingerprint_is_detected_and_repaired(tmp_path: Path) -> None:
    store = str(tmp_path / "index.json")
    save_index(_index(), store)
    write_fingerprint(_index(), store, redaction=True, protection="strict")
    assert repair_stale_fingerprint(_index(), store) is None  # fresh: nothing to do
    # A later build replaced the store, then was killed before the fingerprint.
    time.sleep(0.01)
    newer = _index([[0.25] * 256])
    save_index(newer, store)
    os.utime(fingerprint_path(store), ns=(1, 1))
    warning = repair_stale_fingerprint(newer, store)
    assert warning is not None and "did not match its store" in warning
    fingerprint = json.loads(Path(fingerprint_path(store)).read_text())
    assert fingerprint["store_sha256"] == store_sha256(store)
    assert fingerprint["protection"] == "strict" and fingerprint["redaction"] is True
    assert repair_stale_fingerprint(newer, store) is None


# --- store bytes ---------------------------------------------------------------------------


def _document(**changes: object) -> bytes:
    chunk = {
        "chunk_id": "x",
        "file_path": "a.py",
        "start_line": 1,
        "end_line": 2,
        "chunk_type": "function",
        "kind": "fn",
        "language": "python",
        "content": "c",
        "token_count": 1,
        "embedding": [0.5] * 256,
    }
    chunk.update(changes.pop("chunk", {}))  # type: ignore[call-overload]
    document: dict[str, object] = {
        "spec_version": "1.0",
        "embedder": "hash",
        "chunks": [chunk],
        "file_imports": {},
        **changes,
    }
    return json.dumps(document).encode()


def test_deep_nesting_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="nested too deeply"):
        parse_index(b"[" * 100_000)
    with pytest.raises(StoreError, match="nested too deeply"):
        parse_index(b'{"spec_version":"1.0","chunks":' + b"[" * 100_000)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_document(spec_version="99.0"), "reads stores up to version 1.x"),
        (_document(spec_version="two"), "reads stores up to version 1.x"),
        (_document(chunk={"embedding": [0.5] * 255}), "hash embeddings have 256 values"),
        (
            _document(embedder="ollama", embedding_dim=3, chunk={"embedding": [1.0, 2.0]}),
            "`embedding_dim` is 3",
        ),
        (_document(chunk={"start_line": 9, "end_line": 2}), "`start_line` 9 is after"),
        (
            _document().replace(b"[0.5, 0.5,", b"[NaN, 0.5,", 1),
            "NaN or an infinite number",
        ),
        (
            _document().replace(b"[0.5, 0.5,", b"[1e999, 0.5,", 1),
            "NaN or an infinite number",
        ),
        (
            _document().replace(b"[0.5, 0.5,", b"[1e300, 0.5,", 1),
            "magnitude over 1e+150",
        ),
        (
            _document().replace(b"[0.5, 0.5,", b"[-1.5e151, 0.5,", 1),
            "magnitude over 1e+150",
        ),
    ],
)
def test_inconsistent_stores_are_refused_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(StoreError, match="not a cce store") as caught:
        parse_index(data, "s.json")
    assert reason in str(caught.value)


def test_fast_path_store_with_overflow_is_refused(tmp_path: Path) -> None:
    # The compact form the numpy fast path reads: 1e999 parses there to inf as well.
    path = tmp_path / "index.json"
    save_index(_index(), str(path))
    path.write_bytes(path.read_bytes().replace(b'"embedding":[0.5,', b'"embedding":[1e999,', 1))
    with pytest.raises(StoreError, match="NaN or an infinite number"):
        load_index(str(path))


def test_legacy_and_current_versions_still_load() -> None:
    assert parse_index(_document(spec_version="0.9")).spec_version == "0.9"
    assert parse_index(_document(spec_version="1.3")).spec_version == "1.3"


def test_fast_path_store_with_a_huge_finite_value_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    save_index(_index(), str(path))
    path.write_bytes(path.read_bytes().replace(b'"embedding":[0.5,', b'"embedding":[1e300,', 1))
    with pytest.raises(StoreError, match="magnitude over 1e"):
        load_index(str(path))


# --- query vectors -------------------------------------------------------------------------


@pytest.mark.parametrize("huge", [1e300, -2e150])
def test_a_query_vector_whose_products_overflow_is_refused(huge: float) -> None:
    vector = [0.5] * 256
    vector[3] = huge
    with pytest.raises(QueryVectorError, match="magnitude over 1e"):
        search_with_vector(_index(), vector, "x", 5, False)
    with pytest.raises(QueryVectorError, match="magnitude over 1e"):
        vector_search(_index(), vector, 5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_query_vector_is_refused(bad: float) -> None:
    vector = [0.5] * 256
    vector[3] = bad
    with pytest.raises(QueryVectorError):
        search_with_vector(_index(), vector, "x", 5, False)
    with pytest.raises(QueryVectorError):
        vector_search(_index(), vector, 5)
