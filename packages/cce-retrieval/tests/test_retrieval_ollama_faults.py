"""Ollama faults: each cause keeps its own message, bad vectors never pass, no hang, no leak.

The servers are raw loopback sockets on 127.0.0.1 scripted per test, so a test can send
a redirect, garbage, NaN, one byte at a time, or nothing at all.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from cce_retrieval.embed.hashing import EmbedError, check_vectors
from cce_retrieval.embed.ollama import (
    OllamaConfigError,
    OllamaEmbedder,
    OllamaUnreachable,
    redact_url,
)

Reply = Callable[[socket.socket, bytes], None]


class ScriptedServer:
    """Accepts connections and hands each (socket, request bytes) to `reply`."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + body)
                self.reply(conn, body)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.listener.close()


def http_reply(status: str, body: bytes, extra: str = "") -> Reply:
    def reply(conn: socket.socket, _request: bytes) -> None:
        head = (
            f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
        )
        conn.sendall(head.encode() + body)

    return reply


def vectors_reply(make: Callable[[list[str]], object]) -> Reply:
    def reply(conn: socket.socket, request: bytes) -> None:
        inputs = json.loads(request)["input"]
        http_reply("200 OK", json.dumps(make(inputs)).encode())(conn, request)

    return reply


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(reply: Reply) -> ScriptedServer:
        server = ScriptedServer(reply)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def _failure(embedder: OllamaEmbedder) -> EmbedError:
    with pytest.raises(EmbedError) as caught:
        embedder.check_health()
    return caught.value


# --- every cause has its own message -------------------------------------------------------


def test_refused_connection_is_unreachable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as reserved:
        port = reserved.getsockname()[1]
    failure = _failure(OllamaEmbedder(f"http://127.0.0.1:{port}"))
    assert isinstance(failure, OllamaUnreachable)
    assert "cannot connect" in str(failure)


def test_http_500_is_reported_as_a_status(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(http_reply("500 Internal Server Error", b"{}"))
    failure = _failure(OllamaEmbedder(server.url))
    assert not isinstance(failure, OllamaUnreachable)
    assert str(failure) == "ollama request failed: HTTP status 500 Internal Server Error"


def test_redirect_is_named_and_not_followed(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(
        http_reply("301 Moved Permanently", b"", "Location: http://u:secret@elsewhere/\r\n")
    )
    failure = str(_failure(OllamaEmbedder(server.url)))
    assert "HTTP status 301 Moved Permanently" in failure
    assert "redirect to http://***@elsewhere/ not followed" in failure
    assert "secret" not in failure
    assert len(server.requests) == 1


def test_garbage_body(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(http_reply("200 OK", b"\x00<html>"))
    assert str(_failure(OllamaEmbedder(server.url))).startswith("ollama bad response: ")


def test_deeply_nested_body_is_a_bad_response(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(http_reply("200 OK", b"[" * 100_000))
    assert "ollama bad response" in str(_failure(OllamaEmbedder(server.url)))


def test_missing_embeddings(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(http_reply("200 OK", b'{"model": "m"}'))
    assert str(_failure(OllamaEmbedder(server.url))) == "ollama response missing .embeddings"


def test_wrong_count(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(vectors_reply(lambda inputs: {"embeddings": [[1.0]] * (len(inputs) + 1)}))
    assert str(_failure(OllamaEmbedder(server.url))) == (
        "ollama returned 2 embedding(s) for 1 input(s)"
    )


def test_slow_drip_hits_the_total_deadline(serve: Callable[[Reply], ScriptedServer]) -> None:
    def drip(conn: socket.socket, _request: bytes) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b" " * 1000:
            conn.sendall(bytes([byte]))
            time.sleep(0.1)

    server = serve(drip)
    embedder = OllamaEmbedder(server.url, health_timeout=0.5, request_timeout=0.5)
    started = time.monotonic()
    failure = _failure(embedder)
    elapsed = time.monotonic() - started
    assert str(failure) == "ollama request failed: no complete response within 0.5 s"
    # Each byte arrives well inside any per-read timeout; only a total deadline ends this.
    assert elapsed < 60
    with pytest.raises(EmbedError, match=r"within 0\.5 s"):
        embedder.try_embed_batch(["a"])


def test_silent_server_times_out(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(lambda conn, _request: time.sleep(3))
    failure = _failure(OllamaEmbedder(server.url, health_timeout=0.3))
    assert "no complete response within 0.3 s" in str(failure)


# --- vectors are validated before anything can be written --------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"embeddings": [[NaN, 1.0]]}', "non-finite number"),
        (b'{"embeddings": [[1e999, 1.0]]}', "non-finite number"),
        (b'{"embeddings": [[-Infinity]]}', "non-finite number"),
        (b'{"embeddings": [[1e300, 1.0]]}', "magnitude over 1e"),
    ],
)
def test_non_finite_vectors_are_refused(
    serve: Callable[[Reply], ScriptedServer], body: bytes, message: str
) -> None:
    server = serve(http_reply("200 OK", body))
    with pytest.raises(EmbedError, match=message):
        OllamaEmbedder(server.url).try_embed_batch(["x"])


def test_ragged_dimensions_are_refused(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(
        vectors_reply(lambda inputs: {"embeddings": [[1.0] * (i + 2) for i in range(len(inputs))]})
    )
    with pytest.raises(EmbedError, match="different dimensions"):
        OllamaEmbedder(server.url).try_embed_batch(["a", "b"])


def test_check_vectors_allows_empty_vectors_for_empty_inputs() -> None:
    check_vectors([[1.0, 2.0], [], [3.0, 4.0]], ["a", "", "b"], "x")
    with pytest.raises(EmbedError, match="empty embedding"):
        check_vectors([[]], ["a"], "x")


# --- URLs: validated up front, credentials never printed ---------------------------------


@pytest.mark.parametrize("url", ["", "http://[::1", "localhost:11434", "ftp://host", "http://"])
def test_malformed_url_is_a_config_error(url: str) -> None:
    with pytest.raises(OllamaConfigError, match="CCE_OLLAMA_URL"):
        OllamaEmbedder(url).check_health()


def test_malformed_port_is_a_config_error() -> None:
    with pytest.raises(OllamaConfigError, match="not a valid URL"):
        OllamaEmbedder("http://u:hunter2@host:notaport").check_url()


def test_config_error_does_not_print_the_password() -> None:
    with pytest.raises(OllamaConfigError) as caught:
        OllamaEmbedder("ftp://user:hunter2@host").check_url()
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pass@host:1/x", "http://***@host:1/x"),
        ("http://token@host", "http://***@host"),
        ("http://host/a@b", "http://host/a@b"),
        ("http://a:b@c@host", "http://***@host"),
        ("no scheme", "no scheme"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_credentials_are_sent_as_basic_auth(serve: Callable[[Reply], ScriptedServer]) -> None:
    server = serve(vectors_reply(lambda inputs: {"embeddings": [[1.0] for _ in inputs]}))
    url = server.url.replace("http://", "http://user:pa%40ss@")
    OllamaEmbedder(url).check_health()
    assert b"Authorization: Basic dXNlcjpwYUBzcw==" in server.requests[0]


def test_a_body_announced_over_the_cap_is_refused_unread(
    serve: Callable[[Reply], ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_retrieval.embed import ollama

    def announce(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n{")
        time.sleep(3)  # the body never comes: only the announcement can be refused

    server = serve(announce)
    started = time.monotonic()
    failure = _failure(OllamaEmbedder(server.url, health_timeout=2.0))
    assert str(failure) == f"ollama bad response: larger than {ollama.MAX_RESPONSE_BYTES} bytes"
    assert time.monotonic() - started < 1.5  # refused at once, not at the deadline
    monkeypatch.setattr(ollama, "MAX_RESPONSE_BYTES", 1 << 20)
    big = serve(
        http_reply("200 OK", b'{"embeddings": [[1.0]], "pad": "' + b"x" * (2 << 20) + b'"}')
    )
    assert str(_failure(OllamaEmbedder(big.url))) == (
        f"ollama bad response: larger than {1 << 20} bytes"
    )


def test_the_health_check_learns_the_width_the_cache_is_keyed_by(
    serve: Callable[[Reply], ScriptedServer],
) -> None:
    from cce_retrieval.build.cache import CacheSalt

    server = serve(vectors_reply(lambda inputs: {"embeddings": [[1.0] * 7 for _ in inputs]}))
    embedder = OllamaEmbedder(server.url.replace("http://", "http://u:pw@"))
    assert CacheSalt.for_build(True, embedder).dimension is None
    embedder.check_health()
    salt = CacheSalt.for_build(True, embedder)
    assert (salt.endpoint, salt.dimension) == (server.url, 7)
