"""`cce index/search` against misbehaving Ollama servers and malformed `CCE_OLLAMA_URL`s.

Servers are loopback-only; each answers `["ping"]` (the health check) and other inputs
separately so the build phase can be reached with bad vectors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

Answer = Callable[[list[str]], tuple[int, bytes]]


class Server:
    def __init__(self, answer: Answer) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, data = answer(body["input"])
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(
            target=self.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Server]]:
    servers: list[Server] = []

    def start(answer: Answer) -> Server:
        servers.append(Server(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def vectors(make: Callable[[str], str]) -> Answer:
    def answer(inputs: list[str]) -> tuple[int, bytes]:
        if inputs == ["ping"]:
            return 200, b'{"embeddings": [[1.0, 0.0]]}'
        return 200, ('{"embeddings": [' + ",".join(make(t) for t in inputs) + "]}").encode()

    return answer


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n")
    (root / "b.py").write_text("def beta():\n    return 2\n")
    return root


@pytest.mark.parametrize("bad", ["[NaN, 1.0]", "[1e999, 1.0]", "[1.0]", "[1e300, 1.0]"])
def test_bad_vectors_leave_the_previous_store(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[[Answer], Server],
    repo: Path,
    bad: str,
) -> None:
    assert run_cce("index", str(repo), "--no-metrics")[0] == 0
    store = repo / ".cce" / "index.json"
    before = store.read_bytes()
    # First chunk fine, second one bad (NaN, overflow to infinity, or a shorter vector).
    server = serve(vectors(lambda text: bad if "beta" in text else "[0.5, 0.5]"))
    monkeypatch.setenv("CCE_OLLAMA_URL", f"http://127.0.0.1:{server.port}")
    code, out, err = run_cce("index", str(repo), "--embedder", "ollama", "--no-metrics")
    assert code == 1 and out == ""
    assert err.startswith("using ollama embedder")
    assert "error: " in err and "nothing was written" in err
    why = {"[1.0]": "different dimensions", "[1e300, 1.0]": "magnitude over 1e+150"}
    assert why.get(bad, "non-finite") in err
    assert store.read_bytes() == before


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "error: CCE_OLLAMA_URL is set but empty"),
        ("http://[::1", "error: CCE_OLLAMA_URL is not a valid URL"),
        ("http://a b", "error: CCE_OLLAMA_URL is not a valid URL ('http://a b': it holds a space"),
        ("http://h\x7f", "error: CCE_OLLAMA_URL is not a valid URL ('http://h\\x7f': it holds"),
        ("localhost:11434", "error: CCE_OLLAMA_URL must be an http:// or https:// URL"),
    ],
)
def test_malformed_url_is_an_error_not_a_traceback(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    repo: Path,
    url: str,
    message: str,
) -> None:
    monkeypatch.setenv("CCE_OLLAMA_URL", url)
    code, out, err = run_cce("index", str(repo), "--embedder", "ollama")
    assert (code, out) == (1, "")
    assert err.startswith(message) and err.count("\n") == 1
    assert not (repo / ".cce").exists()


def test_credentials_are_redacted_in_the_using_line(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[[Answer], Server],
    repo: Path,
) -> None:
    server = serve(vectors(lambda text: "[0.5, 0.5]"))
    monkeypatch.setenv("CCE_OLLAMA_URL", f"http://alice:hunter2@127.0.0.1:{server.port}")
    code, _, err = run_cce("index", str(repo), "--embedder", "ollama", "--no-metrics")
    assert code == 0
    assert err == f"using ollama embedder (nomic-embed-text @ http://***@127.0.0.1:{server.port})\n"


def test_credentials_are_redacted_when_unreachable(
    run_cce: RunCce, monkeypatch: pytest.MonkeyPatch, repo: Path
) -> None:
    monkeypatch.setenv("CCE_OLLAMA_URL", "http://alice:hunter2@127.0.0.1:9")
    code, _, err = run_cce("index", str(repo), "--embedder", "ollama")
    assert code == 1
    assert err == (
        "error: ollama embedder selected but Ollama is unreachable at http://***@127.0.0.1:9; "
        "start Ollama or index with the default hash embedder\n"
    )


def test_http_500_is_not_called_unreachable(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[[Answer], Server],
    repo: Path,
) -> None:
    server = serve(lambda inputs: (500, b'{"error": "model not loaded"}'))
    monkeypatch.setenv("CCE_OLLAMA_URL", f"http://127.0.0.1:{server.port}")
    code, _, err = run_cce("index", str(repo), "--embedder", "ollama")
    assert code == 1
    assert "unreachable" not in err
    assert "health check at http://127.0.0.1" in err
    assert "HTTP status 500 Internal Server Error" in err


def test_search_refusal_keeps_the_cause(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[[Answer], Server],
    repo: Path,
) -> None:
    good = serve(vectors(lambda text: "[0.5, 0.5]"))
    monkeypatch.setenv("CCE_OLLAMA_URL", f"http://127.0.0.1:{good.port}")
    assert run_cce("index", str(repo), "--embedder", "ollama", "--no-metrics")[0] == 0
    broken = serve(lambda inputs: (200, b'{"model": "m"}'))
    monkeypatch.setenv("CCE_OLLAMA_URL", f"http://u:pw@127.0.0.1:{broken.port}")
    store = str(repo / ".cce" / "index.json")
    code, out, err = run_cce("search", "alpha", "--store", store, "--no-metrics")
    assert (code, out) == (1, "")
    assert "(ollama response missing .embeddings)" in err
    assert "http://***@127.0.0.1" in err and "pw@" not in err


def space(width: int, value: float) -> Answer:
    """Vectors `width` wide whose first value is `value` (the health check's too)."""

    def answer(inputs: list[str]) -> tuple[int, bytes]:
        vector = [value] + [float(i % 3) for i in range(1, width)]
        return 200, json.dumps({"embeddings": [vector for _ in inputs]}).encode()

    return answer


def test_the_cache_never_mixes_two_servers_spaces(
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    serve: Callable[[Answer], Server],
    repo: Path,
) -> None:
    from cce_retrieval import load_index

    store = repo / ".cce" / "index.json"
    index_args = ["index", str(repo), "--embedder", "ollama", "--no-metrics"]
    for number, (width, value) in enumerate([(8, 1.0), (16, 2.0), (16, 3.0)]):
        server = serve(space(width, value))
        monkeypatch.setenv("CCE_OLLAMA_URL", f"http://127.0.0.1:{server.port}")
        (repo / "b.py").write_text(f"def beta():\n    return {number}\n")  # one file edited
        code, _, err = run_cce(*index_args)
        assert code == 0, err
        index = load_index(str(store))
        assert index.embedding_dim == width and index.embedding_lengths is None
        embeddings: list[list[float]] = np.asarray(index.embeddings).tolist()
        # Every vector is this server's, cached files included (same width or not).
        assert len({tuple(row) for row in embeddings}) == 1
        norm = (value**2 + sum(float(i % 3) ** 2 for i in range(1, width))) ** 0.5
        assert embeddings[0][0] == pytest.approx(value / norm)
