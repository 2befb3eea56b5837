"""The `grep` baseline backend: keywords, case-insensitive fixed strings, whole files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cce_metrics import estimate_tokens
from cce_retrieval import build_index
from cce_retrieval.chunk.chunker import chunk_id
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.model import Index
from cce_retrieval.rank.backends import BACKENDS, Backend, Query, backend_names, create_backend
from cce_retrieval.rank.backends.grep import GrepBackend
from cce_retrieval.rank.grep import STOPWORDS, corpus_texts, grep_rank, keywords

CORPUS = {
    "src/auth.py": (
        "import session\n\nMAX_RETRIES = 3\n\ndef login(user, password):\n"
        "    return check(user, password)\n\ndef check(user, password):\n"
        '    return user == "admin"\n'
    ),
    "src/session.py": "def create_session(user):\n    return {'User': user}\n",
    "src/password.py": "def reset_password(user):\n    return None\n",
    "docs/guide.md": "# Login guide\nCall LOGIN with a Password to sign in.\n",
    "b/notes.txt": "login password session\n",
    "a/notes.txt": "login password session\n",
    "empty.txt": "",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Index]:
    root = tmp_path_factory.mktemp("corpus")
    for rel, text in CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root, build_index(str(root), HashEmbedder()).index


def query(text: str, root: Path | None) -> Query:
    return Query(text, HashEmbedder(), corpus_root=None if root is None else str(root))


def test_keywords_drop_stopwords_short_words_and_repeats() -> None:
    assert keywords("How does the Login check the password of a user?") == (
        "login",
        "check",
        "password",
        "user",
    )
    assert keywords("where is parse_args defined, or PARSE_ARGS") == ("parse_args", "defined")
    assert keywords("is it ok") == ()
    assert "where" in STOPWORDS and "login" not in STOPWORDS


def test_files_ranked_by_distinct_keywords_then_path(corpus: tuple[Path, Index]) -> None:
    root, index = corpus
    results = GrepBackend().search(index, query("login password session", root), 10)
    # Three keywords each in the two notes, tie broken by path; auth.py has all three
    # too ("import session"); the guide has two (case-insensitive); password.py one.
    assert [(hit.file_path, hit.score) for hit in results] == [
        ("a/notes.txt", 3.0),
        ("b/notes.txt", 3.0),
        ("src/auth.py", 3.0),
        ("docs/guide.md", 2.0),
        ("src/password.py", 1.0),
        ("src/session.py", 1.0),
    ]
    assert [hit.rank for hit in results] == [1, 2, 3, 4, 5, 6]
    assert [hit.file_path for hit in GrepBackend().search(index, query("session", root), 2)] == [
        "a/notes.txt",
        "b/notes.txt",
    ]


def test_each_result_is_the_whole_file(corpus: tuple[Path, Index]) -> None:
    root, index = corpus
    (hit,) = GrepBackend().search(index, query("reset_password", root), 5)
    text = CORPUS["src/password.py"]
    assert hit.content == text
    assert (hit.start_line, hit.end_line) == (1, text.count("\n") + 1)
    assert (hit.chunk_type, hit.kind) == ("module", "module")
    assert hit.chunk_id == chunk_id("src/password.py", 1, hit.end_line, text.encode())
    # The whole auth.py, not its function chunks: what a reader pays for.
    (auth,) = GrepBackend().search(index, query("max_retries", root), 5)
    assert auth.file_path == "src/auth.py"
    assert estimate_tokens(auth.content) == index.file_tokens["src/auth.py"]


def test_without_the_corpus_files_are_rebuilt_from_chunks(corpus: tuple[Path, Index]) -> None:
    _, index = corpus
    texts = corpus_texts(index, None)
    # One whole-file chunk: exact. auth.py's lines outside its functions are empty.
    assert texts["docs/guide.md"] == CORPUS["docs/guide.md"]
    assert "import session" not in texts["src/auth.py"]
    assert "def login(user, password):" in texts["src/auth.py"]
    results = GrepBackend().search(index, query("import session", None), 10)
    assert "src/auth.py" not in [hit.file_path for hit in results]


def test_a_query_without_keywords_searches_its_whole_text() -> None:
    texts = {"x.py": "if, ok: go", "y.py": "If Ok"}
    assert grep_rank(texts, "  if ok ", 10) == [("y.py", 1)]
    assert grep_rank(texts, "if", 10) == [("x.py", 1), ("y.py", 1)]
    assert grep_rank(texts, "login", 10) == []
    assert grep_rank(texts, "if", 0) == []


def test_blank_queries_and_empty_indexes_return_nothing(corpus: tuple[Path, Index]) -> None:
    root, index = corpus
    assert GrepBackend().search(index, query("   ", root), 10) == []
    assert GrepBackend().search(Index("hash", []), query("login", root), 10) == []


def test_registered_opt_in_after_the_other_built_ins() -> None:
    assert backend_names()[:6] == ("bm25", "vector", "hybrid", "code", "code-hybrid", "grep")
    assert BACKENDS["grep"].params == ()
    made = create_backend("grep")
    assert isinstance(made, Backend) and made.name == "grep"


def test_a_changed_file_is_rebuilt_from_the_index(tmp_path: Path) -> None:
    source = tmp_path / "app.py"
    source.write_text("import os\n\ndef login():\n    return os.getenv('USER')\n", "utf-8")
    index = build_index(str(tmp_path), HashEmbedder()).index
    source.write_text("def logout():\n    pass\n", encoding="utf-8")
    (hit,) = GrepBackend().search(index, query("login", tmp_path), 5)
    assert hit.content == "\n\ndef login():\n    return os.getenv('USER')"
    assert GrepBackend().search(index, query("logout", tmp_path), 5) == []


def test_secrets_strict_protection_would_hide_stay_hidden_outside_chunks(tmp_path: Path) -> None:
    # SECRET_TOKEN sits between functions, where no chunk holds it; the default build
    # keeps it, strict protection would not, and grep returns what strict would.
    text = "SECRET_TOKEN = 'hunter2hunter2'\n\ndef login():\n    return True\n"
    (tmp_path / "auth.py").write_text(text, encoding="utf-8")
    index = build_index(str(tmp_path), HashEmbedder()).index
    (hit,) = GrepBackend().search(index, query("login", tmp_path), 5)
    assert "hunter2" not in hit.content
    assert hit.content.endswith("def login():\n    return True\n")


def test_redacted_like_the_index(tmp_path: Path) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (tmp_path / "conf.py").write_text(f"TOKEN = '{key}'\nlogin = True\n", encoding="utf-8")
    index = build_index(str(tmp_path), HashEmbedder()).index
    (hit,) = GrepBackend().search(index, query("login", tmp_path), 5)
    assert key not in hit.content
    assert "REDACTED" in hit.content
    assert GrepBackend().search(index, query(key, tmp_path), 5) == []
