"""The record of what a store was built from, and telling a stale store from a fresh one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cce_retrieval import build_index, save_index, serialize_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.store.sources import (
    SourceFile,
    SourcesError,
    compare_sources,
    read_sources,
    sources_path,
    sources_root,
    write_sources,
)


def _corpus(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "a.py").write_text("def a():\n    return 1\n")
    (root / "pkg" / "b.py").write_text("def b():\n    return 2\n")
    (root / "venv").mkdir()
    (root / "venv" / "skip.py").write_text("x = 1\n")
    return root


def _store(root: Path) -> str:
    result = build_index(str(root), HashEmbedder())
    store = root / ".cce" / "index.json"
    save_index(result.index, str(store))
    write_sources(str(store), str(root), True, result.sources)
    return str(store)


def test_build_records_path_size_and_hash_of_every_indexed_file(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "c")
    sources = build_index(str(root), HashEmbedder()).sources
    data = b"def a():\n    return 1\n"
    assert sources[0] == SourceFile("a.py", len(data), hashlib.sha256(data).hexdigest())
    assert [file.path for file in sources] == ["a.py", "pkg/b.py"]


def test_the_record_sits_beside_the_store_and_leaves_its_bytes_alone(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "c")
    store = _store(root)
    assert sources_path(store) == str(root / ".cce" / "sources.json")
    assert sources_path("x/custom.json") == "x/custom.json.sources.json"
    index = build_index(str(root), HashEmbedder()).index
    assert Path(store).read_bytes() == serialize_index(index)
    document = json.loads(Path(sources_path(store)).read_bytes())
    assert document["schema"] == "cce.sources/v1"
    assert document["root"] == ".."
    sources = read_sources(store)
    assert sources is not None
    assert sources_root(store, sources) == str(root)


def test_a_fresh_store_is_not_stale(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "c")
    store = _store(root)
    sources = read_sources(store)
    assert sources is not None
    assert not compare_sources(sources, str(root)).stale


def test_changed_added_and_removed_files_are_counted(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "c")
    store = _store(root)
    (root / "a.py").write_text("def a():\n    return 42\n")
    (root / "pkg" / "b.py").unlink()
    (root / "new.py").write_text("x = 1\n")
    (root / "venv" / "also_skipped.py").write_text("x = 2\n")
    sources = read_sources(store)
    assert sources is not None
    staleness = compare_sources(sources, str(root))
    assert (staleness.changed, staleness.added, staleness.removed) == (
        ("a.py",),
        ("new.py",),
        ("pkg/b.py",),
    )
    assert staleness.stale


def test_an_older_store_has_no_record(tmp_path: Path) -> None:
    assert read_sources(str(tmp_path / "index.json")) is None


@pytest.mark.parametrize(
    "content",
    [b"not json", b'{"schema":"other"}', b'{"schema":"cce.sources/v1","root":1}', b"\xff"],
)
def test_a_damaged_record_is_an_error_naming_it(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "sources.json").write_bytes(content)
    with pytest.raises(SourcesError, match=r"sources\.json"):
        read_sources(str(tmp_path / "index.json"))
