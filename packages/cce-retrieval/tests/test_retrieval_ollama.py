"""The Ollama embedder against a fake `/api/embed` server on 127.0.0.1
(docs/retrieval.md#ollama-embedder)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cce_retrieval.embed.hashing import EmbedError
from cce_retrieval.embed.ollama import (
    DEFAULT_OLLAMA_MODEL,
    DEFAULT_OLLAMA_URL,
    OllamaEmbedder,
)


class FakeOllama:
    """A loopback server speaking `/api/embed`; `mode` picks the (mis)behaviour."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[tuple[str, str, dict[str, object]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                fake.requests.append((self.path, self.headers.get("Content-Type", ""), body))
                status, payload = fake.respond(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def respond(self, body: dict[str, object]) -> tuple[int, bytes]:
        inputs = body["input"]
        assert isinstance(inputs, list)
        vectors: list[object] = [[float(len(t)), 0.5, -1.0] if t else [] for t in inputs]
        if self.mode == "mismatch":
            vectors = vectors[:-1]
        elif self.mode == "empty_vectors":
            vectors = [[] for _ in inputs]
        elif self.mode == "odd_items":
            odd: list[object] = [[1, "a", True, None, 2.5], {"not": "an array"}]
            vectors = odd[: len(inputs)]
        if self.mode == "missing":
            return 200, b'{"model": "x"}'
        if self.mode == "not_json":
            return 200, b"<html>nope</html>"
        if self.mode == "status":
            return 500, b'{"error": "model not loaded"}'
        return 200, json.dumps({"embeddings": vectors}).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    server = FakeOllama()
    yield server
    server.close()


def test_success_sends_the_real_protocol(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(fake.url, "my-model")
    assert embedder.name == "ollama"
    assert embedder.try_embed_batch(["abc", "de"]) == [[3.0, 0.5, -1.0], [2.0, 0.5, -1.0]]
    assert fake.requests == [
        ("/api/embed", "application/json", {"input": ["abc", "de"], "model": "my-model"})
    ]


def test_inputs_are_truncated_to_2000_code_points(fake: FakeOllama) -> None:
    long_text = "é" * 1999 + "xyz"
    assert OllamaEmbedder(fake.url).try_embed(long_text) == [2000.0, 0.5, -1.0]
    sent = fake.requests[0][2]["input"]
    assert sent == ["é" * 1999 + "x"]


def test_empty_strings_inside_a_batch_are_sent_and_accepted(fake: FakeOllama) -> None:
    assert OllamaEmbedder(fake.url).try_embed_batch(["", "a", ""]) == [[], [1.0, 0.5, -1.0], []]
    assert fake.requests[0][2]["input"] == ["", "a", ""]


def test_single_empty_text_needs_no_request(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(fake.url)
    assert embedder.try_embed("") == []
    assert embedder.embed("") == []
    assert fake.requests == []


def test_count_mismatch(fake: FakeOllama) -> None:
    fake.mode = "mismatch"
    with pytest.raises(EmbedError, match=r"^ollama returned 1 embedding\(s\) for 2 input\(s\)$"):
        OllamaEmbedder(fake.url).try_embed_batch(["a", "b"])


def test_missing_embeddings(fake: FakeOllama) -> None:
    fake.mode = "missing"
    with pytest.raises(EmbedError, match=r"^ollama response missing \.embeddings$"):
        OllamaEmbedder(fake.url).try_embed("a")


def test_body_that_is_not_json(fake: FakeOllama) -> None:
    fake.mode = "not_json"
    with pytest.raises(EmbedError, match=r"^ollama bad response: "):
        OllamaEmbedder(fake.url).try_embed("a")


def test_non_2xx_status(fake: FakeOllama) -> None:
    fake.mode = "status"
    with pytest.raises(EmbedError, match=r"^ollama request failed: .*500"):
        OllamaEmbedder(fake.url).try_embed("a")


def test_empty_vector_for_non_empty_input(fake: FakeOllama) -> None:
    fake.mode = "empty_vectors"
    with pytest.raises(
        EmbedError, match=r"^ollama returned an empty embedding for a non-empty input$"
    ):
        OllamaEmbedder(fake.url).try_embed_batch(["", "a"])
    # Only empty inputs: empty vectors are fine.
    assert OllamaEmbedder(fake.url).try_embed_batch(["", ""]) == [[], []]


def test_non_numeric_items_are_dropped_and_non_arrays_are_empty(fake: FakeOllama) -> None:
    fake.mode = "odd_items"
    assert OllamaEmbedder(fake.url).try_embed_batch(["a", ""]) == [[1.0, 2.5], []]


def test_unreachable_server() -> None:
    embedder = OllamaEmbedder("http://127.0.0.1:1", health_timeout=5.0, request_timeout=5.0)
    with pytest.raises(EmbedError, match=r"^ollama request failed: "):
        embedder.try_embed("a")
    assert embedder.healthy() is False


def test_health_check_is_a_real_ping(fake: FakeOllama) -> None:
    assert OllamaEmbedder(fake.url, "m").healthy() is True
    assert fake.requests == [("/api/embed", "application/json", {"input": ["ping"], "model": "m"})]
    fake.mode = "status"
    assert OllamaEmbedder(fake.url).healthy() is False


def test_embed_warns_and_returns_empty_on_failure(
    fake: FakeOllama, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.mode = "missing"
    assert OllamaEmbedder(fake.url).embed("???") == []
    assert capsys.readouterr().err == (
        "warning: ollama response missing .embeddings; vector recall disabled for this query\n"
    )


def test_trailing_slash_is_concatenated_verbatim(fake: FakeOllama) -> None:
    embedder = OllamaEmbedder(fake.url + "/")
    assert embedder.endpoint == fake.url + "//api/embed"


def test_from_env_defaults_and_set_but_empty() -> None:
    default = OllamaEmbedder.from_env({})
    assert (default.base_url, default.model) == (DEFAULT_OLLAMA_URL, DEFAULT_OLLAMA_MODEL)
    assert (default.base_url, default.model) == ("http://localhost:11434", "nomic-embed-text")
    custom = OllamaEmbedder.from_env(
        {"CCE_OLLAMA_URL": "http://h:1", "CCE_OLLAMA_MODEL": ""}, request_timeout=7.0
    )
    assert (custom.base_url, custom.model, custom.request_timeout) == ("http://h:1", "", 7.0)


def test_from_env_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CCE_OLLAMA_URL", "")
    monkeypatch.delenv("CCE_OLLAMA_MODEL", raising=False)
    embedder = OllamaEmbedder.from_env()
    assert (embedder.base_url, embedder.model) == ("", "nomic-embed-text")
