"""The store's binary sidecar: the same index as parsing `index.json`, or not used at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval.build import build_index
from cce_retrieval.embedder import HashEmbedder
from cce_retrieval.hybrid import bm25_only_search, search, vector_search
from cce_retrieval.model import Index
from cce_retrieval.sidecar import load_store, sidecar_dir, write_sidecar
from cce_retrieval.store import load_index, serialize_index, write_store

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"
QUERIES = ("lru cache eviction", "retry with backoff", "ring buffer push", "def get", "")


def persisted(tmp_path: Path, extra: str = "") -> tuple[str, Index]:
    root = tmp_path / "corpus"
    if not root.exists():
        shutil.copytree(SAMPLE, root)
    (root / "extra.py").write_text(f"def é():\n    return '🙂 {extra}'\n")
    index = build_index(str(root), HashEmbedder()).index
    store = str(tmp_path / "store" / "index.json")
    saved = write_store(index, store)
    write_sidecar(index, store, saved.sha256, saved.size)
    return store, index


def results(index: Index) -> list[object]:
    embedder = HashEmbedder()
    out: list[object] = []
    for query in QUERIES:
        out.append(search(index, embedder, query, 10, True))
        out.append(bm25_only_search(index, query, 10))
        out.append(vector_search(index, embedder.embed(query), 10))
    return out


def assert_same_index(a: Index, b: Index) -> None:
    assert serialize_index(a) == serialize_index(b)
    assert a.chunks == b.chunks
    assert np.asarray(a.embeddings).view(np.uint64).tolist() == (
        np.asarray(b.embeddings).view(np.uint64).tolist()
    )
    assert results(a) == results(b)


def test_sidecar_index_equals_the_parsed_store(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    assert (Path(sidecar_dir(store))).is_dir()
    assert_same_index(load_store(store), load_index(store))


def test_a_sidecar_of_other_bytes_is_never_trusted(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    old_sidecar = tmp_path / "old-sidecar"
    shutil.copytree(sidecar_dir(store), old_sidecar)
    # A new store appears without its sidecar (e.g. the writer was killed in between).
    (tmp_path / "corpus" / "extra.py").write_text("def changed():\n    return 2\n")
    other = build_index(str(tmp_path / "corpus"), HashEmbedder()).index
    write_store(other, store)
    shutil.rmtree(sidecar_dir(store))
    shutil.copytree(old_sidecar, sidecar_dir(store))
    loaded = load_store(store)
    assert_same_index(loaded, load_index(store))
    assert any(c.content.startswith("def changed") for c in loaded.chunks)
    # ...and the sidecar was rebuilt for the new bytes, then used.
    assert_same_index(load_store(store), load_index(store))


@pytest.mark.parametrize("damage", ["truncate-part", "drop-part", "drop-manifest", "bad-json"])
def test_an_incomplete_sidecar_falls_back_to_the_store(tmp_path: Path, damage: str) -> None:
    store, _ = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    manifest = next(directory.glob("*.json"))
    part = next(directory.glob("*-embeddings_by_dim.npy"))
    if damage == "truncate-part":
        part.write_bytes(part.read_bytes()[:-8])
    elif damage == "drop-part":
        part.unlink()
    elif damage == "drop-manifest":
        manifest.unlink()
    else:
        manifest.write_text(json.dumps({"schema": "something else"}))
    assert_same_index(load_store(store), load_index(store))


def test_a_read_only_sidecar_location_still_loads(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    shutil.rmtree(sidecar_dir(store))
    Path(sidecar_dir(store)).write_text("a file where the directory would go")
    assert_same_index(load_store(store), load_index(store))


def test_a_damaged_store_is_still_an_error(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    data = Path(store).read_bytes()
    Path(store).write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception, match="truncated"):
        load_store(store)
