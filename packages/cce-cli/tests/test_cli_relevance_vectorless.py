"""Queries a backend got no vector for are marked in `cce relevance`'s reports and refused
by `--strict` (docs/hostile-input.md#queries-without-a-vector): a model2vec model made in
the test that knows none of a query's words, and a fake OpenAI-compatible server on
127.0.0.1 that fails some queries."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

WORD = re.compile(r"\w+|[^\w\s]+")
TEXTS = {
    "alpha.py": "def alpha():\n    return parse_config(path)\n",
    "beta.py": "def beta():\n    return render_page(template)\n",
    "gamma.py": "def gamma():\n    return open_socket(port)\n",
}
CASES = [
    ("known", "parse_config path", "alpha.py"),
    ("unknown", "xylophone quartz", "beta.py"),
    ("socket", "open_socket port", "gamma.py"),
    ("also-unknown", "zeppelin", "gamma.py"),
]


def tiny_model(directory: Path, texts: list[str], dim: int = 12) -> Path:
    """A word-level `StaticModel` over the words of `texts` (random vectors), saved."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = sorted({word for text in texts for word in WORD.findall(text)})
    vocab = {"[UNK]": 0, **{word: i + 1 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(5).standard_normal((len(vocab), dim)) * 25.0
    StaticModel(vectors.astype(np.float32), tokenizer).save_pretrained(directory)
    return directory


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A corpus and a fixture file over it, two of whose four queries hold no known word."""
    root = tmp_path / "src"
    root.mkdir()
    for name, text in TEXTS.items():
        (root / name).write_text(text, encoding="utf-8")
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1"}\n'
        + "".join(json.dumps({"id": i, "query": q, "expected": [e]}) + "\n" for i, q, e in CASES),
        encoding="utf-8",
    )
    return root, fixtures


def _model2vec_store(root: Path, tmp_path: Path, run_cce: RunCce) -> Path:
    pytest.importorskip("model2vec")
    pytest.importorskip("tokenizers")
    model = tiny_model(tmp_path / "model", list(TEXTS.values()))
    code, _, err = run_cce(
        "index", str(root), "--embedder", "model2vec", "--model", str(model), "--no-metrics"
    )
    assert code == 0, err
    return root / ".cce" / "index.json"


NOTE_VECTOR = (
    "  note: 2 of 4 queries have no vector on vector (unknown, also-unknown): the embedder "
    "gave them an empty or all-zero vector, so the vector signal ranked nothing for them\n"
)


def test_a_model2vec_run_marks_queries_without_a_vector(
    project: tuple[Path, Path], tmp_path: Path, run_cce: RunCce
) -> None:
    root, fixtures = project
    store = _model2vec_store(root, tmp_path, run_cce)

    code, out, err = run_cce("relevance", str(fixtures), "--store", str(store), "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    marked = {entry["backend"]: entry.get("queries_without_vector") for entry in report["backends"]}
    # bm25 never asks for a vector; vector and hybrid both asked and got none.
    assert marked == {
        "bm25": None,
        "vector": ["unknown", "also-unknown"],
        "hybrid": ["unknown", "also-unknown"],
    }
    vector = next(entry for entry in report["backends"] if entry["backend"] == "vector")
    ranks = {row["id"]: row["first_relevant_rank"] for row in vector["per_query"]}
    assert ranks["unknown"] is None and ranks["also-unknown"] is None

    code, out, err = run_cce("relevance", str(fixtures), "--store", str(store))
    assert (code, err) == (0, "")
    assert out.endswith("\n" + NOTE_VECTOR + NOTE_VECTOR.replace("on vector", "on hybrid"))

    # The Python API carries the marks: the same JSON, and a column in the records.
    from cce_cli import run_relevance

    report = run_relevance(str(fixtures), store=str(store), backends="bm25,vector")
    assert json.loads(report.json())["backends"][1]["queries_without_vector"] == [
        "unknown",
        "also-unknown",
    ]
    marks = {(row["backend"], row["id"]) for row in report.records() if row["no_vector"]}
    assert marks == {("vector", "unknown"), ("vector", "also-unknown")}

    # A BM25-only run embeds nothing, so nothing is marked and the report is unchanged.
    code, out, err = run_cce(
        "relevance", str(fixtures), "--store", str(store), "--backend", "bm25", "--json"
    )
    assert code == 0 and "queries_without_vector" not in out

    code, out, err = run_cce(
        "relevance", str(fixtures), "--store", str(store), "--backend", "vector", "--strict"
    )
    assert (code, out) == (1, "")
    assert err == (
        "error: --strict: 2 of 4 queries have no vector on vector (unknown, also-unknown): "
        "the embedder gave them an empty or all-zero vector (a failed embedding, warned "
        "above, or only words its model does not know); fix the embedder or its server, "
        "or drop --strict to score them as misses\n"
    )


def test_a_hash_run_is_never_marked(project: tuple[Path, Path], run_cce: RunCce) -> None:
    """The hash embedder ranks even the zero vector (the reference's rule): no marks."""
    root, fixtures = project
    code, out, err = run_cce("relevance", str(fixtures), "--dir", str(root), "--json", "--strict")
    assert (code, err) == (0, "")
    assert "queries_without_vector" not in out


@pytest.fixture
def failing_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """An OpenAI-compatible server that refuses (HTTP 400) any input holding `xylophone`
    or `zeppelin` and answers every other text with a vector of its letters; records
    every request's inputs."""
    seen: list[list[str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(list(body["input"]))
            if any(word in text for text in body["input"] for word in ("xylophone", "zeppelin")):
                self.send_response(400)
                payload = b'{"error":{"message":"cannot embed this"}}'
            else:
                data = [
                    {"embedding": [float(len(text)), float(text.count("a")) + 1.0, 1.0], "index": i}
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
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    monkeypatch.setenv("CCE_OPENAI_URL", f"http://127.0.0.1:{httpd.server_address[1]}")
    monkeypatch.setenv("CCE_OPENAI_MODEL", "tiny")
    try:
        yield seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_queries_a_server_failed_are_marked_and_embedded_once(
    failing_server: list[list[str]], project: tuple[Path, Path], run_cce: RunCce
) -> None:
    root, fixtures = project
    code, _, err = run_cce("index", str(root), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    store = root / ".cce" / "index.json"
    failing_server.clear()

    code, out, err = run_cce("relevance", str(fixtures), "--store", str(store), "--json")
    assert code == 0
    # Each failed query is warned about once, though vector and hybrid both rank it.
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2 and all("HTTP 400: cannot embed this" in w for w in warnings)
    queries = [inputs for inputs in failing_server if inputs != ["ping"]]
    assert sorted(text for inputs in queries for text in inputs) == sorted(q for _, q, _ in CASES)
    report = json.loads(out)
    marked = {entry["backend"]: entry.get("queries_without_vector") for entry in report["backends"]}
    assert marked == {
        "bm25": None,
        "vector": ["unknown", "also-unknown"],
        "hybrid": ["unknown", "also-unknown"],
    }

    code, out, err = run_cce(
        "relevance", str(fixtures), "--store", str(store), "--backend", "hybrid", "--strict"
    )
    assert (code, out) == (1, "")
    assert err.splitlines()[-1].startswith(
        "error: --strict: 2 of 4 queries have no vector on hybrid (unknown, also-unknown): "
    )


def test_a_suite_member_s_marked_queries_show_in_the_suite_report(
    project: tuple[Path, Path], tmp_path: Path, run_cce: RunCce
) -> None:
    pytest.importorskip("model2vec")
    pytest.importorskip("tokenizers")
    _, fixtures = project
    model = tiny_model(tmp_path / "model", list(TEXTS.values()))
    (tmp_path / "cce.toml").write_text(
        f'[backends.m2v]\nuse = "vector"\nembedder = "model2vec"\nmodel = "{model}"\n',
        encoding="utf-8",
    )
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n[[members]]\nname = "one"\n'
        f'fixtures = "{fixtures.name}"\ncorpus = "src"\n',
        encoding="utf-8",
    )
    chosen = ("--backend", "bm25,m2v")
    code, out, err = run_cce("relevance", str(manifest), *chosen, "--json")
    assert code == 0, err
    member = json.loads(out)["members"][0]["report"]
    marked = {entry["backend"]: entry.get("queries_without_vector") for entry in member["backends"]}
    assert marked == {"bm25": None, "m2v": ["unknown", "also-unknown"]}
    from cce_cli import run_suite

    suite = run_suite(str(manifest), backends="bm25,m2v")
    marks = {row["qualified_id"] for row in suite.records() if row["no_vector"]}
    assert marks == {"one/unknown", "one/also-unknown"}

    code, out, err = run_cce("relevance", str(manifest), *chosen)
    assert code == 0, err
    assert out.endswith(
        "\n  note: member one: 2 of 4 queries have no vector on m2v (unknown, also-unknown): "
        "the embedder gave them an empty or all-zero vector, so the vector signal ranked "
        "nothing for them\n"
    )

    code, out, err = run_cce("relevance", str(manifest), *chosen, "--strict")
    assert code == 1
    assert "2 of 4 queries have no vector on m2v (unknown, also-unknown)" in err
