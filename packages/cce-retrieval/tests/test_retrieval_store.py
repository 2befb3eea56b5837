"""The store's byte format, atomic writes, load errors and fingerprint
(docs/index-store.md#store)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval import (
    StoreError,
    fingerprint_path,
    format_json_float,
    load_index,
    parse_index,
    save_index,
    serialize_index,
)
from cce_retrieval.embed.hashing import MAX_VECTOR_VALUE
from cce_retrieval.model import Chunk, Index
from cce_retrieval.store import fileio
from cce_retrieval.store.fileio import AtomicFile
from cce_retrieval.store.fingerprint import fingerprint_document, store_sha256, write_fingerprint
from cce_retrieval.store.load import embedding_matrix
from cce_retrieval.store.paths import default_store_path
from cce_retrieval.store.write import (
    SavedStore,
    StoreChunks,
    StoreStream,
    chunk_array_text,
    store_head_text,
)


def make_chunk(path: str = "a.py", content: str = "def f(): pass", line: int = 1) -> Chunk:
    return Chunk(
        chunk_id="fd88a10941ff9519",
        file_path=path,
        start_line=line,
        end_line=line + 1,
        chunk_type="function",
        kind="function_definition",
        language="python",
        content=content,
        token_count=3,
    )


def make_index(chunks: list[Chunk], rows: list[list[float]]) -> Index:
    return Index(
        embedder="hash",
        chunks=chunks,
        embeddings=np.array(rows, dtype=np.float64).reshape(len(rows), -1 if rows else 0),
        file_imports={"b.py": ["os", "auth"], "a.py": ["sys"]},
        file_tokens={"b.py": 4, "a.py": 7},
    )


# --- floats -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (-0.25, "-0.25"),
        (0.1, "0.1"),
        (1e-05, "0.00001"),
        (1.5e-06, "1.5e-6"),
        (1e-4, "0.0001"),
        (-1e-4, "-0.0001"),
        (9.999999999999999e-05, "0.00009999999999999999"),
        (9999999999999998.0, "9999999999999998.0"),
        (float("inf"), "null"),
        (1.2345e-07, "1.2345e-7"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1.2345e16, "1.2345e16"),
        (123.456, "123.456"),
        (-0.0625, "-0.0625"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        (0.17677669529663687, "0.17677669529663687"),
        (float("nan"), "null"),
    ],
)
def test_float_layout_follows_ryu(value: float, expected: str) -> None:
    assert format_json_float(value) == expected


@settings(max_examples=300)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_round_trips_and_matches_repr_digits(value: float) -> None:
    text = format_json_float(value)
    parsed = float(text)
    assert struct.pack("<d", parsed) == struct.pack("<d", value)
    assert "+" not in text and "e-0" not in text and "e0" not in text
    if 1e-4 <= abs(value) < 1e16:
        assert text == repr(value)


# --- byte format --------------------------------------------------------------------


def test_compact_bytes_key_order_and_sorted_maps() -> None:
    index = make_index([make_chunk()], [[0.5, -0.5, 0.0, 1e-05]])
    assert serialize_index(index) == (
        b'{"spec_version":"1.0","embedder":"hash","chunks":[{"chunk_id":"fd88a10941ff9519",'
        b'"file_path":"a.py","start_line":1,"end_line":2,"chunk_type":"function",'
        b'"kind":"function_definition","language":"python","content":"def f(): pass",'
        b'"token_count":3,"embedding":[0.5,-0.5,0.0,0.00001]}],'
        b'"file_imports":{"a.py":["sys"],"b.py":["os","auth"]},'
        b'"file_tokens":{"a.py":7,"b.py":4}}'
    )


def test_string_escaping_matches_serde() -> None:
    content = 'q"b\\s\b\t\n\f\r\x00\x1f\x7f\u2028é😀'
    data = serialize_index(make_index([make_chunk(content=content)], [[1.0]]))
    expected = '"content":"q\\"b\\\\s\\b\\t\\n\\f\\r\\u0000\\u001f\x7f\u2028é😀"'
    assert expected.encode("utf-8") in data
    assert json.loads(data)["chunks"][0]["content"] == content


def test_ragged_embeddings_round_trip_with_their_lengths() -> None:
    index = Index(
        embedder="ollama",
        chunks=[make_chunk(line=1), make_chunk(line=5)],
        embeddings=np.array([[0.25, 0.5], [0.0, 0.0]]),
        embedding_lengths=[2, 0],
    )
    data = serialize_index(index)
    assert b'"embedding":[0.25,0.5]' in data and b'"embedding":[]' in data
    loaded = parse_index(data)
    assert loaded.embedding_lengths == [2, 0]
    assert serialize_index(loaded) == data


def test_empty_index_bytes() -> None:
    index = Index(embedder="hash", chunks=[])
    assert serialize_index(index) == (
        b'{"spec_version":"1.0","embedder":"hash","chunks":[],"file_imports":{},"file_tokens":{}}'
    )


# --- save / load --------------------------------------------------------------------


def test_save_then_load_round_trips_exactly(tmp_path: pytest.TempPathFactory) -> None:
    # A hash store's vectors are 256 wide (a narrower one is refused on load).
    rows = [[0.1, -0.2, 3e-7, 0.0] + [0.0] * 252, [1e16, 0.0, 0.0, -1.0] + [0.5] * 252]
    index = make_index([make_chunk(), make_chunk("b.py", "x = 1", 3)], rows)
    path = os.path.join(str(tmp_path), "nested", "deeper", "index.json")
    written = save_index(index, path)
    with open(path, "rb") as handle:
        data = handle.read()
    assert written == len(data)
    assert data == serialize_index(index)
    assert os.listdir(os.path.dirname(path)) == ["index.json"]
    loaded = load_index(path)
    assert loaded.chunks == index.chunks
    assert np.array_equal(loaded.embeddings, index.embeddings)
    assert loaded.file_tokens == index.file_tokens
    assert loaded.file_imports == index.file_imports
    assert loaded.embedder == "hash" and loaded.embedding_lengths is None


def test_default_store_path_joins_as_typed() -> None:
    assert default_store_path("/some/root") == "/some/root/.cce/index.json"
    assert default_store_path(".") == "./.cce/index.json"
    assert default_store_path("foo/") == "foo/.cce/index.json"


def test_legacy_store_loads_with_defaults() -> None:
    loaded = parse_index(b'{"spec_version":"1.0","chunks":[],"file_imports":{}}')
    assert loaded.embedder == "hash"
    assert loaded.chunks == [] and loaded.file_tokens == {}


def test_legacy_chunk_without_kind_or_embedding() -> None:
    chunk = {
        "chunk_id": "x",
        "file_path": "a.py",
        "start_line": 1,
        "end_line": 2,
        "chunk_type": "function",
        "language": "python",
        "content": "c",
        "token_count": 1,
        "unknown": True,
    }
    document = {"spec_version": "0.9", "chunks": [chunk], "file_imports": {}, "extra": 1}
    loaded = parse_index(json.dumps(document).encode())
    assert loaded.chunks[0].kind == ""
    assert loaded.spec_version == "0.9"
    assert loaded.embeddings.shape == (1, 0)


def test_missing_store_names_path_and_os_error(tmp_path: pytest.TempPathFactory) -> None:
    path = os.path.join(str(tmp_path), "absent", "index.json")
    with pytest.raises(StoreError) as info:
        load_index(path)
    message = str(info.value)
    assert message == f"could not load store {path}: No such file or directory (os error 2)"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"not valid json at all", "invalid JSON"),
        (b"", "empty"),
        (b'{"spec_version":"1.0","chunks":[{"chunk_id":"ab', "truncated"),
        (b'{"spec_version":"1.0","chunks":[]}', "missing field `file_imports`"),
        (b'{"chunks":[],"file_imports":{}}', "missing field `spec_version`"),
        (b"[1, 2]", "top level must be an object"),
        (b'{"spec_version":"1.0","chunks":{},"file_imports":{}}', "`chunks` must be an array"),
        (
            b'{"spec_version":"1.0","chunks":[{"chunk_id":"a"}],"file_imports":{}}',
            "chunk 0: missing field `file_path`",
        ),
        (
            b'{"spec_version":"1.0","chunks":[{"chunk_id":"a","file_path":"f","start_line":"1",'
            b'"end_line":1,"chunk_type":"m","language":"x","content":"","token_count":1}],'
            b'"file_imports":{}}',
            "chunk 0: `start_line` must be a non-negative integer",
        ),
        (
            b'{"spec_version":"1.0","chunks":[{"chunk_id":"a","file_path":"f","start_line":1,'
            b'"end_line":1,"chunk_type":"m","language":"x","content":"","token_count":1,'
            b'"embedding":[1.0,"x"]}],"file_imports":{}}',
            "not a number",
        ),
        (b"\xff\xfe{}", "valid UTF-8"),
    ],
)
def test_bad_store_bytes_fail_with_a_clear_message(
    tmp_path: pytest.TempPathFactory, data: bytes, fragment: str
) -> None:
    path = os.path.join(str(tmp_path), "index.json")
    with open(path, "wb") as handle:
        handle.write(data)
    with pytest.raises(StoreError) as info:
        load_index(path)
    assert str(info.value).startswith(f"could not load store {path}: ")
    assert fragment in str(info.value)


def test_unreadable_store_path_is_a_directory(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(StoreError, match=r"Is a directory \(os error 21\)"):
        load_index(str(tmp_path))


# --- atomic write -------------------------------------------------------------------


def _store_with_old_bytes(tmp_path: pytest.TempPathFactory) -> tuple[str, bytes]:
    path = os.path.join(str(tmp_path), "index.json")
    with open(path, "wb") as handle:
        handle.write(b"OLD STORE")
    return path, b"OLD STORE"


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_failed_write_keeps_old_store_and_leaves_no_temp(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path, old = _store_with_old_bytes(tmp_path)

    def boom(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(StoreError, match=r"could not write store .*No space left on device"):
        save_index(make_index([make_chunk()], [[1.0]]), path)
    monkeypatch.undo()
    assert os.listdir(str(tmp_path)) == ["index.json"]
    with open(path, "rb") as handle:
        assert handle.read() == old


def test_write_under_a_regular_file_fails_cleanly(tmp_path: pytest.TempPathFactory) -> None:
    blocker = os.path.join(str(tmp_path), "blocker")
    with open(blocker, "wb") as handle:
        handle.write(b"x")
    with pytest.raises(StoreError, match=r"Not a directory \(os error 20\)"):
        save_index(make_index([make_chunk()], [[1.0]]), os.path.join(blocker, "index.json"))


def test_rewrite_keeps_permission_bits(tmp_path: pytest.TempPathFactory) -> None:
    path, _ = _store_with_old_bytes(tmp_path)
    os.chmod(path, 0o600)
    save_index(make_index([make_chunk()], [[1.0]]), path)
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_temp_file_name_is_hidden_and_per_process(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    save_index(make_index([make_chunk()], [[1.0]]), os.path.join(str(tmp_path), "index.json"))
    assert len(seen) == 1
    assert seen[0].startswith(f".index.json.tmp.{os.getpid()}.")


# --- fingerprint --------------------------------------------------------------------


def test_fingerprint_path_rule() -> None:
    assert fingerprint_path("/r/.cce/index.json") == "/r/.cce/fingerprint.json"
    assert fingerprint_path("out/custom.json") == "out/custom.json.fingerprint.json"
    assert fingerprint_path("index.json") == "fingerprint.json"


def test_fingerprint_keys_order_and_self_hash(tmp_path: pytest.TempPathFactory) -> None:
    index = make_index([make_chunk()], [[1.0]])
    path = os.path.join(str(tmp_path), "index.json")
    save_index(index, path)
    target = write_fingerprint(index, path, redaction=True)
    assert target == os.path.join(str(tmp_path), "fingerprint.json")
    with open(target, "rb") as handle:
        data = handle.read()
    document = json.loads(data)
    assert list(document) == [
        "block_nesting_limit",
        "embed_dim",
        "embedder",
        "engine_version",
        "markdown_section_tokens",
        "pack_set",
        "redaction",
        "schema",
        "sha256",
        "spec_version",
        "store_sha256",
        "tokenizer",
    ]
    assert document["block_nesting_limit"] == 192
    assert document["embed_dim"] == 256
    assert document["engine_version"] == "2.9.0"
    assert document["pack_set"] == "c,javascript,python,ruby,rust,typescript"
    assert document["redaction"] is True
    assert document["schema"] == "cce.fingerprint/v1"
    assert document["tokenizer"] == "cce.tokens/v1"
    with open(path, "rb") as handle:
        assert document["store_sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert document["store_sha256"] == store_sha256(path)
    blank = dict(document, sha256="")
    assert (
        document["sha256"]
        == hashlib.sha256(json.dumps(blank, separators=(",", ":")).encode()).hexdigest()
    )
    assert b" " not in data and not data.endswith(b"\n")


def test_fingerprint_embed_dim_for_other_embedders() -> None:
    index = Index(
        embedder="ollama",
        chunks=[make_chunk(), make_chunk()],
        embeddings=np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]),
        embedding_lengths=[0, 3],
    )
    assert json.loads(fingerprint_document(index, "x", False))["embed_dim"] == 3
    empty = Index(embedder="ollama", chunks=[])
    document = json.loads(fingerprint_document(empty, "x", False))
    assert document["embed_dim"] == 0 and document["redaction"] is False


def test_large_value_layouts_inside_a_store() -> None:
    rows = [[1e-6, 2.5e-5, 1e16, -math.pi]]
    data = serialize_index(make_index([make_chunk()], rows))
    assert b'"embedding":[1e-6,0.000025,1e16,-3.141592653589793]' in data


# --- the vectorised writer and reader agree with the plain definitions --------------------

_CELL = st.one_of(
    st.just(0.0),
    st.just(-0.0),
    st.sampled_from([1e-05, 1.5e-06, 1e16, -0.25, 0.17677669529663687, MAX_VECTOR_VALUE]),
    # A store may hold any value up to the bound (larger ones are refused on load).
    st.floats(min_value=-MAX_VECTOR_VALUE, max_value=MAX_VECTOR_VALUE, width=64),
)


@st.composite
def ragged_indexes(draw: st.DrawFn) -> Index:
    width = draw(st.integers(min_value=0, max_value=6))
    rows = draw(st.integers(min_value=0, max_value=5))
    vectors = [
        draw(st.lists(_CELL, min_size=0, max_size=width)) if width else [] for _ in range(rows)
    ]
    matrix, lengths = embedding_matrix(vectors)
    chunks = [make_chunk(line=i + 1) for i in range(rows)]
    return Index(embedder="x", chunks=chunks, embeddings=matrix, embedding_lengths=lengths)


def naive_store_embeddings(index: Index) -> list[str]:
    width = index.embeddings.shape[1] if index.embeddings.ndim == 2 else 0
    lengths = index.embedding_lengths or [width] * len(index.chunks)
    return [
        "[" + ",".join(format_json_float(v) for v in index.embeddings[i, :n].tolist()) + "]"
        for i, n in enumerate(lengths)
    ]


@settings(max_examples=60)
@given(ragged_indexes())
def test_vectorised_rows_equal_per_value_formatting(index: Index) -> None:
    data = serialize_index(index).decode("utf-8")
    document = json.loads(data)
    assert len(document["chunks"]) == len(index.chunks)
    for row_text in naive_store_embeddings(index):
        assert f'"embedding":{row_text}' in data


_FIELD_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)


@st.composite
def chunk_runs(draw: st.DrawFn) -> tuple[list[Chunk], list[list[float]]]:
    """Chunks with arbitrary field text (quotes, controls, non-BMP) and ragged rows."""
    width = draw(st.integers(min_value=0, max_value=7))
    count = draw(st.integers(min_value=0, max_value=5))
    chunks = [
        Chunk(
            chunk_id=draw(_FIELD_TEXT),
            file_path=draw(st.sampled_from(["a.py", 'q"\\é.py', "🙂/\n.rs"])),
            start_line=draw(st.integers(min_value=0, max_value=10**6)),
            end_line=draw(st.integers(min_value=0, max_value=10**6)),
            chunk_type=draw(st.sampled_from(["function", "class", "module"])),
            kind=draw(_FIELD_TEXT),
            language=draw(st.sampled_from(["python", "rust"])),
            content=draw(_FIELD_TEXT),
            token_count=draw(st.integers(min_value=0, max_value=10**9)),
        )
        for _ in range(count)
    ]
    rows = [draw(st.lists(_CELL, max_size=width)) for _ in range(count)]
    return chunks, rows


@settings(max_examples=150)
@given(chunk_runs(), st.booleans())
def test_made_chunk_text_equals_one_json_object_per_chunk(
    run: tuple[list[Chunk], list[list[float]]], with_memo: bool
) -> None:
    """`chunk_array_text` (pieces placed by position, joined once) against the plain
    definition: each chunk's fields in declaration order, compact, values as JSON."""
    chunks, rows = run
    matrix, lengths = embedding_matrix(rows)
    if matrix.ndim != 2:
        matrix = np.zeros((len(chunks), 0))
    lengths = lengths or [len(row) for row in rows]
    expected = ",".join(
        '{"chunk_id":' + json.dumps(c.chunk_id, ensure_ascii=False)
        + ',"file_path":' + json.dumps(c.file_path, ensure_ascii=False)
        + f',"start_line":{c.start_line},"end_line":{c.end_line}'
        + ',"chunk_type":' + json.dumps(c.chunk_type, ensure_ascii=False)
        + ',"kind":' + json.dumps(c.kind, ensure_ascii=False)
        + ',"language":' + json.dumps(c.language, ensure_ascii=False)
        + ',"content":' + json.dumps(c.content, ensure_ascii=False)
        + f',"token_count":{c.token_count}'
        + ',"embedding":[' + ",".join(format_json_float(v) for v in row) + "]}"
        for c, row in zip(chunks, rows, strict=True)
    )  # fmt: skip
    memo: dict[int, bytes] | None = {} if with_memo else None
    for _ in range(2):  # a second call reads the formatted values from the memo
        assert chunk_array_text(chunks, matrix, lengths, memo) == expected.encode("utf-8")


@settings(max_examples=60)
@given(ragged_indexes())
def test_fast_load_equals_plain_json_load(index: Index) -> None:
    data = serialize_index(index)
    fast = parse_index(data)
    plain = parse_index(data.replace(b'"embedding":[', b'"embedding": ['))  # defeats fast path
    assert fast.chunks == plain.chunks == index.chunks
    assert fast.embedding_lengths == plain.embedding_lengths
    assert fast.embeddings.shape == plain.embeddings.shape
    assert np.asarray(fast.embeddings).tobytes() == np.asarray(plain.embeddings).tobytes()
    assert serialize_index(fast) == data


@pytest.mark.parametrize(
    "embedding",
    [b"[1.0,,2.0]", b"[nan]", b"[+1.0]", b"[01]", b'[1.0,"x"]', b"[1e5e3]", b"[.5]"],
)
def test_malformed_numbers_fall_back_to_a_clear_error(embedding: bytes) -> None:
    data = serialize_index(make_index([make_chunk()], [[1.0]]))
    broken = data.replace(b'"embedding":[1.0]', b'"embedding":' + embedding)
    with pytest.raises(StoreError, match="could not load store <memory>: "):
        parse_index(broken)


# --- the store streamed while it is made ------------------------------------------------


def _two_file_index() -> tuple[Index, list[bytes]]:
    chunks = [make_chunk("a.py", "def a(): é", 1), make_chunk("b.py", "x", 3), make_chunk()]
    index = make_index(chunks, [[1.0, 0.0], [0.0, -0.0], [0.5, 0.25]])
    pieces = [
        chunk_array_text(chunks[:2], index.embeddings[:2], [2, 2]),
        b"",  # a file without chunks
        chunk_array_text(chunks[2:], index.embeddings[2:], [2]),
    ]
    return index, pieces


def _beside_an_old_store(
    tmp_path: pytest.TempPathFactory,
) -> tuple[Index, list[bytes], str, bytes]:
    """`_two_file_index` and the path of an old store that a stream may replace."""
    index, pieces = _two_file_index()
    path, old = _store_with_old_bytes(tmp_path)
    return index, pieces, path, old


def _streamed(path: str, index: Index, pieces: list[bytes], embedder: str = "hash") -> StoreStream:
    """A stream over `path`, begun with `embedder`'s head, every piece added."""
    stream = StoreStream(path)
    assert stream.begin(store_head_text(index.spec_version, embedder, None, None))
    for piece in pieces:
        assert stream.add(piece)
    return stream


def _old_store_is_alone(tmp_path: pytest.TempPathFactory, path: str, old: bytes) -> None:
    assert os.listdir(str(tmp_path)) == ["index.json"]  # no temporary file either
    with open(path, "rb") as handle:
        assert handle.read() == old


def test_a_streamed_store_is_the_store_write_store_makes(tmp_path: pytest.TempPathFactory) -> None:
    index, pieces, path, old = _beside_an_old_store(tmp_path)
    stream = _streamed(path, index, pieces)
    expected = serialize_index(index, StoreChunks(pieces, 3))
    assert expected == serialize_index(index)
    closed = stream.close_array(index)
    assert closed == SavedStore(len(expected), hashlib.sha256(expected).hexdigest())
    with open(path, "rb") as handle:
        assert handle.read() == old  # nothing in place before the commit
    assert stream.commit() == closed
    with open(path, "rb") as handle:
        assert handle.read() == expected
    assert os.listdir(str(tmp_path)) == ["index.json"]


def test_a_streamed_store_of_another_head_is_dropped(tmp_path: pytest.TempPathFactory) -> None:
    index, pieces, path, old = _beside_an_old_store(tmp_path)
    stream = _streamed(path, index, pieces, embedder="other")
    assert stream.close_array(index) is None and stream.failed
    _old_store_is_alone(tmp_path, path, old)
    with pytest.raises(ValueError, match="closed store stream"):
        stream.commit()


def test_a_discarded_stream_leaves_the_old_store(tmp_path: pytest.TempPathFactory) -> None:
    index, pieces, path, old = _beside_an_old_store(tmp_path)
    stream = _streamed(path, index, pieces[:1])
    stream.discard()
    stream.discard()
    _old_store_is_alone(tmp_path, path, old)


def test_a_failed_commit_is_a_store_error_and_keeps_the_old_store(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, pieces, path, old = _beside_an_old_store(tmp_path)
    stream = _streamed(path, index, pieces)
    assert stream.close_array(index) is not None

    def boom(*_args: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(StoreError, match=r"Read-only file system \(os error 30\)"):
        stream.commit()
    monkeypatch.undo()
    _old_store_is_alone(tmp_path, path, old)


def test_an_atomic_file_takes_short_writes_and_asks_for_writeback(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_writev, real_write = os.writev, os.write
    monkeypatch.setattr(os, "writev", lambda fd, views: real_writev(fd, [views[0][:3]]))
    monkeypatch.setattr(os, "write", lambda fd, view: real_write(fd, view[:2]))
    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(fileio, "_WRITEBACK_BYTES", 8)
    monkeypatch.setattr(fileio, "start_writeback", lambda fd, at, n: asked.append((at, n)))
    path = os.path.join(str(tmp_path), "out.bin")
    replacement = AtomicFile(path)
    replacement.write((b"abcdefg", b"", memoryview(b"hij")))
    replacement.write((b"klmnopq",))
    replacement.commit()
    monkeypatch.undo()
    with open(path, "rb") as handle:
        assert handle.read() == b"abcdefghijklmnopq"
    assert asked == [(0, 10)]  # 7 more bytes are not enough for a second request
