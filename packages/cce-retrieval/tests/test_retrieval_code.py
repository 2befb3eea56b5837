"""The code-aware backends: each technique changes the order on a corpus made for it, and
its "off" value restores the plain order; with every technique off `code` is `bm25`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import numpy as np
import pytest

from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Chunk, Index, SearchResult
from cce_retrieval.rank.backends import Query, backend_names, backend_spec, create_backend
from cce_retrieval.rank.code import text

ALL_OFF: dict[str, object] = {
    "split_identifiers": False,
    "path_terms": False,
    "code_files_only": False,
    "chunks": "stored",
    "max_chunk_lines": 0,
    "gap_chunks": False,
    "grammar_chunks": False,
    "split_unparsed": False,
    "fold_plurals": False,
    "rank_scores": False,
    "file_boost": 0.0,
    "repeat_decay": 1.0,
    "stem_boost": 0.0,
    "acronym_stems": False,
    "definition_boost": 0.0,
    "path_penalty": 1.0,
    "reexport_penalty": 1.0,
}
"""Every technique at its off value."""


def chunk(
    path: str, start: int, end: int, content: str, kind: str = "function_definition"
) -> Chunk:
    return Chunk(
        chunk_id=f"{path}:{start}-{end}",
        file_path=path,
        start_line=start,
        end_line=end,
        chunk_type=kind,
        kind=kind,
        language="python",
        content=content,
        token_count=len(content.split()),
    )


def make_index(chunks: Sequence[Chunk]) -> Index:
    embedder = HashEmbedder()
    matrix = np.asarray([embedder.embed(c.content) for c in chunks], dtype=np.float64)
    return Index(embedder="hash", chunks=list(chunks), embeddings=matrix)


def search(
    index: Index,
    query: str,
    params: Mapping[str, object] | None = None,
    *,
    backend: str = "code",
    root: str | None = None,
    k: int = 10,
) -> list[SearchResult]:
    made = create_backend(backend, dict(params or {}))
    return made.search(index, Query(query, HashEmbedder(), corpus_root=root), k)


def spans(results: Sequence[SearchResult | Chunk]) -> list[tuple[str, int, int]]:
    return [(r.file_path, r.start_line, r.end_line) for r in results]


def only(**changes: object) -> dict[str, object]:
    """Every technique off except the ones given."""
    return {**ALL_OFF, **changes}


# --- the registry -------------------------------------------------------------------


def test_code_backends_are_listed_with_every_technique_and_its_range() -> None:
    names = backend_names()
    assert names[:3] == ("bm25", "vector", "hybrid")
    assert "code" in names and "code-hybrid" in names
    code = backend_spec("code")
    for key, off in ALL_OFF.items():
        param = code.param(key)
        assert param is not None, key
        assert param.coerce(off) == off  # the off value is in range
        assert param.help
    assert "in [0, 1]" in code.param("repeat_decay").describe()  # type: ignore[union-attr]
    hybrid = backend_spec("code-hybrid")
    for key in ("vector_weight", "symbol_vector_weight", "hash_vector", "embedder", "model"):
        assert hybrid.param(key) is not None, key


# --- everything off is bm25 ---------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("corpus")
    files = {
        "src/auth.py": (
            "import session\n\ndef login(user, password):\n    return check(user, password)\n\n"
            'def check(user, password):\n    return user == "admin"\n'
        ),
        "src/session.py": "def create_session(user):\n    return {'user': user}\n",
        "tests/test_auth.py": 'from auth import login\n\ndef test_login():\n    login("u", "p")\n',
        "docs/guide.md": "# Login guide\nCall login(user, password) to sign in.\n" * 3,
    }
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
    return build_index(str(root), HashEmbedder()).index


@pytest.mark.parametrize("query", ["login password", "def check", "user", "guide"])
def test_code_with_every_technique_off_ranks_exactly_like_bm25(
    corpus_index: Index, query: str
) -> None:
    plain = search(corpus_index, query, ALL_OFF)
    reference = search(corpus_index, query, backend="bm25")
    assert plain == reference
    assert reference  # the query matches something


def test_default_code_answers_blank_queries_with_nothing(corpus_index: Index) -> None:
    assert search(corpus_index, "   ") == []
    assert search(corpus_index, "login", k=0) == []


# --- index-side techniques ----------------------------------------------------------


def test_split_identifiers_lets_words_match_parts_of_identifiers() -> None:
    index = make_index(
        [
            chunk("a.py", 1, 2, "def parse_config(path):\n    return path"),
            chunk("b.py", 1, 2, "def load(path):\n    return ParseConfigError"),
            chunk("c.py", 1, 2, "def other():\n    return 1"),
        ]
    )
    on = spans(search(index, "parse config", only(split_identifiers=True)))
    off = spans(search(index, "parse config", ALL_OFF))
    assert {path for path, _, _ in on} == {"a.py", "b.py"}
    assert off == []
    assert text.identifier_terms("getHTTPResponse") == (
        "gethttpresponse",
        "get",
        "http",
        "response",
    )
    assert text.identifier_terms("my_func") == ("my_func", "my", "func")
    assert text.identifier_terms("simple") == ("simple",)


def test_identifier_terms_see_through_leading_and_trailing_underscores() -> None:
    assert text.identifier_terms("__getattr__") == ("__getattr__", "getattr")
    assert text.identifier_terms("_safeParse") == ("_safeparse", "safeparse", "safe", "parse")
    assert text.identifier_terms("_private_name") == (
        "_private_name",
        "private_name",
        "private",
        "name",
    )
    assert text.identifier_terms("__") == ()
    index = make_index(
        [
            chunk("proxy.py", 1, 2, "def __getattr__(self, name):\n    return lookup(name)"),
            chunk("other.py", 1, 2, "def fetch(self, name):\n    return lookup(name)"),
        ]
    )
    on = spans(search(index, "getattr", only(split_identifiers=True)))
    assert on == [("proxy.py", 1, 2)]
    assert search(index, "getattr", ALL_OFF) == []


def test_folded_reads_a_plural_or_third_person_s_away() -> None:
    cases = {
        "errors": "error",
        "handles": "handle",
        "dependencies": "dependency",
        "matches": "matche",  # Harman's rule drops the s only: `match` is not reached
        "class": "class",
        "status": "status",
        "has": "has",
        "heroes": "heroe",  # `-oes`, `-aes`, `-ees` lose the s only
        "cookies": "cooky",  # `-ies` reads as `-y` unless `-eies` or `-aies`
    }
    for term, expected in cases.items():
        assert text.folded(term) == expected, term
    assert text.query_terms("parse Errors", fold=True) == ["parse", "error"]
    assert text.path_terms("handlers/errors.py", fold=True) == {"error": 2, "handler": 1}


def test_fold_plurals_lets_a_singular_query_match_plural_code() -> None:
    index = make_index(
        [
            chunk("a.py", 1, 2, "def collect(errors, handlers):\n    return errors"),
            chunk("b.py", 1, 2, "def report(error):\n    return other_things(1, 2, 3)"),
            chunk("c.py", 1, 2, "def unrelated():\n    return 1"),
        ]
    )
    query = "error handler"
    folded = spans(search(index, query, only(fold_plurals=True)))
    plain = spans(search(index, query, ALL_OFF))
    assert plain == [("b.py", 1, 2)]  # `errors` and `handlers` are other terms
    assert folded[0] == ("a.py", 1, 2)  # both words match, in either number
    assert [path for path, _, _ in folded] == ["a.py", "b.py"]


def test_fold_plurals_lets_a_plural_query_word_match_a_singular_file_name() -> None:
    index = make_index(
        [
            chunk("helpers.py", 1, 1, "dependencies dependencies list"),
            chunk("dependency.py", 1, 1, "def resolve(): pass  # dependencies"),
        ]
    )
    query = "dependencies"
    steps = {"rank_scores": True, "stem_boost": 1.0}
    # `dependency` is no prefix of `dependencies`: without folding the name does not match.
    assert search(index, query, only(**steps))[0].file_path == "helpers.py"
    assert search(index, query, only(**steps, fold_plurals=True))[0].file_path == ("dependency.py")


def test_path_terms_let_a_query_find_a_file_by_its_name() -> None:
    index = make_index(
        [
            chunk("routing/dispatch.py", 1, 2, "def handle(request):\n    return request"),
            chunk("util.py", 1, 2, "def helper():\n    return dispatch"),
            chunk("util.py", 4, 5, "def other():\n    return None"),
        ]
    )
    on = spans(search(index, "routing dispatch", only(path_terms=True)))
    off = spans(search(index, "routing dispatch", ALL_OFF))
    assert on[0][0] == "routing/dispatch.py"
    assert [path for path, _, _ in off] == ["util.py"]


def test_code_files_only_leaves_docs_and_config_out() -> None:
    index = make_index(
        [
            chunk("README.md", 1, 3, "login login login guide", kind="module"),
            chunk("package.json", 1, 1, '{"login": "login"}', kind="module"),
            chunk("auth.py", 1, 2, "def login(user):\n    return user"),
        ]
    )
    on = spans(search(index, "login", only(code_files_only=True)))
    off = spans(search(index, "login", ALL_OFF))
    assert on == [("auth.py", 1, 2)]
    assert {path for path, _, _ in off} == {"README.md", "package.json", "auth.py"}
    assert off[0][0] != "auth.py"
    assert not text.code_file("LICENSE") and text.code_file("main.go")


def test_a_corpus_without_code_files_keeps_them_all() -> None:
    index = make_index([chunk("guide.md", 1, 3, "login guide", kind="module")])
    assert spans(search(index, "login", only(code_files_only=True))) == [("guide.md", 1, 3)]


CLASS_TEXT = (
    "class Store:\n"
    '    """A key-value store."""\n'
    "\n"
    "    def get(self, key):\n"
    "        return self.items[key]\n"
    "\n"
    "    def put(self, key, value):\n"
    "        self.items[key] = value\n"
)


def class_chunks() -> list[Chunk]:
    return [
        chunk("store.py", 1, 8, CLASS_TEXT, kind="class_definition"),
        chunk("store.py", 4, 5, "def get(self, key):\n        return self.items[key]"),
        chunk("store.py", 7, 8, "def put(self, key, value):\n        self.items[key] = value"),
    ]


def test_outermost_chunks_drop_the_chunks_inside_another() -> None:
    index = make_index(class_chunks())
    stored = spans(search(index, "items key", ALL_OFF))
    outermost = spans(search(index, "items key", only(chunks="outermost")))
    assert sorted(stored) == [("store.py", 1, 8), ("store.py", 4, 5), ("store.py", 7, 8)]
    assert outermost == [("store.py", 1, 8)]


def test_tiled_chunks_cut_a_class_at_its_methods_without_overlap() -> None:
    index = make_index(class_chunks())
    tiled = spans(search(index, "store items key value", only(chunks="tiled")))
    assert sorted(tiled) == [("store.py", 1, 2), ("store.py", 4, 5), ("store.py", 7, 8)]
    header = search(index, "store", only(chunks="tiled"))
    assert header[0].content == 'class Store:\n    """A key-value store."""'


def test_max_chunk_lines_cuts_long_chunks_into_windows() -> None:
    body = "def long():\n" + "".join(f"    step = {i}\n" for i in range(58)) + "    return step"
    index = make_index([chunk("long.py", 1, 60, body)])
    windows = spans(search(index, "step", only(chunks="tiled", max_chunk_lines=25)))
    whole = spans(search(index, "step", only(chunks="tiled")))
    assert whole == [("long.py", 1, 60)]
    assert sorted(windows) == [("long.py", 1, 25), ("long.py", 26, 50), ("long.py", 51, 60)]


def test_max_chunk_lines_joins_short_methods_of_one_class() -> None:
    index = make_index(class_chunks())
    joined = spans(search(index, "items", only(chunks="tiled", max_chunk_lines=25)))
    assert joined == [("store.py", 1, 8)]


GAP_FILE = (
    "import os\n"
    "\n"
    "MAX_RETRIES = 5\n"
    "\n"
    "# Dispatch an incoming request to its handler.\n"
    "def run(request):\n"
    "    return request\n"
)


GAPS = only(chunks="tiled", gap_chunks=True, split_identifiers=True)
NO_GAPS = only(chunks="tiled", split_identifiers=True)


@pytest.fixture
def gap_index(tmp_path: Path) -> tuple[Index, str]:
    (tmp_path / "app.py").write_text(GAP_FILE, encoding="utf-8")
    return build_index(str(tmp_path), HashEmbedder()).index, str(tmp_path)


def test_gap_chunks_rank_lines_no_stored_chunk_covers(gap_index: tuple[Index, str]) -> None:
    index, root = gap_index
    assert spans(index.chunks) == [("app.py", 6, 7)]
    on = spans(search(index, "max retries", GAPS, root=root))
    off = spans(search(index, "max retries", NO_GAPS, root=root))
    rootless = search(index, "max retries", GAPS)
    assert on == [("app.py", 1, 3)]
    assert off == [] and rootless == []


def test_a_comment_before_a_definition_joins_it(gap_index: tuple[Index, str]) -> None:
    index, root = gap_index
    found = search(index, "dispatch incoming", GAPS, root=root)
    assert spans(found) == [("app.py", 5, 7)]
    assert found[0].content.startswith("# Dispatch") and "return request" in found[0].content


def test_gap_chunks_are_left_out_when_the_file_changed(gap_index: tuple[Index, str]) -> None:
    index, root = gap_index
    Path(root, "app.py").write_text("MAX_RETRIES = 5\n", encoding="utf-8")
    changed = search(index, "max retries", GAPS, root=root)
    assert changed == []


def test_gap_chunks_are_protected_like_a_strict_store(tmp_path: Path) -> None:
    secret = 'API_KEY = "sk-live-0123456789abcdefghijABCDEFGHIJ0123"\n'
    (tmp_path / "conf.py").write_text(
        secret + "\ndef run():\n    return API_KEY\n", encoding="utf-8"
    )
    index = build_index(str(tmp_path), HashEmbedder()).index
    found = search(index, "api key", GAPS, root=str(tmp_path))
    assert found and all("sk-live-0123456789" not in r.content for r in found)


def test_gap_chunks_never_read_outside_the_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (tmp_path / "outside.py").write_text("SECRET_PLAN = 1\n\ndef f():\n    pass\n")
    index = make_index([chunk("../outside.py", 3, 4, "def f():\n    pass")])
    found = search(index, "secret plan", GAPS, root=str(corpus))
    assert found == []
    assert search(index, "secret plan", GAPS, root=str(tmp_path)) == []


# --- the re-ranking steps -----------------------------------------------------------


def test_rank_scores_replace_raw_sums_with_rank_scores() -> None:
    index = make_index(
        [chunk("a.py", 1, 1, "token token token"), chunk("b.py", 1, 1, "token other words")]
    )
    ranked = search(index, "token", only(rank_scores=True, repeat_decay=0.99))
    raw = search(index, "token", ALL_OFF)
    assert [r.score for r in ranked] == pytest.approx([1 / 61, 1 / 62])
    assert raw[0].score > 0.1 and raw[0].score != pytest.approx(1 / 61)


def test_file_boost_lifts_a_file_that_several_candidates_point_at() -> None:
    index = make_index(
        [
            chunk("lone.py", 1, 1, "cache cache cache cache evict"),
            chunk("many.py", 1, 1, "cache evict entry entry entry entry"),
            chunk("many.py", 3, 3, "cache evict entry entry entry entry entry"),
            chunk("many.py", 5, 5, "cache evict entry entry entry entry entry entry"),
        ]
    )
    boosted = search(index, "cache evict", only(rank_scores=True, file_boost=0.2))
    plain = search(index, "cache evict", only(rank_scores=True))
    assert plain[0].file_path == "lone.py"
    assert boosted[0].file_path == "many.py"


def test_repeat_decay_lets_another_file_past_a_files_second_chunk() -> None:
    index = make_index(
        [
            chunk("big.py", 1, 1, "queue queue queue push"),
            chunk("big.py", 3, 3, "queue queue push push"),
            chunk("other.py", 1, 1, "queue push and more words here"),
        ]
    )
    decayed = search(index, "queue push", only(rank_scores=True, repeat_decay=0.5))
    plain = search(index, "queue push", only(rank_scores=True))
    assert [r.file_path for r in plain] == ["big.py", "big.py", "other.py"]
    assert [r.file_path for r in decayed] == ["big.py", "other.py", "big.py"]


def test_stem_boost_lifts_files_named_like_the_query_words() -> None:
    index = make_index(
        [
            chunk("helpers.py", 1, 1, "session session session storage"),
            chunk("sessions.py", 1, 1, "class Store: pass  # session storage"),
        ]
    )
    boosted = search(index, "session storage", only(rank_scores=True, stem_boost=1.0))
    plain = search(index, "session storage", only(rank_scores=True))
    assert plain[0].file_path == "helpers.py"
    assert boosted[0].file_path == "sessions.py"


def test_query_acronyms_are_initials_of_consecutive_keywords() -> None:
    found = text.query_acronyms("file system operations like read")
    assert found["fs"] == 2 and found["fso"] == 3 and found["sol"] == 3
    # A stopword or a short word breaks the run: no initials across "and" or "to".
    across = text.query_acronyms("server-sent events and subscriptions to go")
    assert across == {"se": 2, "sse": 3, "ss": 2}  # `sent events` gives `se` as well


def test_acronym_stems_let_a_file_named_by_initials_match_the_words() -> None:
    index = make_index(
        [
            chunk("loop.c", 1, 1, "file system calls: read write open stat system file"),
            chunk("fs.c", 1, 1, "int uv_fs_read(void) { return read(fd); } /* system */"),
        ]
    )
    query = "file system read write"
    plain = search(index, query, only(rank_scores=True, stem_boost=1.0))
    boosted = search(index, query, only(rank_scores=True, stem_boost=1.0, acronym_stems=True))
    assert [r.file_path for r in plain] == ["loop.c", "fs.c"]
    assert [r.file_path for r in boosted] == ["fs.c", "loop.c"]
    # The rule only widens the stem boost: without it, it changes nothing.
    assert spans(search(index, query, only(rank_scores=True, acronym_stems=True))) == spans(
        search(index, query, only(rank_scores=True))
    )


def test_definition_boost_lifts_the_chunk_that_defines_the_queried_name() -> None:
    index = make_index(
        [
            chunk("app.py", 1, 2, "r = Router()\nr2 = Router(Router())"),
            chunk("routing.py", 1, 2, "class Router:\n    pass", kind="class_definition"),
            chunk("router.py", 1, 2, "struct Router {\n}", kind="struct_item"),
        ]
    )
    boosted = search(index, "Router", only(rank_scores=True, definition_boost=3.0))
    plain = search(index, "Router", only(rank_scores=True))
    assert plain[0].file_path == "app.py"
    # Both definitions rise; the one in a file named after the symbol rises most.
    assert [r.file_path for r in boosted] == ["router.py", "routing.py", "app.py"]
    assert text.symbol_query("Router") and text.symbol_query("parse_config")
    assert text.symbol_query("Sinatra::Base") and not text.symbol_query("session")


def test_definition_boost_finds_a_c_function_by_its_header() -> None:
    assert text.defines("int uv_run(uv_loop_t* loop) {\n  return 0;\n}", "function", "uv_run")
    assert not text.defines("  uv_run(loop);\n", "module", "uv_run")


def test_path_penalty_demotes_tests_examples_and_compat_shims() -> None:
    index = make_index(
        [
            chunk("tests/test_parser.py", 1, 1, "parse parse parse tokens"),
            chunk("src/parser.py", 1, 1, "parse tokens and more words"),
        ]
    )
    penalised = search(index, "parse tokens", only(rank_scores=True, path_penalty=0.3))
    plain = search(index, "parse tokens", only(rank_scores=True))
    assert plain[0].file_path == "tests/test_parser.py"
    assert penalised[0].file_path == "src/parser.py"
    assert text.path_class("examples/demo.py") == (True, False)
    assert text.path_class("src/foo.test.ts") == (True, False)
    assert text.path_class("pkg/__init__.py") == (False, True)


def test_reexport_penalty_demotes_package_barrels() -> None:
    index = make_index(
        [
            chunk("pkg/__init__.py", 1, 1, "from .client import Client, Client"),
            chunk("pkg/client.py", 1, 1, "x = Client and more words here"),
        ]
    )
    penalised = search(index, "client", only(rank_scores=True, reexport_penalty=0.5))
    plain = search(index, "client", only(rank_scores=True))
    assert plain[0].file_path == "pkg/__init__.py"
    assert penalised[0].file_path == "pkg/client.py"


# --- code-hybrid --------------------------------------------------------------------


def test_code_hybrid_over_the_hash_embedder_is_code_unless_asked(corpus_index: Index) -> None:
    for query in ("login password", "create session", "check"):
        assert search(corpus_index, query, backend="code-hybrid") == search(corpus_index, query)


class FixedEmbedder:
    """A query embedder whose vector points at the third chunk of `semantic_index`."""

    def embed(self, text: str) -> list[float]:
        return [0.0, 0.0, 1.0]


def test_code_hybrid_adds_what_only_the_vector_finds() -> None:
    chunks = [
        chunk("a.py", 1, 1, "def fetch(url): return url"),
        chunk("b.py", 1, 1, "def other(): return 2"),
        chunk("c.py", 1, 1, "def download(address): return address"),
    ]
    matrix = np.eye(3, dtype=np.float64)
    index = Index(
        embedder="toy", chunks=chunks, embeddings=matrix, embedder_model="m", embedding_dim=3
    )
    query = Query("fetch", FixedEmbedder())
    fused = create_backend("code-hybrid", {"vector_scope": "corpus"}).search(index, query, 10)
    lexical = create_backend("code").search(index, query, 10)
    off = create_backend("code-hybrid", {"vector_weight": 0.0}).search(index, query, 10)
    assert [r.file_path for r in lexical] == ["a.py"]
    assert [r.file_path for r in off] == ["a.py"]
    assert {r.file_path for r in fused} == {"a.py", "c.py"}
    within_pool = create_backend("code-hybrid").search(index, query, 10)
    assert [r.file_path for r in within_pool] == ["a.py"]  # the default scope adds nothing


def test_code_hybrid_pool_scope_reorders_what_bm25_found() -> None:
    chunks = [
        chunk("a.py", 1, 1, "def fetch(url): fetch(url) return url"),
        chunk("b.py", 1, 1, "def get(url): fetch url once"),
        chunk("c.py", 1, 1, "def download(address): return address"),
    ]
    index = Index(
        embedder="toy",
        chunks=chunks,
        embeddings=np.asarray([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]),
        embedder_model="m",
        embedding_dim=3,
    )
    query = Query("fetch", FixedEmbedder())
    params = {**ALL_OFF, "rank_scores": True, "vector_scope": "pool"}
    reordered = create_backend("code-hybrid", {**params, "vector_weight": 0.9})
    plain = create_backend("code-hybrid", {**params, "vector_weight": 0.0})
    assert [r.file_path for r in plain.search(index, query, 10)] == ["a.py", "b.py"]
    assert [r.file_path for r in reordered.search(index, query, 10)] == ["b.py", "a.py"]


GO_FILE = (
    "package router\n"
    "\n"
    "// Router dispatches requests.\n"
    "type Router struct {\n"
    "\troutes map[string]Handler\n"
    "}\n"
    "\n"
    "// ServeHTTP answers one request.\n"
    "func (r *Router) ServeHTTP(w Writer, req *Request) {\n"
    "\tr.routes[req.Path].Serve(w, req)\n"
    "}\n"
    "\n"
    "func helper() int {\n"
    "\treturn 1\n"
    "}"
)


def unparsed_go_index() -> Index:
    whole = chunk("router.go", 1, 15, GO_FILE, kind="module")
    return make_index([attrs.evolve(whole, language="plaintext")])


def test_split_unparsed_cuts_a_whole_file_chunk_at_its_definitions() -> None:
    index = unparsed_go_index()
    on = search(index, "serve http", only(chunks="tiled", split_unparsed=True))
    off = search(index, "serve http", only(chunks="tiled"))
    # The comment above a definition stays with it; the package line is a piece alone.
    assert spans(on)[0] == ("router.go", 8, 11)
    assert on[0].content.startswith("// ServeHTTP") and on[0].content.endswith("}")
    assert sorted(spans(search(index, "router", only(chunks="tiled", split_unparsed=True)))) == [
        ("router.go", 1, 1), ("router.go", 3, 6), ("router.go", 8, 11)
    ]  # fmt: skip
    assert spans(off) == [("router.go", 1, 15)]


def test_split_unparsed_leaves_parsed_languages_alone() -> None:
    index = make_index([chunk("router.py", 1, 15, GO_FILE, kind="module")])
    cut = spans(search(index, "serve http", only(chunks="tiled", split_unparsed=True)))
    assert cut == [("router.py", 1, 15)]


def test_grammar_chunks_tile_a_go_file_at_its_parsed_definitions() -> None:
    index = unparsed_go_index()
    on = search(index, "serve http", only(chunks="tiled", grammar_chunks=True))
    off = search(index, "serve http", only(chunks="tiled"))
    # The parser's spans: the struct's type declaration, the method, the function; the
    # package line and each comment above a definition are the lines between them.
    tiled = only(chunks="tiled", grammar_chunks=True)
    assert sorted(spans(search(index, "router", tiled))) == [
        ("router.go", 1, 3), ("router.go", 4, 6), ("router.go", 9, 11)
    ]  # fmt: skip
    assert spans(search(index, "answers", tiled)) == [("router.go", 8, 8)]
    assert spans(search(index, "helper", tiled)) == [("router.go", 13, 15)]
    assert spans(on)[0] == ("router.go", 9, 11)
    assert on[0].content.startswith("func (r *Router) ServeHTTP(") and on[0].content.endswith("}")
    assert spans(off) == [("router.go", 1, 15)]


def test_grammar_chunks_take_the_definition_nodes_of_java_and_cpp() -> None:
    from cce_retrieval.rank.code import grammars

    java = "class Box {\n  int size() {\n    return 1;\n  }\n}\n"
    assert grammars.definitions("src/Box.java", java) == [
        (0, 4, "class_declaration"), (1, 3, "method_declaration")
    ]  # fmt: skip
    cpp = "namespace ns {\nstruct Point {\n  int x;\n};\nint area(Point p) {\n  return p.x;\n}\n}"
    assert grammars.definitions("geo/point.hpp", cpp) == [
        (1, 3, "struct_specifier"), (4, 6, "function_definition")
    ]  # fmt: skip
    # A multi-byte character before a definition moves no line number.
    assert grammars.definitions("a.go", "// é\nfunc f() {}\n") == [(1, 1, "function_declaration")]
    assert grammars.definitions("a.py", "def f(): pass") is None  # the chunker's language
    assert grammars.definitions("a.h", "int f(void) { return 0; }") is None  # C, parsed


def test_grammar_definitions_agree_across_threads() -> None:
    import concurrent.futures

    from cce_retrieval.rank.code import grammars

    texts = [("a.go", GO_FILE), ("b.java", "class B {\n  void run() {}\n}\n")] * 20
    expected = [grammars.definitions(path, text) for path, text in texts]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda item: grammars.definitions(*item), texts))
    assert found == expected
    assert expected[0] == [
        (3, 5, "type_declaration"),
        (8, 10, "method_declaration"),
        (12, 14, "function_declaration"),
    ]


def test_grammar_chunks_leave_parsed_languages_and_other_modes_alone() -> None:
    index = make_index([chunk("router.py", 1, 15, GO_FILE, kind="module")])
    assert spans(search(index, "serve http", only(chunks="tiled", grammar_chunks=True))) == [
        ("router.py", 1, 15)
    ]
    go = unparsed_go_index()
    assert spans(search(go, "serve http", only(chunks="outermost", grammar_chunks=True))) == [
        ("router.go", 1, 15)
    ]


def test_grammar_chunks_win_over_the_definition_line_splitter() -> None:
    index = unparsed_go_index()
    both = only(chunks="tiled", grammar_chunks=True, split_unparsed=True)
    grammar = only(chunks="tiled", grammar_chunks=True)
    assert spans(search(index, "router", both)) == spans(search(index, "router", grammar))


def test_split_unparsed_pieces_name_their_definition() -> None:
    index = unparsed_go_index()
    found = search(index, "helper", only(chunks="tiled", split_unparsed=True, definition_boost=3.0))
    assert spans(found)[0] == ("router.go", 13, 15)
