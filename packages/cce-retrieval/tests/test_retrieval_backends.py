"""The backend registry: built-ins rank like the pipeline, parameters are typed and checked."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index, SearchResult
from cce_retrieval.rank import hybrid
from cce_retrieval.rank.backends import (
    BACKENDS,
    Backend,
    BackendConfigError,
    BackendSpec,
    EmbeddingSpaceError,
    Query,
    backend_names,
    backend_spec,
    create_backend,
    register_backend,
)
from cce_retrieval.rank.derived import RetrievalIndex, invalidate, retrieval_index

CORPUS = {
    "src/auth.py": (
        "import session\n\ndef login(user, password):\n    return check(user, password)\n\n"
        'def check(user, password):\n    return user == "admin"\n'
    ),
    "src/session.py": "def create_session(user):\n    return {'user': user}\n",
    "tests/test_auth.py": (
        'from auth import login\n\ndef test_login():\n    assert login("u", "p")\n'
    ),
    "docs/guide.md": "# Login guide\nCall login(user, password) to sign in.\n" * 3,
    "src/long.py": "def password_policy():\n" + "    x = 1\n" * 60 + "    return password\n",
}

QUERIES = ("login password", "create session", "def check", "   ", "password policy")


class CountingEmbedder:
    def __init__(self) -> None:
        self.calls = 0
        self.inner = HashEmbedder()

    def embed(self, text: str) -> list[float]:
        self.calls += 1
        return self.inner.embed(text)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("corpus")
    for rel, text in CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return build_index(str(root), HashEmbedder()).index


def rows(results: Sequence[SearchResult]) -> list[tuple[int, str, float]]:
    return [(r.rank, r.chunk_id, r.score) for r in results]


def test_registry_lists_the_built_ins_first() -> None:
    assert backend_names()[:3] == ("bm25", "vector", "hybrid")
    assert backend_spec("bm25").defaults() == {"k1": 1.2, "b": 0.75}


@pytest.mark.parametrize("text", QUERIES)
@pytest.mark.parametrize("k", [1, 3, 10])
def test_default_backends_rank_exactly_like_the_pipeline(index: Index, text: str, k: int) -> None:
    embedder = HashEmbedder()
    query = Query(text, embedder)
    blank = not text.strip()
    bm25 = [] if blank else hybrid.bm25_only_search(index, text, k)
    vector = [] if blank else hybrid.vector_search(index, embedder.embed(text), k)
    full = [] if blank else hybrid.search(index, embedder, text, k, True)[:k]
    assert rows(create_backend("bm25").search(index, query, k)) == rows(bm25)
    assert rows(create_backend("vector").search(index, query, k)) == rows(vector)
    assert rows(create_backend("hybrid").search(index, query, k)) == rows(full)


def test_an_empty_index_returns_nothing() -> None:
    empty = Index(embedder="hash", chunks=[])
    for name in ("bm25", "vector", "hybrid"):
        assert create_backend(name).search(empty, Query("login", HashEmbedder()), 5) == []


def test_query_vector_is_embedded_once(index: Index) -> None:
    counting = CountingEmbedder()
    query = Query("login password", counting)
    create_backend("vector").search(index, query, 3)
    create_backend("hybrid").search(index, query, 3)
    create_backend("bm25").search(index, query, 3)
    assert counting.calls == 1


def test_b_changes_bm25_scores_where_length_matters(index: Index) -> None:
    query = Query("password", HashEmbedder())
    reference = create_backend("bm25").search(index, query, 10)
    flat = create_backend("bm25", {"b": 0.0}).search(index, query, 10)
    assert {r.chunk_id for r in reference} == {r.chunk_id for r in flat}
    assert [r.score for r in reference] != [r.score for r in flat]


def test_graph_off_drops_expansion(index: Index) -> None:
    query = Query("login", HashEmbedder())
    with_graph = create_backend("hybrid").search(index, query, 10)
    without = create_backend("hybrid", {"graph": False}).search(index, query, 10)
    core = hybrid.search_with_vector(index, query.vector(), "login", 10, False)
    assert rows(without) == rows(core)
    assert len(with_graph) >= len(without)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("bm25", {"k3": 1.0}, "unknown parameter `k3` for backend 'bm25'; valid keys: k1, b"),
        ("bm25", {"b": "x"}, "`b` must be a number"),
        ("bm25", {"b": 1.5}, "`b` must be at most 1, not 1.5"),
        ("bm25", {"b": True}, "`b` must be a number"),
        ("hybrid", {"graph": 1}, "`graph` must be a boolean"),
        ("hybrid", {"max_chunks_per_file": 0}, "`max_chunks_per_file` must be at least 1"),
        ("hybrid", {"candidate_multiplier": 2.5}, "`candidate_multiplier` must be an integer"),
        ("nope", None, "unknown backend 'nope'; expected one of bm25, vector, hybrid"),
    ],
)
def test_bad_configuration_names_the_key(
    name: str, params: dict[str, object] | None, message: str
) -> None:
    with pytest.raises(BackendConfigError) as caught:
        create_backend(name, params)
    assert message in str(caught.value)


def test_non_default_records_only_changed_values() -> None:
    spec = BACKENDS["hybrid"]
    assert spec.non_default(None) == {}
    assert spec.non_default({"graph": True, "b": 0.4}) == {"b": 0.4}
    assert spec.non_default({"k1": 1}) == {"k1": 1.0}


def test_another_embedder_is_refused_naming_both(index: Index) -> None:
    backend = create_backend("vector", {"embedder": "ollama"})
    with pytest.raises(EmbeddingSpaceError) as caught:
        backend.search(index, Query("login", HashEmbedder()), 3)
    assert "'hash'" in str(caught.value) and "'ollama'" in str(caught.value)


def chunk(path: str, content: str, cid: str) -> Chunk:
    return Chunk(cid, path, 1, 1, "function", "function_definition", "python", content, 3)


def test_cache_notices_a_replaced_chunk_list() -> None:
    index = Index(embedder="hash", chunks=[chunk("a.py", "alpha", "a1")])
    first = retrieval_index(index)
    assert retrieval_index(index) is first
    index.chunks = [chunk("b.py", "beta", "b1")]
    second = retrieval_index(index)
    assert second is not first and second.chunks[0].chunk_id == "b1"
    index.chunks.append(chunk("c.py", "gamma", "c1"))
    assert len(retrieval_index(index).chunks) == 2
    invalidate(index)
    assert retrieval_index(index) is not second


def test_explicit_build_is_a_snapshot() -> None:
    chunks = [chunk("a.py", "alpha", "a1")]
    index = Index(embedder="hash", chunks=chunks)
    derived = RetrievalIndex.build(index)
    chunks[0] = chunk("z.py", "zeta", "z9")
    assert derived.chunks[0].chunk_id == "a1"
    assert derived.content_lower(0) == "alpha"


def test_fixture_base_default_is_the_harness_pipeline(
    reference_path: Callable[..., Path],
) -> None:
    base = reference_path("test", "fixture", "base")
    built = build_index(str(base), HashEmbedder()).index
    query = Query("hash password", HashEmbedder())
    expected = hybrid.search_with_vector(built, query.vector(), query.text, 5, True)[:5]
    assert rows(create_backend("hybrid").search(built, query, 5)) == rows(expected)


# --- plugins run guarded ----------------------------------------------------------------


class _Generating:
    """A plugin whose search() generates 10,000 results and says how many were read."""

    def __init__(self) -> None:
        self.read = 0
        self.closed = False

    def search(self, index: object, query: object, k: int) -> object:
        try:
            for _ in range(10_000):
                self.read += 1
                yield {"file_path": "a.py", "start_line": 1, "end_line": 2, "score": 0.5}
        finally:
            self.closed = True


def _plugin(name: str, made: object) -> Backend:
    register_backend(BackendSpec(name, "test only", (), lambda values: made, adapt=True))
    try:
        return create_backend(name)
    finally:
        BACKENDS.pop(name, None)


def test_a_plugin_generator_is_read_k_items_and_closed() -> None:
    made = _Generating()
    backend = _plugin("generating", made)
    results = backend.search(Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 3)
    assert [result.rank for result in results] == [1, 2, 3]
    assert (made.read, made.closed) == (3, True)


def test_plugin_results_are_cut_to_k_before_they_are_checked() -> None:
    class Many:
        def search(self, index: object, query: object, k: int) -> list[object]:
            good = {"file_path": "a.py", "start_line": 0, "end_line": 0, "score": 1}
            return [good] * k + [None] * 3_000_000

    backend = _plugin("many", Many())
    results = backend.search(Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 5)
    assert len(results) == 5


def test_numpy_scores_and_lines_are_read_as_numbers() -> None:
    import numpy as np

    class Numpy:
        def search(self, index: object, query: object, k: int) -> list[object]:
            return [
                {
                    "file_path": "a.py",
                    "start_line": np.int64(3),
                    "end_line": np.int32(4),
                    "score": np.float32(0.5),
                }
            ]

    (result,) = _plugin("numpy", Numpy()).search(
        Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 5
    )
    assert (type(result.start_line), type(result.score)) == (int, float)
    assert (result.start_line, result.end_line, result.score) == (3, 4, 0.5)


def test_a_plugin_generator_that_refuses_to_close_is_an_error_naming_it() -> None:
    from cce_retrieval import PluginError
    from cce_retrieval.plugin_calls import refused_close

    class Stubborn:
        generator: Iterator[object] | None = None

        def search(self, index: object, query: object, k: int) -> object:
            self.generator = self._results()
            return self.generator

        def _results(self) -> Iterator[object]:
            for _ in range(100):
                try:
                    yield {"file_path": "a.py", "start_line": 1, "end_line": 1, "score": 1.0}
                except GeneratorExit:
                    continue  # yields again instead of stopping

    made = Stubborn()
    backend = _plugin("stubborn", made)
    with pytest.raises(PluginError) as raised:
        backend.search(Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 2)
    assert str(raised.value) == (
        "backend plugin 'stubborn': search() raised RuntimeError: generator ignored GeneratorExit"
    )
    # Still suspended, and known as reported: the command's hook drops the note Python
    # prints when it fails to close it again while collecting it.
    assert refused_close(made.generator)
    assert not refused_close(made.generator)
    for _ in made.generator or ():  # run it out, so collecting it here prints nothing
        pass


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("end_line", 10**5000, "`end_line` (an integer of 16610 bits) is not below 2**63"),
        ("score", 10**5000, "`score` (an integer of 16610 bits) is not a finite number"),
        ("score", 10**400, "`score` 1000000000000000000000000000000000000000000000000000000000"),
    ],
    ids=["huge-line", "huge-score", "overflowing-score"],
)
def test_numbers_too_big_to_print_are_named_by_their_size(
    field: str, value: int, problem: str
) -> None:
    from cce_retrieval import PluginError

    class Huge:
        def search(self, index: object, query: object, k: int) -> list[object]:
            result: dict[str, object] = {
                "file_path": "a.py",
                "start_line": 1,
                "end_line": 2,
                "score": 1.0,
            }
            return [{**result, field: value}]

    backend = _plugin("huge", Huge())
    with pytest.raises(PluginError) as raised:
        backend.search(Index(embedder="hash", chunks=[]), Query("q", HashEmbedder()), 5)
    assert str(raised.value).startswith(f"backend plugin 'huge': query 'q': result 1 {problem}")
