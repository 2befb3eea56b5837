"""`cce index --embedder openai` and querying its store, against a fake server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from cce_retrieval import load_index, save_index

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

State = dict[str, object]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[State]:
    """Answers 3-dimensional vectors; `state["fail"]` makes every answer hold a NaN."""
    state: State = {"fail": False, "dim": 3, "fail_after_ping": False}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            dim = state["dim"]
            assert isinstance(dim, int)
            data = [
                {"embedding": [float(len(text))] + [1.0] * (dim - 1), "index": i}
                for i, text in enumerate(body["input"])
            ]
            payload = json.dumps({"data": data}).encode()
            if state["fail"] or (state["fail_after_ping"] and body["input"] != ["ping"]):
                payload = b'{"data":[{"embedding":[NaN],"index":0}]}'
            if body["model"] == "missing":
                self.send_response(404)
                payload = b'{"error":{"message":"model \\"missing\\" not found"}}'
            else:
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
    monkeypatch.setenv("CCE_OPENAI_API_KEY", "sk-do-not-print")
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (root / "b.py").write_text("def beta():\n    return 2\n", encoding="utf-8")
    return root


def test_index_and_search_with_the_openai_embedder(
    server: State, corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = corpus / ".cce" / "index.json"
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    assert err.startswith("using openai embedder (tiny @ http://127.0.0.1:")
    assert "sk-do-not-print" not in out + err
    good = store.read_bytes()
    assert b'"embedder":"openai","embedder_model":"tiny","embedding_dim":3' in good
    assert b"sk-do-not" not in good
    fingerprint = (corpus / ".cce" / "fingerprint.json").read_text(encoding="utf-8")
    assert json.loads(fingerprint)["embed_dim"] == 3

    code, out, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0, err

    # Another model in the environment: refused, naming both models.
    monkeypatch.setenv("CCE_OPENAI_MODEL", "other")
    code, out, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert (code, out) == (1, "")
    assert "'tiny'" in err and "'other'" in err

    # A failed embedding run leaves the good store exactly as it was.
    monkeypatch.setenv("CCE_OPENAI_MODEL", "tiny")
    server["fail"] = True
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 1
    assert "non-finite" in err or "NaN" in err
    assert store.read_bytes() == good

    # The server answers again, with another dimension: the query is refused.
    server["fail"] = False
    server["dim"] = 5
    code, out, err = run_cce("relevance", _fixtures(corpus), "--store", str(store))
    assert code == 1 and "3-dimensional openai vectors" in err and "5 dimensions" in err


def test_a_missing_model_is_not_unreachable(
    server: State, corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCE_OPENAI_MODEL", "missing")
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: openai embedder selected but the openai server's health check at http://127."
    )
    assert err.endswith(
        'HTTP 404: model "missing" not found); '
        "fix the server or index with the default hash embedder\n"
    )
    assert "unreachable" not in err


def _fixtures(corpus: Path) -> str:
    path = corpus.parent / "f.jsonl"
    path.write_text(
        '{"schema":"cce.relevance/v1"}\n{"query":"alpha","expected":["a.py"]}\n', encoding="utf-8"
    )
    return str(path)


def test_an_unreachable_server_at_query_time_is_called_unreachable(
    server: State, corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = corpus / ".cce" / "index.json"
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CCE_OPENAI_URL", f"http://u:sk-pw@127.0.0.1:{port}")
    monkeypatch.setenv("CCE_OPENAI_TIMEOUT", "0.5")
    code, out, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert (code, out) == (1, "")
    assert err == (
        "error: this index was built with the openai embedder but the openai server is "
        f"unreachable at http://***@127.0.0.1:{port} \u2014 refusing to search across "
        "mismatched embedding spaces. Start the openai server, or re-index with the default "
        "hash embedder (`cce index <dir>`).\n"
    )
    code, out, err = run_cce("relevance", _fixtures(corpus), "--store", str(store))
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: this index was built with the openai embedder but the openai server is "
        f"unreachable at http://***@127.0.0.1:{port} "
    )


@pytest.mark.parametrize("url", ["http://a b", "http://127.0.0.1:1/v\x01"])
def test_a_base_url_with_a_space_or_control_character_is_refused_up_front(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("CCE_OPENAI_URL", url)
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert (code, out) == (1, "")
    assert err == (
        f"error: the openai base URL {url!r} is not a valid URL (it holds a space or a control "
        "character); set CCE_OPENAI_URL like http://localhost:8000\n"
    )


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "localhost:8000"])
def test_a_base_url_that_names_no_server_is_an_error_of_its_own(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("CCE_OPENAI_URL", url)
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert (code, out) == (1, "")
    assert err == (
        "error: the openai base URL must be an http:// or https:// URL with a host, got "
        f"{url!r}; set CCE_OPENAI_URL like http://localhost:8000\n"
    )
    monkeypatch.setenv("CCE_OPENAI_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("CCE_OPENAI_TIMEOUT", "later")
    code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert (code, out, err) == (
        1,
        "",
        "error: CCE_OPENAI_TIMEOUT must be a positive number of seconds, got 'later'\n",
    )


def test_a_store_from_before_unit_vectors_is_warned_about(
    server: State, corpus: Path, run_cce: RunCce
) -> None:
    store = corpus / ".cce" / "index.json"
    code, _, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    code, _, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0 and "not unit length" not in err
    index = load_index(str(store))
    index.embeddings = np.asarray(index.embeddings) * 40.0  # as an older cce stored them
    save_index(index, str(store))
    code, _, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0, err
    assert (
        "warning: this store's openai vectors are not unit length (it was built before cce "
        "scaled them), so rankings favour long vectors; re-index it with "
        "`cce index <dir> --embedder openai`\n"
    ) in err


def test_credentials_in_the_base_url_are_redacted_on_every_path(
    server: State,
    corpus: Path,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    secret_url = str(os.environ["CCE_OPENAI_URL"]).replace("http://", "http://alice:pw-secret@")
    shown = secret_url.replace("alice:pw-secret@", "***@")
    monkeypatch.setenv("CCE_OPENAI_URL", secret_url)
    store = corpus / ".cce" / "index.json"
    fixtures = _fixtures(corpus)
    config = tmp_path / "cce.toml"
    config.write_text('[backends.vec-openai]\nuse = "vector"\nembedder = "openai"\n', "utf-8")
    seen: list[str] = []

    def run(*argv: str) -> tuple[int, str, str]:
        code, out, err = run_cce(*argv)
        seen.append(out + err)
        return code, out, err

    code, _, err = run("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0 and f"using openai embedder (tiny @ {shown})" in err
    code, _, err = run("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0, err
    relevance = ("relevance", fixtures, "--dir", str(corpus), "--config", str(config))
    code, _, err = run(*relevance, "--backend", "vec-openai", "--json", "--provenance")
    assert code == 0, err
    code, _, err = run("relevance", fixtures, "--store", str(store), "--json", "--provenance")
    assert code == 0, err

    # Health checks that fail: at index, search and relevance time.
    server["fail"] = True
    code, _, err = run("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 1 and f"health check at {shown} failed" in err
    code, _, err = run("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 1 and shown in err
    code, _, err = run("relevance", fixtures, "--store", str(store))
    assert code == 1 and shown in err
    # A build without a health check (a configured backend) fails naming the endpoint.
    code, _, err = run(*relevance, "--backend", "vec-openai", "--no-cache")
    assert code == 1 and f"{shown}/v1/embeddings" in err
    # A server that passes its health check but fails the queries: warnings.
    server["fail"], server["fail_after_ping"] = False, True
    code, _, err = run("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0 and f"warning: openai embeddings at {shown}/v1/embeddings" in err
    code, _, err = run("index", str(corpus), "--embedder", "openai", "--no-metrics", "--no-cache")
    assert code == 1 and f"{shown}/v1/embeddings" in err
    # An unreachable server with credentials in its URL.
    monkeypatch.setenv("CCE_OPENAI_URL", "http://alice:pw-secret@127.0.0.1:9")
    monkeypatch.setenv("CCE_OPENAI_TIMEOUT", "0.5")
    code, _, err = run("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 1 and "http://***@127.0.0.1:9" in err
    code, _, err = run(*relevance, "--backend", "vec-openai", "--no-cache")
    assert code == 1 and "http://***@127.0.0.1:9" in err
    assert len(seen) == 12
    for text in seen:
        assert "pw-secret" not in text and "alice" not in text and "sk-do-not" not in text


def test_a_key_with_a_line_break_never_reaches_the_screen(
    server: State, corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CCE_OPENAI_API_KEY", "sk-mounted-secret\n")
    code, _, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    for key in ("sk-mounted-secret\nsk-second-line", "sk-mounted-\u20ac"):
        monkeypatch.setenv("CCE_OPENAI_API_KEY", key)
        code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
        assert (code, out) == (1, "")
        assert err.startswith("error: the API key in CCE_OPENAI_API_KEY holds a ")
        assert err.count("\n") == 1 and "Traceback" not in err and "sk-mounted" not in err
        store = corpus / ".cce" / "index.json"
        code, out, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
        assert (code, out) == (1, "") and err.startswith("error: the API key in ")
        assert "sk-mounted" not in err


def test_a_dripping_server_ends_at_the_configured_timeout(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))

    def drip() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                try:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n")
                    for _ in range(300):  # one byte every 0.1 s: 30 s in all
                        connection.sendall(b" ")
                        time.sleep(0.1)
                except OSError:
                    pass

    threading.Thread(target=drip, daemon=True).start()
    monkeypatch.setenv("CCE_OPENAI_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
    monkeypatch.setenv("CCE_OPENAI_TIMEOUT", "2")
    started = time.monotonic()
    try:
        code, out, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    finally:
        listener.close()
    assert time.monotonic() - started < 15.0  # the drip alone lasts 30 s
    assert (code, out) == (1, "")
    assert "no complete answer within 2.0s" in err and err.startswith("error: ")


def test_a_server_of_another_width_never_mixes_spaces_through_the_cache(
    server: State,
    corpus: Path,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    server["dim"] = 8
    store = corpus / ".cce" / "index.json"
    code, _, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    (corpus / "b.py").write_text("def beta():\n    return 'edited'\n", encoding="utf-8")
    server["dim"] = 16
    code, _, err = run_cce("index", str(corpus), "--embedder", "openai", "--no-metrics")
    assert code == 0, err
    index = load_index(str(store))
    assert index.embedding_dim == 16 and index.embedding_lengths is None
    assert np.asarray(index.embeddings).shape[1] == 16
    code, _, err = run_cce("search", "alpha", "--store", str(store), "--no-metrics")
    assert code == 0, err

    # A configured backend's build has no health check: with its server gone, cached
    # vectors are not taken for its space (a live vector is asked for first).
    config = tmp_path / "cce.toml"
    config.write_text('[backends.vec-openai]\nuse = "vector"\nembedder = "openai"\n', "utf-8")
    relevance = ("relevance", _fixtures(corpus), "--dir", str(corpus), "--config", str(config))
    code, _, err = run_cce(*relevance, "--backend", "vec-openai")
    assert code == 0, err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CCE_OPENAI_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("CCE_OPENAI_TIMEOUT", "0.5")
    code, out, err = run_cce(*relevance, "--backend", "vec-openai")
    assert (code, out) == (1, "") and "unreachable" in err
