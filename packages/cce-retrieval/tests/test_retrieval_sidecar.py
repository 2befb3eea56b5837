"""The store's binary sidecar: the same index as parsing `index.json`, or not used at all."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pickle
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cce_retrieval import build_index, load_index, serialize_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Index, SparseEmbeddings
from cce_retrieval.rank.derived import bm25_and_ranks
from cce_retrieval.rank.hybrid import bm25_only_search, search, vector_search
from cce_retrieval.store import sidecar
from cce_retrieval.store.chunks import StoredChunks
from cce_retrieval.store.sidecar import (
    digests,
    load_store,
    parts,
    sidecar_dir,
    staging,
    write_sidecar,
)
from cce_retrieval.store.write import write_store

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
    part = next(directory.glob("*-embedding_values.npy"))
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


# --- chunks decoded on demand -----------------------------------------------------------


def test_sidecar_chunks_are_decoded_on_demand_and_equal_the_parsed_ones(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    parsed = load_index(store).chunks
    stored = load_store(store).chunks
    assert isinstance(stored, StoredChunks)
    assert len(stored) == len(parsed)
    assert stored[-1] == parsed[-1] and stored[0] == parsed[0]
    assert stored[1:4] == list(parsed[1:4])
    with pytest.raises(IndexError):
        stored[len(parsed)]
    assert list(stored.chunk_ids()) == [c.chunk_id for c in parsed]
    assert [stored.file_path(i) for i in range(len(stored))] == [c.file_path for c in parsed]
    by_file: dict[str, list[int]] = {}
    for i, chunk in enumerate(parsed):
        by_file.setdefault(chunk.file_path, []).append(i)
    assert stored.indices_by_file() == by_file
    first = stored[2]
    assert stored.materialise()[2] is first  # decoded once, then reused
    assert stored == parsed and parsed == stored
    assert pickle.loads(pickle.dumps(stored)) == list(parsed)


def test_a_query_decodes_only_the_chunks_it_reads(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    index = load_store(store)
    search(index, HashEmbedder(), "lru cache eviction", 3, True)
    chunks = index.chunks
    assert isinstance(chunks, StoredChunks)
    assert 0 < len(chunks._made) < len(chunks)


# --- the store's digest, remembered by its file status ----------------------------------


def hashes_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = digests.file_sha256

    def counting(path: str) -> tuple[str, int]:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(digests, "file_sha256", counting)
    return calls


def test_a_settled_store_is_hashed_once_then_known_by_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = persisted(tmp_path)
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)
    calls = hashes_counted(monkeypatch)
    assert_same_index(load_store(store), load_index(store))
    assert_same_index(load_store(store), load_index(store))
    assert calls == [store]
    assert len(list(Path(sidecar_dir(store)).glob("*.status.json"))) == 1


def test_a_store_written_just_now_is_hashed_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its change time is within the clock's resolution of the hash: a write in the same
    # tick could leave the status unchanged, so the status is not trusted yet.
    store, _ = persisted(tmp_path)
    calls = hashes_counted(monkeypatch)
    load_store(store)
    load_store(store)
    assert calls == [store, store]
    assert not list(Path(sidecar_dir(store)).glob("*.status.json"))


def store_facts(store: str) -> tuple[str, int]:
    data = Path(store).read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def test_a_store_holds_its_own_bytes_and_no_others(tmp_path: Path) -> None:
    store, _ = persisted(tmp_path)
    digest, size = store_facts(store)
    assert sidecar.store_holds(store, digest, size)
    assert not sidecar.store_holds(store, "0" * 64, size)
    assert not sidecar.store_holds(store, digest, size + 1)
    assert not sidecar.store_holds(str(tmp_path / "absent.json"), digest, size)


def test_a_store_of_another_size_is_not_read_to_tell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = persisted(tmp_path)
    digest, size = store_facts(store)
    calls = hashes_counted(monkeypatch)
    assert not sidecar.store_holds(store, digest, size - 1)
    assert calls == []


@pytest.fixture
def settled_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, int]:
    """A persisted store, its digest and size, with every status counted as settled."""
    store, _ = persisted(tmp_path)
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)
    return (store, *store_facts(store))


def test_a_settled_store_holds_its_bytes_by_its_status_alone(
    settled_store: tuple[str, str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, digest, size = settled_store
    calls = hashes_counted(monkeypatch)
    assert sidecar.store_holds(store, digest, size)  # hashed, then remembered
    assert sidecar.store_holds(store, digest, size)
    assert calls == [store]
    load_store(store)  # a reader trusts the same record
    assert calls == [store]


def test_a_store_changed_in_place_no_longer_holds_the_old_bytes(
    settled_store: tuple[str, str, int],
) -> None:
    store, digest, size = settled_store
    past = os.stat(store).st_mtime_ns - 10**10
    os.utime(store, ns=(past, past))  # the write below moves it, however coarse the clock
    assert sidecar.store_holds(store, digest, size)
    data = Path(store).read_bytes()
    with open(store, "r+b") as handle:  # same inode, same size, new change time
        handle.seek(data.index(b"def ") + 4)
        handle.write(b"Z")
    assert not sidecar.store_holds(store, digest, size)


def test_a_store_written_just_now_is_held_but_its_digest_not_remembered(
    tmp_path: Path,
) -> None:
    store, _ = persisted(tmp_path)
    assert sidecar.store_holds(store, *store_facts(store))
    assert not list(Path(sidecar_dir(store)).glob("*.status.json"))


def test_a_store_changing_while_hashed_is_not_remembered(
    settled_store: tuple[str, str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, digest, size = settled_store
    real = digests.file_sha256

    def hash_then_touch(path: str) -> tuple[str, int]:
        found = real(path)
        os.utime(path, ns=(10**18, 10**18))  # its status moves while it is read
        return found

    monkeypatch.setattr(digests, "file_sha256", hash_then_touch)
    assert sidecar.store_holds(store, digest, size)
    load_store(store)
    assert not list(Path(sidecar_dir(store)).glob("*.status.json"))


@pytest.mark.parametrize("name", ["status", "manifest"])
def test_hostile_nesting_in_the_sidecar_is_untrusted_never_a_crash(
    tmp_path: Path, name: str
) -> None:
    store, _ = persisted(tmp_path)
    digest, size = store_facts(store)
    directory = Path(sidecar_dir(store))
    target = directory / (f"{digest}.status.json" if name == "status" else f"{digest}.json")
    target.write_text("[" * 200_000)
    assert sidecar.store_holds(store, digest, size)
    assert_same_index(load_store(store), load_index(store))


def test_a_store_rewritten_in_place_with_its_old_size_and_times_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = persisted(tmp_path)
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)
    load_store(store)
    data = Path(store).read_bytes()
    st = os.stat(store)
    position = data.index(b"def ") + 4
    with open(store, "r+b") as handle:  # same inode, same size
        handle.seek(position)
        handle.write(b"Z")
    os.utime(store, ns=(st.st_atime_ns, st.st_mtime_ns))  # the old modification time back
    calls = hashes_counted(monkeypatch)
    loaded = load_store(store)
    assert calls == [store]  # the change time moved, so the status no longer matches
    assert_same_index(loaded, load_index(store))


def test_a_status_record_naming_another_digest_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = persisted(tmp_path)
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)
    load_store(store)
    record_path = next(Path(sidecar_dir(store)).glob("*.status.json"))
    record = json.loads(record_path.read_text())
    record["sha256"] = "0" * 64
    record_path.write_text(json.dumps(record))
    calls = hashes_counted(monkeypatch)
    assert_same_index(load_store(store), load_index(store))
    assert calls == [store]


@pytest.mark.parametrize("bm25", ["with the rest", "apart", "started before"])
def test_staged_parts_become_the_same_sidecar_as_a_direct_write(tmp_path: Path, bm25: str) -> None:
    import concurrent.futures

    store, index = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    direct = {p.name: p.read_bytes() for p in directory.iterdir()}
    shutil.rmtree(directory)
    # As `cce index` does: BM25 started from the build's factory before any thread.
    started = None
    if bm25 == "started before":
        started = sidecar.start_bm25_staging(functools.partial(bm25_and_ranks, index), store)
    with concurrent.futures.ThreadPoolExecutor(2) as syncer:
        if bm25 == "with the rest":
            staged = sidecar.stage_sidecar(store, sidecar.prepare_sidecar(index), syncer)
        else:  # BM25 laid out apart while the other parts are written
            staged = sidecar.stage_index_sidecar(index, store, syncer, started)
    # Before the store's digest is known only staging files exist, and no manifest.
    assert all(p.name.startswith(".staged.") for p in directory.iterdir())
    data = Path(store).read_bytes()
    write_sidecar(index, store, hashlib.sha256(data).hexdigest(), len(data), staged=staged)
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == direct


@pytest.mark.parametrize("failing", ["bm25", "the other parts"])
def test_staging_beside_bm25_leaves_nothing_when_either_side_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    import concurrent.futures

    store, index = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    started = None
    if failing == "bm25":

        def unordered(index: Index) -> object:
            raise ValueError("BM25 term ids are not in first-occurrence order")

        monkeypatch.setattr(staging, "bm25_and_ranks", unordered)
    else:  # BM25's parts are written all the same, and removed with the rest
        started = sidecar.start_bm25_staging(functools.partial(bm25_and_ranks, index), store)

        def full(*args: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(staging, "column_parts", full)
    with concurrent.futures.ThreadPoolExecutor(2) as syncer, pytest.raises((ValueError, OSError)):
        sidecar.stage_index_sidecar(index, store, syncer, started)
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_bm25_parts_staged_for_nothing_are_removed(tmp_path: Path) -> None:
    store, index = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    staged = sidecar.start_bm25_staging(functools.partial(bm25_and_ranks, index), store).result()
    bm25_parts = {name for name in parts.PART_ORDER if name.startswith("bm25_")}
    assert set(staged.staged_names) == bm25_parts | {"id_ranks", "terms"}
    assert len(list(directory.iterdir())) == len(before) + len(staged.staged_names)
    staged.discard()
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_a_cancelled_bm25_staging_is_stopped_and_leaves_nothing(tmp_path: Path) -> None:
    import time

    from cce_retrieval.build.processes import can_fork_alone

    if not can_fork_alone():
        pytest.skip("BM25 is staged on a thread here; a thread cannot be stopped")
    store, _ = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    before = {p.name: p.read_bytes() for p in directory.iterdir()}

    def half_staged() -> tuple[object, object]:
        # A child caught between two parts: one staging file written, the next not yet.
        Path(directory, f".staged.{os.getpid()}.0.bm25_docs.npy").write_bytes(b"partial")
        time.sleep(60)
        raise AssertionError("not stopped")

    staging = sidecar.start_bm25_staging(half_staged, store)  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while len(list(directory.iterdir())) == len(before) and time.monotonic() < deadline:
        time.sleep(0.01)
    began = time.monotonic()
    staging.cancel()
    assert time.monotonic() - began < 10
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_staging_files_of_writers_that_are_gone_are_removed_and_others_kept(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    store, _ = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    kept = {p.name for p in directory.iterdir()}
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # collected: its pid names no process now
    left = [f".staged.{gone.pid}.0.terms.bin", f"..staged.{gone.pid}.1.bm25_docs.npy.tmp.7.0"]
    running = [f".staged.{os.getpid()}.0.terms.bin", ".staged.x.0.terms.bin"]
    for name in [*left, *running]:
        Path(directory, name).write_bytes(b"staged")
    sidecar.remove_dead_staging(store)
    # Only the gone writer's files go; a running writer's, and anything unnamed, stay.
    assert {p.name for p in directory.iterdir()} == kept | set(running)
    sidecar.remove_dead_staging(str(tmp_path / "no-store-here" / "index.json"))


def test_staging_files_of_a_killed_writer_are_never_read_and_are_removed(tmp_path: Path) -> None:
    store, index = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    part = next(directory.glob("*-embedding_values.npy"))
    stray = directory / ".staged.999999.0.embedding_values.npy"
    stray.write_bytes(b"\0" * part.stat().st_size)
    assert_same_index(load_store(store), load_index(store))
    data = Path(store).read_bytes()
    write_sidecar(index, store, hashlib.sha256(data).hexdigest(), len(data))
    assert not stray.exists()


def test_discarding_a_staged_sidecar_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    import concurrent.futures

    store, index = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    before = sorted(p.name for p in directory.iterdir())
    with concurrent.futures.ThreadPoolExecutor(2) as syncer:
        staged = sidecar.stage_sidecar(store, sidecar.prepare_sidecar(index), syncer)
    staged.discard()
    assert sorted(p.name for p in directory.iterdir()) == before
    shutil.rmtree(directory)
    with concurrent.futures.ThreadPoolExecutor(2) as syncer:
        staged = sidecar.stage_sidecar(store, sidecar.prepare_sidecar(index), syncer)
    staged.discard()
    assert not directory.exists()  # staging made it, so discarding removes it


@pytest.mark.parametrize("order", ["C", "F"])
def test_the_embedding_part_is_the_matrix_by_dimension_in_either_layout(
    tmp_path: Path, order: str
) -> None:
    # A build lays its matrix out by dimension (written from its own memory); a parsed
    # store's is row-major (transposed a few dimensions at a time). Same file either way.
    rows = np.random.default_rng(7).standard_normal((37, 256))
    rows[3, 5] = -0.0
    matrix = np.asfortranarray(rows) if order == "F" else np.ascontiguousarray(rows)
    assert matrix.T.flags.c_contiguous == (order == "F")
    written = b"".join(bytes(piece) for piece in parts.TransposedNpy(matrix))
    np.save(tmp_path / "expected.npy", np.ascontiguousarray(rows.T))
    loaded = np.load(tmp_path / "expected.npy")
    assert np.lib.format.read_array(io.BytesIO(written)).tobytes() == loaded.tobytes()
    assert len(written) == parts.TransposedNpy(matrix).size


def test_only_a_manifest_makes_a_sidecar_worth_checking(tmp_path: Path) -> None:
    store = str(tmp_path / "index.json")
    assert not sidecar.has_sidecar_manifest(store)
    directory = Path(sidecar_dir(store))
    directory.mkdir()
    digest = hashlib.sha256(b"store").hexdigest()
    for name in (
        ".staged.123.0.embeddings_by_dim.npy",
        f"{digest}-ids.bin",
        f"{digest}.status.json",
        f"{digest[:-1]}.json",
        f"{digest.upper()}.json",
    ):
        (directory / name).write_bytes(b"")
    assert not sidecar.has_sidecar_manifest(store)
    (directory / f"{digest}.json").write_bytes(b"{}")
    assert sidecar.has_sidecar_manifest(store)


# --- embeddings as their cells ----------------------------------------------------------


def _part_names(store: str) -> set[str]:
    manifest = json.loads(next(Path(sidecar_dir(store)).glob("*.json")).read_text())
    return set(manifest["parts"])


def test_hash_embeddings_are_kept_as_cells_and_read_back_as_such(tmp_path: Path) -> None:
    store, index = persisted(tmp_path)
    assert isinstance(index.embeddings, SparseEmbeddings)  # the build never made the matrix
    names = _part_names(store)
    assert {"embedding_starts", "embedding_rows", "embedding_values"} <= names
    assert "embeddings_by_dim" not in names
    loaded = load_store(store)
    assert isinstance(loaded.embeddings, SparseEmbeddings)
    assert_same_index(loaded, load_index(store))


def test_a_parsed_hash_store_gets_a_sparse_sidecar_and_a_dense_one_stays_dense(
    tmp_path: Path,
) -> None:
    store, _ = persisted(tmp_path)
    shutil.rmtree(sidecar_dir(store))
    parsed = load_store(store)  # no sidecar: parsed, dense, and the sidecar rebuilt
    assert isinstance(parsed.embeddings, np.ndarray)
    assert "embedding_values" in _part_names(store)
    assert isinstance(load_store(store).embeddings, SparseEmbeddings)
    # Mostly non-zero rows (a model's embeddings) keep the dense layout.
    dense_rows = np.random.default_rng(3).standard_normal((len(parsed.chunks), 8))
    dense = Index(
        embedder="ollama",
        chunks=list(parsed.chunks),
        embeddings=dense_rows,
        embedding_lengths=[8] * len(parsed.chunks),
        embedder_model="m",
        embedding_dim=8,
    )
    other = str(tmp_path / "dense" / "index.json")
    saved = write_store(dense, other)
    write_sidecar(dense, other, saved.sha256, saved.size)
    names = _part_names(other)
    assert "embeddings_by_dim" in names and "embedding_values" not in names
    back = load_store(other)
    assert np.asarray(back.embeddings).tobytes() == dense_rows.tobytes()


_CELL_DAMAGE = (
    "row-out-of-range",
    "starts-past-the-end",
    "starts-wrapping-around",
    "rows-out-of-order",
    "row-twice",
    "negative-width",
    "rows-not-the-chunks",
    "value-not-finite",
    "value-too-large",
    "nul-in-a-header",
    "schema-v1",
)


def _damage_cells(directory: Path, manifest: dict[str, Any], damage: str) -> None:
    """Make the sparse parts (or the manifest) say something the store does not."""

    def part(name: str) -> Path:
        return directory / str(manifest["parts"][name]["file"])

    def agree(name: str) -> None:
        # Size and digest still agree: what is left to catch it is the layout check.
        data = part(name).read_bytes()
        manifest["parts"][name]["bytes"] = len(data)
        manifest["parts"][name]["sha256"] = hashlib.sha256(data).hexdigest()

    def rewrite(name: str, array: np.ndarray) -> None:
        with open(part(name), "wb") as handle:
            np.save(handle, array)
        agree(name)

    starts = np.load(part("embedding_starts"))
    rows = np.load(part("embedding_rows"))
    # A dimension with at least two cells, so its rows can be reordered or repeated.
    dim = int(np.flatnonzero(np.diff(starts) >= 2)[0])
    first = int(starts[dim])
    if damage == "row-out-of-range":
        rows[len(rows) // 2] = manifest["chunks"]
        rewrite("embedding_rows", rows)
    elif damage == "starts-past-the-end":
        starts[-1] += 1
        rewrite("embedding_starts", starts)
    elif damage == "starts-wrapping-around":
        # Every difference of these offsets wraps around to a non-negative value.
        starts[1:4] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1]
        rewrite("embedding_starts", starts)
    elif damage == "rows-out-of-order":
        rows[first], rows[first + 1] = rows[first + 1], rows[first]
        rewrite("embedding_rows", rows)
    elif damage == "row-twice":
        rows[first + 1] = rows[first]
        rewrite("embedding_rows", rows)
    elif damage == "negative-width":
        manifest["embedding_width"] = -1
        rewrite("embedding_starts", np.zeros(0, dtype=np.int64))
    elif damage == "rows-not-the-chunks":
        manifest["embedding_rows"] = manifest["chunks"] + 5
    elif damage == "value-not-finite":
        values = np.load(part("embedding_values"))
        values[len(values) // 3] = np.nan
        rewrite("embedding_values", values)
    elif damage == "value-too-large":
        values = np.load(part("embedding_values"))
        values[len(values) // 3] = 1e300  # finite, but its products overflow
        rewrite("embedding_values", values)
    elif damage == "nul-in-a-header":
        data = bytearray(part("embedding_rows").read_bytes())
        data[12] = 0  # numpy's header parser then fails with tokenize's TokenError
        part("embedding_rows").write_bytes(bytes(data))
        agree("embedding_rows")
    else:
        manifest["schema"] = "cce.sidecar/v1"


@pytest.mark.parametrize("damage", _CELL_DAMAGE)
def test_damaged_cells_or_an_older_layout_fall_back_to_the_store(
    tmp_path: Path, damage: str
) -> None:
    store, _ = persisted(tmp_path)
    directory = Path(sidecar_dir(store))
    manifest_path = next(directory.glob("*.json"))
    manifest = json.loads(manifest_path.read_text())
    _damage_cells(directory, manifest, damage)
    manifest_path.write_text(json.dumps(manifest))
    loaded = load_store(store)  # parsed instead: never a failed or mis-scored query
    assert isinstance(loaded.embeddings, np.ndarray)
    assert_same_index(loaded, load_index(store))


def test_a_dense_index_of_other_floats_still_gets_its_sidecar(tmp_path: Path) -> None:
    _, built = persisted(tmp_path)
    chunks = list(built.chunks)[:3]
    matrix = np.zeros((3, 3), dtype=np.float32)  # 36 bytes: not whole float64 cells
    matrix[1, 2] = 0.5
    index = Index(
        embedder="ollama",
        chunks=chunks,
        embeddings=matrix,  # type: ignore[arg-type]  # what the type says is float64
        embedder_model="m",
    )
    store = str(tmp_path / "f32" / "index.json")
    saved = write_store(index, store)
    write_sidecar(index, store, saved.sha256, saved.size)
    assert "embedding_values" in _part_names(store)  # one cell in nine: kept as cells
    assert np.asarray(load_store(store).embeddings).tolist() == matrix.astype(float).tolist()


# --- parts changed in place, at their recorded size ---------------------------------------

_SAME_SIZE_DAMAGE = ("0xff", "zeros", "data zeroed", "one flipped byte")


def _data_offset(part: Path) -> int:
    """Where an `.npy` part's data begins (its header still parses when only the data
    changes); 0 for a `.bin` blob."""
    if part.suffix != ".npy":
        return 0
    with open(part, "rb") as handle:
        if np.lib.format.read_magic(handle) == (2, 0):
            np.lib.format.read_array_header_2_0(handle)
        else:
            np.lib.format.read_array_header_1_0(handle)
        return handle.tell()


def _damage_in_place(part: Path, damage: str) -> None:
    """Overwrite `part` in place (same inode, same size) with other bytes."""
    data = bytearray(part.read_bytes())
    if damage == "0xff":
        data[:] = b"\xff" * len(data)
    elif damage == "zeros":
        data[:] = bytes(len(data))
    elif damage == "data zeroed":
        start = _data_offset(part)
        data[start:] = bytes(len(data) - start)
    else:
        data[len(data) // 2] ^= 0x01
    with open(part, "r+b") as handle:
        handle.write(bytes(data))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store with its sidecar, and the names of the sidecar's parts."""
    store, _ = persisted(tmp_path_factory.mktemp("pristine"))
    (manifest,) = Path(sidecar_dir(store)).glob("*.json")
    names = sorted(json.loads(manifest.read_text())["parts"])
    return Path(store).parent, names


def _copy_of(pristine: tuple[Path, list[str]], tmp_path: Path) -> tuple[str, Path]:
    shutil.copytree(pristine[0], tmp_path / "store")
    store = tmp_path / "store" / "index.json"
    (manifest,) = Path(sidecar_dir(str(store))).glob("*.json")
    return str(store), manifest


def _part(manifest: Path, name: str) -> Path:
    return manifest.parent / str(json.loads(manifest.read_text())["parts"][name]["file"])


def _parts_verify(manifest: Path) -> bool:
    document = json.loads(manifest.read_text())
    return digests.parts_hold_their_bytes(
        str(manifest.parent), document["store_sha256"], document["parts"]
    )


def test_every_part_kind_is_named_with_its_digest(pristine: tuple[Path, list[str]]) -> None:
    # Every kind of part a hash store's sidecar has: the damage below covers them all.
    assert set(pristine[1]) == set(parts.PART_ORDER) - {"embeddings_by_dim"}
    (manifest,) = Path(sidecar_dir(str(pristine[0] / "index.json"))).glob("*.json")
    for part in json.loads(manifest.read_text())["parts"].values():
        data = (manifest.parent / part["file"]).read_bytes()
        assert part["sha256"] == hashlib.sha256(data).hexdigest()
        assert part["bytes"] == len(data)


@pytest.mark.parametrize("damage", _SAME_SIZE_DAMAGE)
def test_a_part_changed_in_place_at_its_size_is_never_trusted(
    pristine: tuple[Path, list[str]], tmp_path: Path, damage: str
) -> None:
    """Each part kind in turn: the index is the parsed store's (same chunks, embeddings
    and rankings from every backend), and the sidecar written back verifies."""
    parsed = load_index(str(pristine[0] / "index.json"))
    for name in pristine[1]:
        case = tmp_path / name
        store, manifest = _copy_of(pristine, case)
        part = _part(manifest, name)
        _damage_in_place(part, damage)
        assert not _parts_verify(manifest)
        # What `cce index` asks before keeping a sidecar in place, with or without the
        # build cache's record of the store.
        facts = store_facts(store)
        assert not sidecar.sidecar_is_current(store, *facts)
        assert sidecar.current_sidecar_chunks(store, *facts) is None
        assert_same_index(load_store(store), parsed)
        assert sidecar.current_sidecar_chunks(store, *facts) == len(parsed.chunks)
        assert _parts_verify(manifest), name  # rebuilt by the load
        assert part.read_bytes() == (pristine[0] / part.relative_to(case / "store")).read_bytes()


@pytest.fixture
def settled_parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Parts count as settled at once (no 2 s wait); returns how many parts get hashed."""
    monkeypatch.setattr(digests, "_SETTLED_NS", 0)
    hashed: list[int] = []
    real = digests._part_sha256

    def counting(fd: int, size: int) -> str:
        hashed.append(size)
        return real(fd, size)

    monkeypatch.setattr(digests, "_part_sha256", counting)
    return hashed


def test_verified_parts_are_known_by_their_status_and_hashed_again_once_changed(
    pristine: tuple[Path, list[str]], tmp_path: Path, settled_parts: list[int]
) -> None:
    store, manifest = _copy_of(pristine, tmp_path)
    parsed = load_index(store)
    assert_same_index(load_store(store), parsed)
    assert len(settled_parts) == len(pristine[1])  # each part read once...
    settled_parts.clear()
    assert_same_index(load_store(store), parsed)
    assert settled_parts == []  # ...then known by its status: a normal open reads none
    # Changed in place after it was verified, with its old modification time put back:
    # its change time moved, so it is read again, and distrusted.
    part = _part(manifest, "bm25_freqs")
    before = part.stat()
    _damage_in_place(part, "zeros")
    os.utime(part, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert_same_index(load_store(store), parsed)
    assert settled_parts  # the changed part was hashed (and the rebuilt ones after it)
    assert _parts_verify(manifest)


def test_a_part_verified_just_now_is_hashed_every_time(
    pristine: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = _copy_of(pristine, tmp_path)
    hashed: list[int] = []
    real = digests._part_sha256

    def counting(fd: int, size: int) -> str:
        hashed.append(size)
        return real(fd, size)

    monkeypatch.setattr(digests, "_part_sha256", counting)
    for _ in range(2):
        load_store(store)
    # Written less than 2 s ago: a change in the same clock tick could leave its status.
    assert len(hashed) == 2 * len(pristine[1])
    assert not list(Path(sidecar_dir(store)).glob("*.verified.json"))


@pytest.mark.parametrize("special", ["fifo", "symlink to /dev/zero", "directory"])
def test_a_part_replaced_by_a_special_file_is_never_read(
    pristine: tuple[Path, list[str]], tmp_path: Path, special: str
) -> None:
    store, manifest = _copy_of(pristine, tmp_path)
    part = _part(manifest, "terms")
    part.unlink()
    if special == "fifo":
        os.mkfifo(part)
    elif special == "directory":
        part.mkdir()
    else:
        part.symlink_to("/dev/zero")
    parsed = load_index(store)
    assert_same_index(load_store(store), parsed)


# Far over what loading a small store takes: only a read that blocks reaches it.
_DEADLINE_SECONDS = 20


@pytest.mark.parametrize("record", ["manifest", "verified parts", "store status"])
@pytest.mark.parametrize("special", ["fifo", "symlink to /dev/zero"])
def test_a_sidecar_record_replaced_by_a_special_file_is_never_read(
    pristine: tuple[Path, list[str]], tmp_path: Path, record: str, special: str
) -> None:
    store, manifest = _copy_of(pristine, tmp_path)
    digest = manifest.name.removesuffix(".json")
    path = {
        "manifest": manifest,
        "verified parts": manifest.parent / f"{digest}.verified.json",
        "store status": manifest.parent / f"{digest}.status.json",
    }[record]
    path.unlink(missing_ok=True)
    if special == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    loaded: list[Index] = []
    # A daemon thread, so that a read that blocks fails the test instead of hanging it.
    reader = threading.Thread(target=lambda: loaded.append(load_store(store)), daemon=True)
    reader.start()
    reader.join(_DEADLINE_SECONDS)
    assert loaded, "loading the store blocked on the special file"
    assert_same_index(loaded[0], load_index(store))


@pytest.mark.parametrize(
    "change", ["no digest", "digest not text", "path outside", "bytes not a number"]
)
def test_a_manifest_without_a_usable_part_digest_is_never_trusted(
    pristine: tuple[Path, list[str]], tmp_path: Path, change: str
) -> None:
    store, manifest = _copy_of(pristine, tmp_path)
    document = json.loads(manifest.read_text())
    entry = document["parts"]["content"]
    if change == "no digest":
        del entry["sha256"]
    elif change == "digest not text":
        entry["sha256"] = 7
    elif change == "path outside":
        entry["file"] = "../index.json"
    else:
        entry["bytes"] = float(entry["bytes"])
    manifest.write_text(json.dumps(document))
    assert_same_index(load_store(store), load_index(store))
    assert _parts_verify(manifest)
