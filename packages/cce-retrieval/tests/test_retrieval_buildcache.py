"""Parallel and cached builds: the same index bytes as the serial, uncached build."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import struct
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval import BuildResult, build_index, serialize_index
from cce_retrieval.build import files as build_files
from cce_retrieval.build import outcomes as build_outcomes
from cce_retrieval.build import pipeline as build_module
from cce_retrieval.build import terms as build_terms
from cce_retrieval.build.cache import (
    BuildCache,
    CacheSalt,
    EntryText,
    FileOutcome,
    StoreRecord,
    TermCounts,
)
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import bm25_and_ranks
from cce_retrieval.rank.order import id_order_ranks
from cce_retrieval.store import write as store_write
from cce_retrieval.store.fileio import AtomicFile
from cce_retrieval.store.write import write_store

SAMPLE = Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample"


def salt(protect: bool = True, embedder: str = "hash", model: str = "") -> CacheSalt:
    return CacheSalt("e", "p", "t", protect, embedder, model, code="c")


def corpus(tmp_path: Path) -> str:
    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    (root / "extra.py").write_text("def é():\n    return '🙂'\n\nclass K:\n    pass\n")
    return str(root)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*/*.entry"))


def store_bytes(result: BuildResult) -> bytes:
    """The store as `cce index` writes it (chunk text made by the build), checked against
    the store formatted from the index alone."""
    assert result.store_chunks is not None
    made = serialize_index(result.index, result.store_chunks)
    assert made == serialize_index(result.index)
    return made


def test_parallel_build_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = corpus(tmp_path)
    serial = serialize_index(build_index(root, HashEmbedder()).index)
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    calls: list[int] = []
    parallel = build_index(root, HashEmbedder(), jobs=2, progress=lambda d, t: calls.append(d))
    assert store_bytes(parallel) == serial
    assert calls[0] == 0 and calls[-1] == parallel.files_indexed


@pytest.mark.parametrize("store_text", [True, False])
def test_workers_writing_entries_send_back_what_a_serial_build_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_text: bool
) -> None:
    """With a cache, workers send each outcome in its entry's encoding (`EncodedOutcome`);
    decoded here it must give the serial build's index, BM25 and strict counts."""
    root = corpus(tmp_path)
    # A URL password: only strict protection redacts it, so the strict count is not 0.
    Path(root, "db.py").write_text('print("postgresql://admin:Xk29fPq7LmZ@db.internal/prod")\n')
    serial = build_index(root, HashEmbedder(), store_text=store_text)
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    sent: list[str] = []
    real_task = build_files.packed_outcome_task

    text_sent: list[bool] = []
    places: list[object] = []

    def recorded(task: Any) -> Any:
        result = real_task(task)
        sent.append(type(result).__name__)
        text_sent.append(bool(getattr(result, "store_text", None)))
        places.append(getattr(result, "text_in_entry", None))
        return result

    # Run the workers' task in-process (a thread pool) so what they send is observable.
    monkeypatch.setattr(build_outcomes, "packed_outcome_task", recorded)
    monkeypatch.setattr(
        concurrent.futures,
        "ProcessPoolExecutor",
        lambda workers, **options: concurrent.futures.ThreadPoolExecutor(workers),
    )
    cache = BuildCache(str(tmp_path / "cache"), salt())
    parallel = build_index(root, HashEmbedder(), jobs=2, cache=cache, store_text=store_text)
    assert set(sent) == {"EncodedOutcome"} and len(sent) == serial.files_indexed
    # The store text stays in the entry each worker wrote; the build reads it there.
    assert not any(text_sent)
    assert all(place is not None for place in places) == store_text
    assert serialize_index(parallel.index) == serialize_index(serial.index)
    if store_text:
        assert store_bytes(parallel) == serialize_index(serial.index)
    else:
        assert parallel.store_chunks is None
    assert parallel.strict_redactions == serial.strict_redactions > 0
    got, want = bm25_and_ranks(parallel.index), bm25_and_ranks(serial.index)
    assert got[0].arrays().term_ids == want[0].arrays().term_ids
    assert got[1].tolist() == want[1].tolist()


def test_a_store_text_whose_entry_vanished_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus(tmp_path)
    serial = serialize_index(build_index(root, HashEmbedder()).index)
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    cache = BuildCache(str(tmp_path / "cache"), salt())
    removed: list[str] = []
    real_read = EntryText.read

    def pruned_meanwhile(place: EntryText) -> bytes | None:
        if not removed:  # the first entry is removed (by another run's pruning) before reading
            os.unlink(place.path)
            removed.append(place.path)
        return real_read(place)

    monkeypatch.setattr(EntryText, "read", pruned_meanwhile)
    parallel = build_index(root, HashEmbedder(), jobs=2, cache=cache)
    assert store_bytes(parallel) == serial
    assert len(removed) == 1 and os.path.exists(removed[0])  # made again, and written again


def test_an_entrys_store_text_is_read_only_where_the_entry_still_holds_it(tmp_path: Path) -> None:
    cache = BuildCache(str(tmp_path / "cache"), salt())
    chunk = Chunk("0" * 16, "a.py", 1, 1, "function", "function_definition", "python", "x", 1)
    terms = TermCounts(("x",), *(np.array(v, dtype=np.int64) for v in ([0], [1], [1], [1])))
    text = b'{"chunk_id":"0000000000000000"}'
    outcome = FileOutcome(
        chunks=(chunk,),
        imports=(),
        file_tokens=1,
        embeddings=np.zeros((1, 4)),
        lengths=(4,),
        terms=terms,
        store_text=text,
    )
    key = cache.key("a.py", "x")
    place = cache.put(key, outcome).text_in_entry
    assert place is not None and place.read() == text
    path = Path(place.path)
    path.write_bytes(path.read_bytes() + b"more")  # not the file `put` wrote any more
    assert place.read() is None
    path.unlink()
    assert place.read() is None
    (tmp_path / "a-file").write_text("")
    unwritable = BuildCache(str(tmp_path / "a-file" / "cache"), salt())  # cannot be made
    assert unwritable.put(key, outcome).text_in_entry is None


def test_cold_and_warm_cache_builds_are_byte_identical(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    plain = serialize_index(build_index(root, HashEmbedder()).index)
    cache_dir = tmp_path / "cache"
    cold = BuildCache(str(cache_dir), salt())
    assert store_bytes(build_index(root, HashEmbedder(), cache=cold)) == plain
    files = build_index(root, HashEmbedder()).files_indexed
    assert (cold.hits, cold.writes) == (0, files)
    warm = BuildCache(str(cache_dir), salt())
    assert store_bytes(build_index(root, HashEmbedder(), cache=warm)) == plain
    assert (warm.hits, warm.misses) == (files, 0)


def test_an_edited_file_misses_and_the_rest_hit(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    cache_dir = str(tmp_path / "cache")
    build_index(root, HashEmbedder(), cache=BuildCache(cache_dir, salt()))
    Path(root, "cache.py").write_text(Path(root, "cache.py").read_text() + "\n# edited\n")
    cache = BuildCache(cache_dir, salt())
    result = build_index(root, HashEmbedder(), cache=cache)
    assert (cache.hits, cache.misses) == (result.files_indexed - 1, 1)
    assert store_bytes(result) == serialize_index(build_index(root, HashEmbedder()).index)


def test_files_without_entries_are_computed_by_a_worker_while_the_rest_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus(tmp_path)
    cache_dir = str(tmp_path / "cache")
    build_index(root, HashEmbedder(), cache=BuildCache(cache_dir, salt()))
    Path(root, "cache.py").write_text(Path(root, "cache.py").read_text() + "\n# edited\n")
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    pools: list[int] = []
    real_pool = concurrent.futures.ProcessPoolExecutor

    def counted_pool(workers: int, **options: Any) -> concurrent.futures.ProcessPoolExecutor:
        pools.append(workers)
        return real_pool(workers, **options)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counted_pool)
    cache = BuildCache(cache_dir, salt())
    calls: list[int] = []
    result = build_index(
        root, HashEmbedder(), jobs=2, cache=cache, progress=lambda d, t: calls.append(d)
    )
    assert pools == [1]  # one file to compute: one worker, beside the reading here
    assert (cache.hits, cache.misses) == (result.files_indexed - 1, 1)
    assert calls == [result.files_indexed - 1, result.files_indexed]
    assert store_bytes(result) == serialize_index(build_index(root, HashEmbedder()).index)


@pytest.mark.parametrize(
    "other",
    [
        salt(protect=False),
        salt(embedder="ollama"),
        salt(model="m"),
        CacheSalt("e", "p", "t", True, "hash", "", code="other source"),
    ],
)
def test_every_setting_that_shapes_chunks_is_in_the_key(other: CacheSalt) -> None:
    assert BuildCache("d", salt()).key("a.py", "x") != BuildCache("d", other).key("a.py", "x")


def test_path_and_text_are_both_in_the_key() -> None:
    cache = BuildCache("d", salt())
    assert cache.key("a.py", "x") != cache.key("b.py", "x")
    assert cache.key("a.py", "x") != cache.key("a.py", "y")
    # The length prefix keeps (path, text) pairs from running into each other.
    assert cache.key("ab", "c") != cache.key("a", "bc")


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "swap"])
def test_a_damaged_entry_is_a_miss_never_trusted(tmp_path: Path, damage: str) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    plain = serialize_index(build_index(root, HashEmbedder()).index)
    build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    victims = entries(cache_dir)
    data = victims[0].read_bytes()
    if damage == "truncate":
        victims[0].write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        victims[0].write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif damage == "empty":
        victims[0].write_bytes(b"")
    else:  # another file's (valid) entry under this key
        victims[0].write_bytes(victims[1].read_bytes())
    cache = BuildCache(str(cache_dir), salt())
    assert store_bytes(build_index(root, HashEmbedder(), cache=cache)) == plain
    assert cache.misses == 1


def test_prune_keeps_the_cache_within_its_bound(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    sizes = sorted(p.stat().st_size for p in entries(cache_dir))
    bound = sum(sizes) - sizes[0]  # one entry too many
    (cache_dir / "00").mkdir(exist_ok=True)
    stale = cache_dir / "00" / ".tmp.1.1"
    stale.write_bytes(b"partial")
    os.utime(stale, (0, 0))
    removed = BuildCache(str(cache_dir), salt(), max_bytes=bound).prune()
    assert removed >= 1
    assert sum(p.stat().st_size for p in entries(cache_dir)) <= bound
    assert not stale.exists()


def test_an_unwritable_cache_never_fails_the_build(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = BuildCache(str(blocker / "cache"), salt())
    result = build_index(root, HashEmbedder(), cache=cache)
    assert serialize_index(result.index) == serialize_index(build_index(root, HashEmbedder()).index)
    assert cache.writes == 0


@pytest.mark.slow
def test_parallel_build_of_a_stdlib_subset_is_byte_identical(tmp_path: Path) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path / "stdlib"
    for package in ("json", "email", "asyncio", "http"):
        shutil.copytree(
            stdlib / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    serial = serialize_index(build_index(str(root), HashEmbedder()).index)
    cache = BuildCache(str(tmp_path / "cache"), salt())
    parallel = build_index(str(root), HashEmbedder(), jobs=2, cache=cache)
    assert store_bytes(parallel) == serial
    warm = build_index(str(root), HashEmbedder(), jobs=2, cache=BuildCache(cache.directory, salt()))
    assert store_bytes(warm) == serial


def test_made_chunk_text_is_ignored_for_an_index_with_other_chunks(tmp_path: Path) -> None:
    result = build_index(corpus(tmp_path), HashEmbedder())
    assert result.store_chunks is not None
    fewer = attrs.evolve(
        result.index,
        chunks=result.index.chunks[:-1],
        embeddings=result.index.embeddings[:-1],
    )
    assert serialize_index(fewer, result.store_chunks) == serialize_index(fewer)
    assert serialize_index(fewer) != serialize_index(result.index)


def test_made_chunk_text_written_in_many_blocks_is_the_same_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = build_index(corpus(tmp_path), HashEmbedder())
    monkeypatch.setattr(store_write, "_BLOCK_BYTES", 1)  # one write per file's chunks
    store = tmp_path / "index.json"
    saved = write_store(result.index, str(store), result.store_chunks)
    assert store.read_bytes() == serialize_index(result.index)
    assert saved.size == store.stat().st_size


def test_a_build_without_store_text_skips_that_part_of_the_entries(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    plain = serialize_index(build_index(root, HashEmbedder()).index)
    build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()), store_text=False)
    victim = max(entries(cache_dir), key=lambda p: p.stat().st_size)
    data = victim.read_bytes()
    victim.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # the last byte is store text
    unread = BuildCache(str(cache_dir), salt())
    result = build_index(root, HashEmbedder(), cache=unread, store_text=False)
    assert result.store_chunks is None
    assert serialize_index(result.index) == plain
    assert unread.misses == 0
    read = BuildCache(str(cache_dir), salt())
    assert store_bytes(build_index(root, HashEmbedder(), cache=read)) == plain
    assert read.misses == 1


TEXT = st.lists(
    st.characters(codec="utf-8") | st.sampled_from(["\ud800", " ", "\n"]), max_size=12
).map("".join)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(TEXT, TEXT, TEXT, st.integers(0, 2**31)), max_size=5),
    st.lists(TEXT, max_size=4),
    st.lists(TEXT, max_size=6, unique=True),
    st.booleans(),
)
def test_an_entry_gives_back_exactly_the_outcome_put(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str, str, int]],
    imports: list[str],
    vocabulary: list[str],
    with_text: bool,
) -> None:
    """Any strings (empty, spaced, lone surrogates) and numbers survive the entry format,
    whichever of its encodings (words or lengths) each field takes."""
    chunks = tuple(
        Chunk(chunk_id, "p/" + path, n % 7, n % 11, "function", kind, "python", content, n)
        for chunk_id, path, (kind, content), n in (
            (r[0], r[1], (r[2], r[1] + r[2]), r[3]) for r in rows
        )
    )
    n = len(chunks)
    matrix = np.zeros((n, 4))
    if n:
        matrix[0, 1], matrix[-1, 3] = -0.0, 0.25
    k = len(vocabulary)
    terms = TermCounts(
        tuple(vocabulary),
        np.arange(n * min(k, 1), dtype=np.int64) % max(k, 1),
        np.full(n * min(k, 1), 3, dtype=np.int64),
        np.full(n, min(k, 1), dtype=np.int64),
        np.arange(n, dtype=np.int64),
    )
    outcome = FileOutcome(
        chunks, tuple(imports), 17, matrix, (4,) * n, terms, 2, b"[1]" if with_text else None
    )
    cache = BuildCache(str(tmp_path_factory.mktemp("cache")), salt())
    cache.put(b"k" * 32, outcome)
    back = cache.get(b"k" * 32)
    assert back is not None
    assert back.chunks == outcome.chunks and back.imports == outcome.imports
    assert back.terms is not None and back.terms.vocabulary == terms.vocabulary
    for name in ("entry_terms", "entry_counts", "distinct", "lengths"):
        assert getattr(back.terms, name).tolist() == getattr(terms, name).tolist()
    assert back.embeddings is not None
    assert back.embeddings.view(np.uint64).tolist() == matrix.view(np.uint64).tolist()
    assert (back.lengths, back.file_tokens, back.strict_redactions, back.store_text) == (
        outcome.lengths,
        17,
        2,
        outcome.store_text,
    )


def bm25_entries(cache_dir: Path) -> list[Path]:
    return [p for p in entries(cache_dir) if p.read_bytes()[:8] == b"CCEBM001"]


def test_a_repeated_build_takes_bm25_from_the_cache_and_an_edit_does_not(
    tmp_path: Path,
) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    first = build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    built = bm25_and_ranks(first.index)
    assert len(bm25_entries(cache_dir)) == 1
    again = build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    cached = bm25_and_ranks(again.index)
    for made, kept in zip(built[0].arrays(), cached[0].arrays(), strict=True):
        if isinstance(made, np.ndarray):
            assert made.tolist() == np.asarray(kept).tolist()
        else:
            assert made == kept
    assert built[1].tolist() == cached[1].tolist()
    plain = build_index(root, HashEmbedder())
    for query in ("cache get entry", "def", "queue"):
        assert again_ranked(again, query) == again_ranked(plain, query)
    Path(root, "cache.py").write_text(Path(root, "cache.py").read_text() + "\ndef added(): pass\n")
    edited = build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    bm25_and_ranks(edited.index)
    assert len(bm25_entries(cache_dir)) == 2  # another set of files, another entry


def again_ranked(result: BuildResult, query: str) -> tuple[list[int], list[float]]:
    bm25, _ = bm25_and_ranks(result.index)
    order, scores = bm25.rank(query.split())
    return order.tolist(), scores.tolist()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_bm25_entry_is_rebuilt_never_trusted(tmp_path: Path, damage: str) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    expected = bm25_and_ranks(build_index(root, HashEmbedder()).index)[0].arrays()
    bm25_and_ranks(
        build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt())).index
    )
    (entry,) = bm25_entries(cache_dir)
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        del data[-9:]
    else:
        data[-40] ^= 0x01
    entry.write_bytes(bytes(data))
    result = build_index(root, HashEmbedder(), cache=BuildCache(str(cache_dir), salt()))
    got = bm25_and_ranks(result.index)[0].arrays()
    assert np.asarray(got.posting_docs).tolist() == np.asarray(expected.posting_docs).tolist()
    assert got.term_ids == expected.term_ids
    (rewritten,) = bm25_entries(cache_dir)
    assert rewritten.read_bytes() != bytes(data)  # the damaged one was replaced


def test_a_bm25_entry_larger_than_a_quarter_of_the_bound_is_not_kept(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    small, large = tmp_path / "small", tmp_path / "large"
    for directory, bound in ((small, 4096), (large, 1 << 30)):
        result = build_index(root, HashEmbedder(), cache=BuildCache(str(directory), salt(), bound))
        bm25_and_ranks(result.index)
    assert bm25_entries(small) == [] and len(bm25_entries(large)) == 1


# --- the store record of a whole build ------------------------------------------------

RECORD = StoreRecord(
    sha256="ab" * 32, size=1234, total_chunks=7, strict_redactions=2, embedder="hash", embed_dim=256
)


def record_files(directory: Path) -> list[Path]:
    return [path for path in entries(directory) if path.read_bytes().startswith(b"CCESR001")]


def test_a_store_record_reads_back_under_its_corpus_key_only(tmp_path: Path) -> None:
    cache = BuildCache(str(tmp_path), salt())
    key = cache.corpus_key([cache.key("a.py", "x = 1\n")])
    assert cache.get_store_record(key) is None
    cache.put_store_record(key, RECORD)
    assert cache.get_store_record(key) == RECORD
    other = cache.corpus_key([cache.key("a.py", "x = 2\n")])
    assert cache.get_store_record(other) is None
    # Under another salt (protection, embedder, code) the same files have another key.
    unprotected = BuildCache(str(tmp_path), salt(protect=False))
    files = [unprotected.key("a.py", "x = 1\n")]
    assert unprotected.get_store_record(unprotected.corpus_key(files)) is None
    assert len(record_files(tmp_path)) == 1


def _damaged_records() -> list[tuple[str, Callable[[bytes], bytes]]]:
    def rewrite_payload(payload: bytes) -> Callable[[bytes], bytes]:
        def damage(data: bytes) -> bytes:
            # A payload with a correct digest: only the fields themselves are wrong.
            # The header: magic, key, payload digest, payload length, text digest, length.
            header = bytearray(data[:120])
            header[40:72] = hashlib.sha256(payload).digest()
            header[72:80] = struct.pack("<Q", len(payload))
            return bytes(header) + payload

        return damage

    nested = b"[" * 100_000 + b"]" * 100_000
    fields = attrs.asdict(RECORD)
    return [
        ("truncated", lambda data: data[:-5]),
        ("flipped", lambda data: data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]),
        ("oversized", lambda data: data + b" " * 5000),
        ("not a record", lambda data: b"CCEBM001" + data[8:]),
        (
            "negative size",
            rewrite_payload(json.dumps({**attrs.asdict(RECORD), "size": -1}).encode()),
        ),
        (
            "bool count",
            rewrite_payload(json.dumps({**attrs.asdict(RECORD), "total_chunks": True}).encode()),
        ),
        (
            "short digest",
            rewrite_payload(json.dumps({**attrs.asdict(RECORD), "sha256": "ab"}).encode()),
        ),
        ("negative dim", rewrite_payload(json.dumps({**fields, "embed_dim": -7}).encode())),
        ("no embedder", rewrite_payload(json.dumps({**fields, "embedder": ""}).encode())),
        ("extra field", rewrite_payload(json.dumps({**attrs.asdict(RECORD), "x": 1}).encode())),
        ("nested", rewrite_payload(nested[:4000])),
        ("not json", rewrite_payload(b"\xff\xfe{")),
    ]


@pytest.mark.parametrize(
    ("name", "damage"), _damaged_records(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_a_damaged_store_record_is_never_trusted_and_is_removed(
    tmp_path: Path, name: str, damage: Callable[[bytes], bytes]
) -> None:
    cache = BuildCache(str(tmp_path), salt())
    key = cache.corpus_key([])
    cache.put_store_record(key, RECORD)
    (path,) = record_files(tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get_store_record(key) is None, name
    assert not path.exists()


def test_grammar_versions_are_read_as_the_installed_metadata_gives_them() -> None:
    from importlib import metadata

    from cce_retrieval.build.cache import salt as cache_salt

    for distribution in cache_salt._GRAMMARS:
        assert cache_salt._installed_version(distribution) == metadata.version(distribution)
    assert cache_salt._installed_version("cce-no-such-distribution") == "?"


# --- the store streamed during the build ----------------------------------------------


def streamed_store(result: BuildResult, path: str) -> bytes:
    """Finish the store a build streamed; its bytes, checked against the digest given."""
    assert result.store_stream is not None and result.store_chunks is None
    closed = result.store_stream.close_array(result.index)
    assert closed is not None
    assert result.store_stream.commit() == closed
    data = Path(path).read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (closed.size, closed.sha256)
    return data


def streaming_build(
    root: str, cache_dir: str, stream: store_write.StoreStream, jobs: int = 1
) -> BuildResult:
    """`build_or_reuse` with `stream`, as `cce index` runs it (no store record reused)."""
    result = build_module.build_or_reuse(
        root,
        HashEmbedder(),
        True,
        reuse=lambda record: False,
        cache=BuildCache(cache_dir, salt()),
        jobs=jobs,
        store_stream=stream,
    )
    assert isinstance(result, BuildResult)
    return result


@pytest.mark.parametrize("cached", ["cold", "one-edit", "warm"])
def test_a_store_streamed_during_the_build_is_the_store_write_store_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: str
) -> None:
    # Cold: every piece comes from a worker, in order. One edit: the hits are read here
    # first, and the pieces after the edited file wait for its worker. Warm: all hits.
    root = corpus(tmp_path)
    cache_dir = str(tmp_path / "cache")
    if cached != "cold":
        build_index(root, HashEmbedder(), cache=BuildCache(cache_dir, salt()))
    if cached == "one-edit":
        Path(root, "cache.py").write_text(Path(root, "cache.py").read_text() + "\n# edited\n")
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    path = str(tmp_path / "out" / "index.json")
    stream = store_write.StoreStream(path)
    result = streaming_build(root, cache_dir, stream, jobs=2)
    assert stream.pieces == result.files_indexed
    assert streamed_store(result, path) == serialize_index(build_index(root, HashEmbedder()).index)
    assert os.listdir(tmp_path / "out") == ["index.json"]


def test_a_stream_failing_midway_leaves_the_store_to_the_usual_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus(tmp_path)
    path = str(tmp_path / "out" / "index.json")
    stream = store_write.StoreStream(path)
    real_write = AtomicFile.write
    writes: list[int] = []

    def disk_full_on_the_third(self: AtomicFile, parts: Any) -> None:
        writes.append(len(parts))
        if len(writes) == 3:
            raise OSError(28, "No space left on device")
        real_write(self, parts)

    monkeypatch.setattr(AtomicFile, "write", disk_full_on_the_third)
    result = streaming_build(root, str(tmp_path / "cache"), stream)
    assert stream.failed and result.store_stream is None
    # Two pieces went to the stream and are gone from the spool: the store is formatted
    # from the index then, to the same bytes; no temporary file is left behind.
    assert result.store_chunks is None
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []
    monkeypatch.undo()
    write_store(result.index, path, result.store_chunks)
    assert Path(path).read_bytes() == serialize_index(build_index(root, HashEmbedder()).index)


def test_a_stream_that_cannot_open_leaves_the_made_text_to_write_store(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    (tmp_path / "blocker").write_bytes(b"x")
    stream = store_write.StoreStream(str(tmp_path / "blocker" / "index.json"))
    result = streaming_build(root, str(tmp_path / "cache"), stream)
    assert stream.failed and stream.pieces == 0 and result.store_stream is None
    assert store_bytes(result) == serialize_index(build_index(root, HashEmbedder()).index)


def bm25_arrays_equal(made: tuple[Any, Any], kept: tuple[Any, Any]) -> bool:
    """Whether two (BM25, id ranks) pairs hold the same statistics, dtypes included."""
    for left, right in zip(made[0].arrays(), kept[0].arrays(), strict=True):
        if isinstance(left, np.ndarray):
            right = np.asarray(right)
            if left.dtype != right.dtype or left.tolist() != right.tolist():
                return False
        elif left != right:
            return False
    return bool(np.asarray(made[1]).tolist() == np.asarray(kept[1]).tolist())


@pytest.mark.parametrize("jobs", [1, 2])
def test_bm25_from_terms_numbered_during_the_build_is_bm25_of_the_contents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    # A caller that lays out BM25 as soon as the build is done (`bm25_ready`) gets the
    # files' terms numbered as they arrive; the layout must be BM25 tokenized afresh from
    # the chunks' contents (term ids, postings, ranks), cold and after an edit (then cache
    # hits are numbered while the edited file is still being made).
    root = corpus(tmp_path)
    monkeypatch.setattr(build_outcomes, "_PARALLEL_MIN_BYTES", 0)
    real = build_terms.bm25_from_counts
    numbered: list[bool] = []

    def recording(parts: Any, chunk_ids: Any, numbering: Any = None) -> Any:
        numbered.append(numbering is not None and len(numbering.entry_terms) == len(parts))
        return real(parts, chunk_ids, numbering)

    monkeypatch.setattr(build_terms, "bm25_from_counts", recording)
    cache_dir = tmp_path / "cache"
    for edit in (False, True):
        if edit:
            Path(root, "a_first.py").write_text("def first_words():\n    return 'fresh terms'\n")
        factories: list[Callable[[], Any]] = []
        result = build_index(
            root,
            HashEmbedder(),
            jobs=jobs,
            cache=BuildCache(str(cache_dir), salt()),
            bm25_ready=factories.append,
        )
        numbered.clear()
        laid_out = factories[0]()
        assert numbered == [True]
        chunks = result.index.chunks
        ids = [c.chunk_id for c in chunks]
        tokenized = Bm25Index.build([c.content for c in chunks], ids)
        assert bm25_arrays_equal(laid_out, (tokenized, id_order_ranks(ids)))


def test_a_cached_bm25_skips_numbering_terms_during_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus(tmp_path)
    cache_dir = tmp_path / "cache"
    first: list[Callable[[], Any]] = []
    cache = BuildCache(str(cache_dir), salt())
    build_index(root, HashEmbedder(), cache=cache, bm25_ready=first.append)
    laid_out = first[0]()  # and put in the cache
    assert len(bm25_entries(cache_dir)) == 1
    made: list[int] = []
    monkeypatch.setattr(build_module, "TermNumbering", lambda: made.append(1))
    again: list[Callable[[], Any]] = []
    build_index(root, HashEmbedder(), cache=cache, bm25_ready=again.append)
    assert made == []
    assert bm25_arrays_equal(again[0](), laid_out)


def test_a_bm25_entry_holds_its_arrays_back_to_back_under_their_digest(tmp_path: Path) -> None:
    root = corpus(tmp_path)
    cache = BuildCache(str(tmp_path / "cache"), salt())
    bm25, ranks = bm25_and_ranks(build_index(root, HashEmbedder()).index)
    cache.put_bm25(b"k" * 32, bm25, ranks)
    (entry,) = bm25_entries(tmp_path / "cache")
    data = entry.read_bytes()
    stats = bm25.arrays()
    arrays = b"".join(
        (
            np.asarray(stats.offsets, dtype=np.int64).tobytes(),
            np.asarray(stats.posting_docs, dtype=np.int64).tobytes(),
            np.asarray(stats.posting_freqs, dtype=np.float64).tobytes(),
            np.asarray(stats.doc_lengths, dtype=np.float64).tobytes(),
            np.asarray(ranks, dtype=np.int64).tobytes(),
            " ".join(stats.term_ids).encode("ascii"),
        )
    )
    header = struct.Struct("<8s32s32sQ32sQ")
    _, _, digest, meta_length, _, _ = header.unpack(data[: header.size])
    meta = data[header.size : header.size + meta_length]
    assert data[header.size + meta_length :] == arrays
    assert digest == hashlib.sha256(meta + arrays).digest()
    kept = cache.get_bm25(b"k" * 32, len(ranks))
    assert kept is not None and bm25_arrays_equal(kept, (bm25, ranks))


def test_code_digest_changes_with_a_source_in_any_subpackage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit anywhere in the package's tree invalidates the cache, not only beside it."""
    from cce_retrieval.build.cache import salt as cache_salt

    tree = tmp_path / "cce_retrieval"
    shutil.copytree(
        cache_salt.PACKAGE_DIR, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    monkeypatch.setattr(cache_salt, "PACKAGE_DIR", str(tree))
    digests = []
    for edited in (None, "rank/bm25.py", "store/sidecar/reading.py", "model.py"):
        if edited is not None:
            with open(tree / edited, "a", encoding="utf-8") as handle:
                handle.write("\n# edited\n")
        cache_salt.code_digest.cache_clear()
        digests.append(cache_salt.code_digest())
    cache_salt.code_digest.cache_clear()
    assert len(set(digests)) == len(digests), digests


def test_code_digest_reads_every_module_of_the_package() -> None:
    from cce_retrieval.build.cache import salt as cache_salt

    root = Path(cache_salt.PACKAGE_DIR)
    on_disk = sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if "__pycache__" not in path.parts
    )
    hashed = [relative for relative, _ in cache_salt.package_sources(str(root))]
    assert hashed == on_disk
    assert {"rank/bm25.py", "build/pipeline.py", "store/write.py", "model.py"} <= set(hashed)


# --- embedding spaces: a cache never mixes two ---------------------------------------------


@attrs.define
class SpaceServer:
    """A fake OpenAI-compatible server on 127.0.0.1: `dim` wide vectors drawn from the
    text and `seed`, so two servers of one width still give different vectors."""

    url: str
    dim: int
    seed: int
    asked: list[str] = attrs.Factory(list)

    def vector(self, text: str) -> list[float]:
        digest = hashlib.sha256(f"{self.seed}:{text}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
        return [float(v) for v in rng.standard_normal(self.dim)]


@pytest.fixture
def space_servers() -> Any:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    started: list[ThreadingHTTPServer] = []

    def start(dim: int, seed: int = 0) -> SpaceServer:
        server = SpaceServer("", dim, seed)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.asked.extend(body["input"])
                data = [
                    {"embedding": server.vector(text), "index": i}
                    for i, text in enumerate(body["input"])
                ]
                payload = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        started.append(httpd)
        Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        return server

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def small_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "small"
    root.mkdir()
    for i in range(4):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n", encoding="utf-8")
    return root


def openai_build(root: Path, url: str, cache_dir: Path, *, checked: bool = False) -> BuildResult:
    """A cached build with the OpenAI-compatible client at `url`; `checked` runs its
    health check first, as `cce index` does (the salt then knows the width)."""
    from cce_retrieval import OpenAIEmbedder

    embedder = OpenAIEmbedder(url, "m", environ={})
    if checked:
        embedder.check()
    cache = BuildCache(str(cache_dir), CacheSalt.for_build(True, embedder))
    return build_index(str(root), embedder, cache=cache)


def widths(result: BuildResult) -> set[int]:
    lengths = result.index.embedding_lengths
    if lengths is None:
        return {int(np.asarray(result.index.embeddings).shape[1])}
    return {length for length in lengths if length}


def unit(vector: list[float]) -> list[float]:
    values = np.asarray(vector)
    return [float(v) for v in values / np.linalg.norm(values)]


@pytest.mark.parametrize("checked", [False, True])
def test_a_server_of_another_width_never_reuses_cached_vectors(
    tmp_path: Path, space_servers: Any, checked: bool
) -> None:
    root, cache_dir = small_corpus(tmp_path), tmp_path / "cache"
    server = space_servers(8)
    first = openai_build(root, server.url, cache_dir, checked=checked)
    assert widths(first) == {8} and first.index.embedding_dim == 8
    (root / "m1.py").write_text("def f1():\n    return 'edited'\n", encoding="utf-8")
    server.dim = 16  # the same address now serves another model
    second = openai_build(root, server.url, cache_dir, checked=checked)
    assert widths(second) == {16} and second.index.embedding_dim == 16
    assert second.index.embedding_lengths is None  # one rectangular matrix
    # Nothing edited, every file cached, and the server changes again: a live vector
    # is asked for before any cached one is reused.
    server.dim = 12
    third = openai_build(root, server.url, cache_dir, checked=checked)
    assert widths(third) == {12}
    stored = np.asarray(third.index.embeddings)
    want = [unit(server.vector(chunk.content)) for chunk in third.index.chunks]
    assert np.allclose(stored, want)


def test_two_servers_of_one_width_do_not_share_entries(tmp_path: Path, space_servers: Any) -> None:
    root, cache_dir = small_corpus(tmp_path), tmp_path / "cache"
    one, other = space_servers(8, seed=1), space_servers(8, seed=2)
    openai_build(root, one.url, cache_dir)
    (root / "m2.py").write_text("def f2():\n    return 'edited'\n", encoding="utf-8")
    result = openai_build(root, other.url, cache_dir)
    stored = np.asarray(result.index.embeddings)
    want = [unit(other.vector(chunk.content)) for chunk in result.index.chunks]
    assert np.allclose(stored, want)  # every vector is the second server's
    # The same server again reuses its entries: only the probe of its width is asked.
    other.asked.clear()
    again = openai_build(root, other.url, cache_dir)
    assert np.array_equal(np.asarray(again.index.embeddings), stored)
    assert len(other.asked) == 1


def test_the_space_in_the_salt_holds_the_server_but_no_credential() -> None:
    from cce_retrieval import OllamaEmbedder, OpenAIEmbedder

    def salted(embedder: object) -> CacheSalt:
        return CacheSalt.for_build(True, embedder)

    plain = salted(OpenAIEmbedder("http://127.0.0.1:8000", "m", environ={}))
    with_password = salted(OpenAIEmbedder("http://u:pw@127.0.0.1:8000/", "m", environ={}))
    assert plain.endpoint == with_password.endpoint == "http://127.0.0.1:8000"
    assert plain.digest() == with_password.digest()
    assert "pw" not in json.dumps(attrs.asdict(with_password))
    elsewhere = salted(OpenAIEmbedder("http://127.0.0.2:8000", "m", environ={}))
    assert elsewhere.digest() != plain.digest()
    ollama = salted(OllamaEmbedder("http://127.0.0.1:8000", "m"))
    assert ollama.digest() != plain.digest()
    known = OpenAIEmbedder("http://127.0.0.1:8000", "m", environ={})
    known.dimension = 16
    assert salted(known).dimension == 16 and salted(known).digest() != plain.digest()
    hashed = salted(HashEmbedder())
    assert (hashed.endpoint, hashed.dimension) == ("", None)


def test_vectors_of_two_widths_never_make_one_index() -> None:
    from cce_retrieval import BuildError
    from cce_retrieval.build.embeddings import one_width

    one_width(HashEmbedder(), [[1.0] * 8, [], [0.5] * 8])
    with pytest.raises(BuildError, match=r"2 widths \(8, 16\).*nothing was written"):
        one_width(HashEmbedder(), [[1.0] * 8, [1.0] * 16])


@pytest.mark.parametrize("special", ["symlink to /dev/zero", "fifo", "symlink to an entry"])
def test_store_text_is_never_read_through_a_special_file(tmp_path: Path, special: str) -> None:
    """The store text a worker left in its entry is read back only from a regular file:
    a FIFO swapped in is not waited on, a symlink is not followed."""
    entry = tmp_path / "entry"
    real = tmp_path / "real"
    real.write_bytes(b"head" + b"text")
    assert EntryText(str(real), 4, 4).read() == b"text"
    if special == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero" if special == "symlink to /dev/zero" else real)
    assert EntryText(str(entry), 4, 4).read() is None
