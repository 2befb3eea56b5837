"""The indexing pipeline end to end (docs/index-store.md#pipeline, docs/index-store.md#embedding,
docs/index-store.md#store store anchors)."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval import BuildError, build_index, save_index, serialize_index
from cce_retrieval.build.embeddings import EMBED_BATCH_SIZE
from cce_retrieval.embed.hashing import EmbedError, HashEmbedder
from cce_retrieval.rank.bm25 import Bm25Index
from cce_retrieval.rank.derived import bm25_and_ranks

BASE_TABLE = [
    ("README.md", 1, 3, "module", "module", "6ab3d42cf9cebf0a", 11),
    ("auth.py", 3, 4, "function", "function_definition", "e3539a6cc87df405", 21),
    ("auth.py", 6, 7, "function", "function_definition", "1eb146037ad13f91", 20),
    ("auth.py", 9, 11, "class", "class_definition", "fcc7617773d8f44d", 23),
    ("auth.py", 10, 11, "function", "function_definition", "1f7fa885bdd90499", 16),
    ("payments.py", 3, 4, "function", "function_definition", "eb1b9a4f766376e6", 26),
    ("payments.py", 6, 7, "function", "function_definition", "0246f0f6eead83ee", 22),
]


@pytest.fixture
def reference_copy(tmp_path: Path, reference_path: Callable[..., Path]) -> Callable[[str], str]:
    """Copy the reference corpus `test/fixture/<name>` into tmp_path; return the copy's path."""

    def copy(name: str) -> str:
        target = tmp_path / name
        shutil.copytree(reference_path("test", "fixture", name), target)
        return str(target)

    return copy


class ListEmbedder:
    """A generic (non-hash) embedder: wraps the hash vectors, records batch sizes."""

    name = "fake"

    def __init__(self, drop_last: bool = False, fail: bool = False) -> None:
        self.batches: list[int] = []
        self.drop_last = drop_last
        self.fail = fail
        self.inner = HashEmbedder()

    def embed(self, text: str) -> list[float]:
        return self.inner.embed(text)

    def try_embed(self, text: str) -> list[float]:
        return self.inner.embed(text)

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(len(texts))
        if self.fail:
            raise EmbedError("backend went away")
        vectors = [self.inner.embed(t) for t in texts]
        return vectors[:-1] if self.drop_last else vectors


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def test_base_fixture_counts_table_and_store_digest(
    reference_copy: Callable[[str], str],
) -> None:
    root = reference_copy("base")
    result = build_index(root, HashEmbedder())
    assert (result.files_indexed, result.files_skipped, result.sensitive_skipped) == (3, 1, 0)
    assert (result.walk_errors, result.total_chunks) == (0, 7)
    index = result.index
    table = sorted(
        (c.file_path, c.start_line, c.end_line, c.chunk_type, c.kind, c.chunk_id, c.token_count)
        for c in index.chunks
    )
    assert table == BASE_TABLE
    assert index.file_imports == {"auth.py": ["hashlib"], "payments.py": ["auth"]}
    assert index.file_tokens == {"README.md": 11, "auth.py": 70, "payments.py": 58}
    assert index.embeddings.shape == (7, 256)
    data = serialize_index(index)
    assert len(data) == 10_068
    digest = "79b974d7821318cdc5bab689902a6047fd96428048c16d4fe7ee2494ce8d0660"
    assert hashlib.sha256(data).hexdigest() == digest


def test_samples_store_digest(reference_copy: Callable[[str], str]) -> None:
    root = reference_copy("samples")
    data = serialize_index(build_index(root, HashEmbedder()).index)
    assert data.startswith(
        b'{"spec_version":"1.0","embedder":"hash","chunks":[{"chunk_id":"ebd4df588b8ce225",'
        b'"file_path":"c.c","start_line":3,"end_line":5,"chunk_type":"class",'
        b'"kind":"struct_specifier","language":"c","content":"struct Node {\\n    int value;\\n}",'
        b'"token_count":7,"embedding":[0.0,'
    )
    assert len(data) == 28_924
    digest = "edba69d10907dedb74f9a4f29ba154d13ab59200ffb4b22c07243c4358a7ddcb"
    assert hashlib.sha256(data).hexdigest() == digest


def test_reindex_is_byte_identical_and_removed_files_disappear(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "a.py", "def a():\n    return 1\n")
    write(root, "b.py", "import a\n\ndef b():\n    return a.a()\n")
    store = str(tmp_path / "out" / "index.json")
    save_index(build_index(str(root), HashEmbedder()).index, store)
    first = Path(store).read_bytes()
    save_index(build_index(str(root), HashEmbedder()).index, store)
    assert Path(store).read_bytes() == first
    os.remove(root / "b.py")
    index = build_index(str(root), HashEmbedder()).index
    assert {c.file_path for c in index.chunks} == {"a.py"}
    assert index.file_tokens == {"a.py": 5}
    assert index.file_imports == {}


def test_generic_embedder_batches_of_64_match_the_hash_fast_path(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(130))
    write(root, "many.py", body)
    embedder = ListEmbedder()
    generic = build_index(str(root), embedder)
    fast = build_index(str(root), HashEmbedder())
    assert embedder.batches == [EMBED_BATCH_SIZE, EMBED_BATCH_SIZE, 2]
    assert generic.index.embedder == "fake"
    assert generic.index.embedding_lengths is None
    # A non-hash embedder's vectors are scaled to unit length again by the build, which
    # may move the last bit of a vector that was unit already.
    assert np.allclose(
        generic.index.embeddings, np.asarray(fast.index.embeddings), rtol=0.0, atol=1e-15
    )


def test_too_few_vectors_abort_the_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "a.py", "def a():\n    pass\n")
    with pytest.raises(BuildError) as info:
        build_index(str(root), ListEmbedder(drop_last=True))
    assert "vector(s) for" in str(info.value)
    assert "Aborting the index" in str(info.value)
    assert "returned 0 vector(s) for 1 chunk(s)" in str(info.value)


def test_embed_error_aborts_the_build(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "a.py", "def a():\n    pass\n")
    with pytest.raises(BuildError, match="backend went away"):
        build_index(str(root), ListEmbedder(fail=True))


def test_protection_redacts_before_chunking_and_counting(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    source = 'password = "hunter2secret"\n'
    write(root, "settings.py", source)
    write(root, ".env", "API_KEY=abc\n")
    protected = build_index(str(root), HashEmbedder())
    assert protected.sensitive_skipped == 1
    assert [c.content for c in protected.index.chunks] == ['password = "[REDACTED:SECRET]"\n']
    assert protected.index.file_tokens == {
        "settings.py": len('password = "[REDACTED:SECRET]"\n') // 4
    }
    exposed = build_index(str(root), HashEmbedder(), protect=False)
    assert exposed.sensitive_skipped == 0
    assert {c.file_path for c in exposed.index.chunks} == {".env", "settings.py"}
    assert source in [c.content for c in exposed.index.chunks]


def test_bad_inputs_are_skipped_and_counted(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "ok.py", "def ok():\n    pass\n")
    (root / "latin1.py").write_bytes(b"name = '\xe9'\n")
    (root / "huge.txt").write_bytes(b"x" * (3 * 1024 * 1024))
    result = build_index(str(root), HashEmbedder())
    assert result.files_indexed == 1
    assert result.files_skipped == 2
    assert [c.file_path for c in result.index.chunks] == ["ok.py"]


def test_empty_directory_builds_an_empty_index(tmp_path: Path) -> None:
    result = build_index(str(tmp_path), HashEmbedder())
    assert result.total_chunks == 0 and result.files_indexed == 0
    assert serialize_index(result.index) == (
        b'{"spec_version":"1.0","embedder":"hash","chunks":[],"file_imports":{},"file_tokens":{}}'
    )


def test_bm25_from_the_builds_counts_equals_bm25_built_from_the_contents(
    reference_copy: Callable[[str], str],
) -> None:
    index = build_index(reference_copy("base"), HashEmbedder()).index
    from_counts, _ = bm25_and_ranks(index)
    chunks = index.chunks
    tokenized = Bm25Index.build([c.content for c in chunks], [c.chunk_id for c in chunks])
    got, want = from_counts.arrays(), tokenized.arrays()
    assert list(got.term_ids.items()) == list(want.term_ids.items())
    for name in ("offsets", "posting_docs", "posting_freqs", "doc_lengths"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist(), name
    assert got.avgdl == want.avgdl
    # The table is a plain mapping: asking about an unknown term adds nothing.
    assert type(got.term_ids) is dict
    assert from_counts.df("no_such_term_anywhere") == 0
    assert "no_such_term_anywhere" not in got.term_ids


def test_per_file_rows_stack_into_the_cells_of_the_whole_matrix() -> None:
    # Files computed here arrive as dense rows, files from workers or the cache as
    # cells; a file may have no chunks. The index's cells are the stacked rows exactly.
    from cce_retrieval.build import embeddings as build_embeddings
    from cce_retrieval.build.cache import SparseRows
    from cce_retrieval.model import SparseEmbeddings

    rng = np.random.default_rng(5)
    dense = rng.standard_normal((7, 256)) * (rng.random((7, 256)) < 0.1)
    dense[2, 9] = -0.0
    where = np.array([3, 256 + 1, 4 * 256 + 255], dtype=np.uint32)
    cells = SparseRows(5, 256, where, np.array([1.0, -0.0, 2.5]))
    parts: list[np.ndarray | SparseRows] = [dense, cells, np.zeros((0, 256)), np.zeros((2, 256))]
    stacked = build_embeddings.stack_embeddings(parts, 14)
    assert isinstance(stacked, SparseEmbeddings) and stacked.shape == (14, 256)
    want = np.vstack([dense, cells.dense(), np.zeros((2, 256))])
    assert np.asarray(stacked).view(np.uint64).tolist() == want.view(np.uint64).tolist()
    assert len(stacked.values) == np.count_nonzero(want.view(np.uint64))  # -0.0 included
    assert all(isinstance(part, np.ndarray) and not len(part) for part in parts)  # released
    assert build_embeddings.stack_embeddings([], 0).shape == (0, 256)
