"""`persist_index`: one call from a directory to a store a reader trusts, sidecar and all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cce_retrieval import (
    BuildCache,
    CacheSalt,
    HashEmbedder,
    StoreError,
    build_index,
    fingerprint_path,
    load_index,
    load_store,
    persist_index,
    read_sources,
    serialize_index,
)

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    return root


def test_the_store_is_the_built_index_with_everything_beside_it(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    store = tmp_path / "store" / "index.json"
    persisted = persist_index(str(root), HashEmbedder(), str(store))
    built = build_index(str(root), HashEmbedder())
    assert store.read_bytes() == serialize_index(built.index)
    assert persisted.store.size == store.stat().st_size
    assert not persisted.reused
    assert persisted.build.total_chunks == len(built.index.chunks)
    assert Path(fingerprint_path(str(store))).is_file()
    assert read_sources(str(store)) is not None
    sidecar = [p.name for p in (store.parent).iterdir() if p.is_dir()]
    assert sidecar, "the sidecar directory is written beside the store"
    # The sidecar is trusted: the loaded index equals the parsed one.
    assert load_store(str(store)).chunks == load_index(str(store)).chunks


def test_a_recorded_store_in_place_is_kept_without_building(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    store = tmp_path / "index.json"
    salt = CacheSalt.for_build(True, HashEmbedder())
    first = persist_index(
        str(root), HashEmbedder(), str(store), cache=BuildCache(str(tmp_path / "c"), salt)
    )
    before = store.stat()
    second = persist_index(
        str(root), HashEmbedder(), str(store), cache=BuildCache(str(tmp_path / "c"), salt)
    )
    assert (first.reused, second.reused) == (False, True)
    assert second.store == first.store
    assert (store.stat().st_ino, store.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_side_files_that_cannot_be_written_are_warnings(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    store = tmp_path / "index.json"
    # A directory where the fingerprint goes makes its atomic write fail.
    Path(fingerprint_path(str(store))).mkdir(parents=True)
    warnings: list[str] = []
    persist_index(str(root), HashEmbedder(), str(store), warn=warnings.append)
    assert len(warnings) == 1
    assert warnings[0].startswith("could not write the store fingerprint: ")
    assert store.is_file()


def test_a_store_that_cannot_be_written_leaves_the_previous_one(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError):
        persist_index(str(root), HashEmbedder(), str(blocker / "index.json"))
    assert blocker.read_text() == "not a directory"
