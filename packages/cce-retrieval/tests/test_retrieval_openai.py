"""The OpenAI-compatible embeddings client against fake servers on 127.0.0.1."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import numpy as np
import pytest

from cce_retrieval import (
    BuildError,
    EmbedderMisconfigured,
    EmbedderUnavailable,
    EmbedderUnreachable,
    EmbedError,
    OpenAIEmbedder,
    QueryVectorError,
    build_index,
    create_embedder,
    parse_index,
    search,
    serialize_index,
    vector_search,
)

Answer = Callable[["Request"], tuple[int, dict[str, str], bytes]]


@attrs.define
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, object]


@attrs.define
class FakeServer:
    url: str
    requests: list[Request]
    answer: list[Answer]


def vectors_for(request: Request, dim: int = 3) -> bytes:
    inputs = request.body["input"]
    assert isinstance(inputs, list)
    data = [
        {"embedding": [float(len(text)), 1.0, 0.5][:dim] + [0.0] * (dim - 3), "index": i}
        for i, text in enumerate(inputs)
    ]
    return json.dumps({"data": list(reversed(data)), "model": "m"}).encode()


def ok(request: Request) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, vectors_for(request)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    requests: list[Request] = []
    answer: list[Answer] = [ok]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            request = Request(self.path, dict(self.headers.items()), body)
            requests.append(request)
            status, headers, payload = answer[0](request)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield FakeServer(f"http://127.0.0.1:{httpd.server_address[1]}", requests, answer)
    finally:
        httpd.shutdown()
        httpd.server_close()


def client(server: FakeServer, **options: object) -> OpenAIEmbedder:
    environ = {"CCE_OPENAI_API_KEY": "sk-secret-123"}
    sleeps: list[float] = []
    embedder = OpenAIEmbedder(
        server.url,
        "m",
        environ=environ,
        sleep=sleeps.append,
        **options,  # type: ignore[arg-type]
    )
    return embedder


def test_batches_keep_input_order_and_send_the_key_as_a_header(server: FakeServer) -> None:
    embedder = client(server, batch_size=2)
    vectors = embedder.try_embed_batch(["a", "bb", "ccc", ""])
    assert vectors == [[1.0, 1.0, 0.5], [2.0, 1.0, 0.5], [3.0, 1.0, 0.5], [1.0, 1.0, 0.5]]
    assert [r.body["input"] for r in server.requests] == [["a", "bb"], ["ccc", " "]]
    assert {r.path for r in server.requests} == {"/v1/embeddings"}
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret-123"
    assert server.requests[0].body["model"] == "m"
    assert "sk-secret" not in repr(embedder)


def test_a_missing_model_keeps_the_servers_message(server: FakeServer) -> None:
    server.answer[0] = lambda r: (
        404,
        {"Content-Type": "application/json"},
        b'{"error":{"message":"The model `nope` does not exist","type":"invalid_request"}}',
    )
    with pytest.raises(EmbedError) as caught:
        client(server).try_embed_batch(["x"])
    message = str(caught.value)
    assert "HTTP 404: The model `nope` does not exist" in message
    assert "unreachable" not in message and "sk-secret" not in message
    assert len(server.requests) == 1  # a 4xx other than 429 is not retried


def test_429_and_5xx_are_retried_with_backoff(server: FakeServer) -> None:
    answers = iter(
        [
            (429, {"Retry-After": "0.01"}, b'{"error":{"message":"slow down"}}'),
            (503, {}, b"overloaded"),
        ]
    )

    def flaky(request: Request) -> tuple[int, dict[str, str], bytes]:
        return next(answers, None) or ok(request)

    server.answer[0] = flaky
    sleeps: list[float] = []
    embedder = OpenAIEmbedder(server.url, "m", environ={}, sleep=sleeps.append, backoff=0.001)
    assert embedder.try_embed_batch(["a"]) == [[1.0, 1.0, 0.5]]
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.002]  # Retry-After wins over a shorter backoff
    assert "Authorization" not in server.requests[0].headers  # no key in the environment


def test_retries_stop_and_report_the_last_error(server: FakeServer) -> None:
    server.answer[0] = lambda r: (500, {}, b'{"error":"boom"}')
    with pytest.raises(EmbedError, match=r"failed after 3 attempts: HTTP 500: boom"):
        client(server, retries=2, backoff=0.0).try_embed_batch(["a"])


def test_a_slow_server_hits_the_total_timeout(server: FakeServer) -> None:
    def slow(request: Request) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.5)
        return ok(request)

    server.answer[0] = slow
    started = time.monotonic()
    with pytest.raises(EmbedError, match="answer within"):
        client(server, total_timeout=0.3, request_timeout=0.2, backoff=0.0).try_embed_batch(["a"])
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"<html>gateway</html>", r"answered with HTML, not JSON; is the base URL right\?"),
        (b'{"data":[{"embedding":[NaN,1.0,0.5],"index":0}]}', "holds NaN"),
        (b'{"data":[{"embedding":[1e999,1.0,0.5],"index":0}]}', "non-finite"),
        (b'{"data":[{"embedding":[1e300,1.0,0.5],"index":0}]}', "magnitude over 1e"),
        (b'{"data":[{"embedding":["1",1.0],"index":0}]}', "non-number"),
        (b'{"data":[]}', r"returned 0 embedding\(s\) for 1 input\(s\)"),
        (b'{"data":[{"embedding":[],"index":0}]}', "no embedding for input 0"),
        (b'{"object":"list"}', "no `data` array"),
    ],
)
def test_garbage_answers_are_clear_errors(server: FakeServer, payload: bytes, message: str) -> None:
    server.answer[0] = lambda r: (200, {}, payload)
    with pytest.raises(EmbedError, match=message):
        client(server).try_embed_batch(["a"])


def test_a_change_of_dimension_is_an_error(server: FakeServer) -> None:
    embedder = client(server, batch_size=1)
    calls = iter([3, 4])
    server.answer[0] = lambda r: (200, {}, vectors_for(r, next(calls)))
    with pytest.raises(EmbedError, match="4-dimensional embedding after 3-dimensional"):
        embedder.try_embed_batch(["a", "b"])


def test_unreachable_server_is_reported(tmp_path: Path) -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9", "m", environ={}, retries=0)
    with pytest.raises(EmbedError, match="unreachable"):
        embedder.check()
    assert embedder.embed("q") == []  # query time: a warning, no vector


def corpus(root: Path) -> Path:
    for i in range(5):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n", encoding="utf-8")
    return root


def test_the_store_records_model_and_dimension(server: FakeServer, tmp_path: Path) -> None:
    environ = {"CCE_OPENAI_URL": server.url, "OPENAI_API_KEY": "sk-never-stored"}
    embedder = create_embedder("openai", "m", environ)
    index = build_index(str(corpus(tmp_path)), embedder).index
    data = serialize_index(index)
    assert server.requests[0].headers["Authorization"] == "Bearer sk-never-stored"
    assert b"sk-never" not in data
    assert data.startswith(
        b'{"spec_version":"1.0","embedder":"openai","embedder_model":"m","embedding_dim":3,'
    )
    assert parse_index(data).embedding_dim == 3


def test_a_failed_run_aborts_the_build(server: FakeServer, tmp_path: Path) -> None:
    server.answer[0] = lambda r: (200, {}, b'{"data":[{"embedding":[NaN],"index":0}]}')
    embedder = OpenAIEmbedder(server.url, "m", environ={})
    with pytest.raises(BuildError, match="nothing was written"):
        build_index(str(corpus(tmp_path)), embedder)


# --- unit vectors -------------------------------------------------------------------------


def raw_vector(text: str) -> list[float]:
    """A direction drawn from the text, with a length that grows with the text: a server
    whose plain dot products would rank long chunks first."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    direction = np.random.default_rng(seed).standard_normal(8)
    return [float(v) for v in direction * (1.0 + 50.0 * len(text))]


def unnormalised(request: Request) -> tuple[int, dict[str, str], bytes]:
    inputs = request.body["input"]
    assert isinstance(inputs, list)
    data = [{"embedding": raw_vector(str(t)), "index": i} for i, t in enumerate(inputs)]
    return 200, {}, json.dumps({"data": data}).encode()


def varied_corpus(root: Path) -> Path:
    for i in range(12):
        body = "\n".join(f"    value_{i}_{j} = {j} * {i}" for j in range(1 + 3 * i))
        (root / f"m{i:02}.py").write_text(f"def f{i}():\n{body}\n    return 0\n", "utf-8")
    return root


def test_vector_rankings_are_true_cosine_rankings(server: FakeServer, tmp_path: Path) -> None:
    server.answer[0] = unnormalised
    environ = {"CCE_OPENAI_URL": server.url}
    index = build_index(str(varied_corpus(tmp_path)), create_embedder("openai", "m", environ)).index
    stored = np.asarray(index.embeddings, dtype=np.float64)
    assert np.allclose(np.linalg.norm(stored, axis=1), 1.0)
    raw = np.array([raw_vector(chunk.content) for chunk in index.chunks])
    embedder = create_embedder("openai", "m", environ)
    for query in ("value 3", "return", "def f7 value_7_2", "x"):
        q = np.array(raw_vector(query))
        truth = raw @ q / (np.linalg.norm(raw, axis=1) * np.linalg.norm(q))
        results = vector_search(index, embedder.embed(query), len(index.chunks))
        assert [r.chunk_id for r in results] == [
            index.chunks[i].chunk_id for i in np.argsort(-truth, kind="stable")
        ]
        assert [r.score for r in results] == pytest.approx(sorted(truth, reverse=True), abs=1e-6)
        hybrid = search(index, embedder, query, 5, False)
        assert all(-1.0 - 1e-9 <= r.score <= 2.0 for r in hybrid)


def _answer_for_f3(vector: list[float]) -> Answer:
    def answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        inputs = request.body["input"]
        assert isinstance(inputs, list)
        data = [
            {"embedding": vector if "f3" in str(t) else [1.0, 2.0, 3.0], "index": i}
            for i, t in enumerate(inputs)
        ]
        return 200, {}, json.dumps({"data": data}).encode()

    return answer


def test_a_vector_that_cannot_be_scaled_aborts_the_build_naming_the_chunk(
    server: FakeServer, tmp_path: Path
) -> None:
    server.answer[0] = _answer_for_f3([1e-320, 0.0, 0.0])
    embedder = OpenAIEmbedder(server.url, "m", environ={})
    with pytest.raises(BuildError) as caught:
        build_index(str(corpus(tmp_path)), embedder)
    message = str(caught.value)
    assert "embedder 'openai'" in message and "m3.py" in message and "underflows" in message
    assert "nothing was written" in message


def test_a_vector_of_zeros_leaves_its_chunk_without_a_vector(
    server: FakeServer, tmp_path: Path
) -> None:
    server.answer[0] = _answer_for_f3([0.0, 0.0, 0.0])
    built = build_index(str(corpus(tmp_path)), OpenAIEmbedder(server.url, "m", environ={}))
    index = built.index
    assert built.vectorless_chunks == 1
    blank = [i for i, chunk in enumerate(index.chunks) if chunk.file_path == "m3.py"]
    assert index.embedding_lengths is not None
    assert [index.embedding_lengths[i] for i in blank] == [0]
    assert index.embedding_dim == 3
    found = vector_search(index, [1.0, 2.0, 3.0], len(index.chunks))
    assert "m3.py" not in {r.file_path for r in found}
    assert len(found) == len(index.chunks) - 1


def test_a_query_vector_of_zeros_has_none_and_one_out_of_range_is_refused(
    server: FakeServer, tmp_path: Path
) -> None:
    environ = {"CCE_OPENAI_URL": server.url}
    index = build_index(str(corpus(tmp_path)), create_embedder("openai", "m", environ)).index
    assert vector_search(index, [0.0, 0.0, 0.0], 3) == []
    assert vector_search(index, [], 3) == []
    with pytest.raises(QueryVectorError, match=r"embedder 'openai' .*query.*underflows"):
        vector_search(index, [1e-320, 0.0, 0.0], 3)
    with pytest.raises(QueryVectorError, match="magnitude over 1e"):
        vector_search(index, [1e308, -1e308, 0.0], 3)


# --- endpoints that fail fast -------------------------------------------------------------


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    "base_url", ["ftp://127.0.0.1:1", "http://", "127.0.0.1:8000", "http://127.0.0.1:port"]
)
def test_a_base_url_that_names_no_server_fails_before_any_request(
    server: FakeServer, base_url: str
) -> None:
    embedder = OpenAIEmbedder(base_url, "m", environ={}, sleep=lambda s: None)
    with pytest.raises(EmbedderMisconfigured, match=r"http:// or https:// URL|not a valid URL"):
        embedder.try_embed_batch(["a"])
    with pytest.raises(EmbedderMisconfigured):
        embedder.check()
    assert server.requests == []


def test_a_base_ending_in_v1_is_not_doubled(server: FakeServer) -> None:
    for base in (server.url + "/v1", server.url + "/v1/"):
        assert OpenAIEmbedder(base, "m", environ={}).try_embed_batch(["a"]) == [[1.0, 1.0, 0.5]]
    assert [r.path for r in server.requests] == ["/v1/embeddings", "/v1/embeddings"]


@pytest.mark.parametrize(
    ("status", "payload", "attempts"),
    [
        (400, b'{"error":{"message":"bad input"}}', 1),
        (401, b'{"error":{"message":"no key"}}', 1),
        (408, b"timeout", 3),
        (200, b"not json", 1),
    ],
)
def test_only_transient_failures_are_retried(
    server: FakeServer, status: int, payload: bytes, attempts: int
) -> None:
    server.answer[0] = lambda r: (status, {}, payload)
    with pytest.raises(EmbedError):
        client(server, retries=2, backoff=0.0).try_embed_batch(["a"])
    assert len(server.requests) == attempts


def test_an_html_error_page_says_so_at_once(server: FakeServer) -> None:
    server.answer[0] = lambda r: (404, {"Content-Type": "text/html"}, b"<!DOCTYPE html><p>no")
    with pytest.raises(EmbedError) as caught:
        client(server).try_embed_batch(["a"])
    assert str(caught.value) == (
        f"the server at {server.url}/v1/embeddings answered with HTML, not JSON (HTTP 404); "
        "is the base URL right?"
    )
    assert len(server.requests) == 1


def test_a_refused_connection_is_retried_then_reported_unreachable() -> None:
    sleeps: list[float] = []
    url = f"http://127.0.0.1:{closed_port()}"
    embedder = OpenAIEmbedder(url, "m", environ={}, retries=2, sleep=sleeps.append)
    with pytest.raises(EmbedderUnreachable, match="failed after 3 attempts: unreachable"):
        embedder.try_embed_batch(["a"])
    assert sleeps == [0.5, 1.0]
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.check()
    assert caught.value.unreachable and caught.value.where == url


def test_the_total_time_is_bounded_by_the_environment() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    embedder = OpenAIEmbedder.from_env({"CCE_OPENAI_URL": url, "CCE_OPENAI_TIMEOUT": "0.3"})
    started = time.monotonic()
    with pytest.raises(EmbedderUnreachable):
        embedder.try_embed_batch(["a"])
    assert time.monotonic() - started < 1.5
    for bad in ("0", "-1", "nan", "soon"):
        with pytest.raises(EmbedderMisconfigured, match="CCE_OPENAI_TIMEOUT"):
            OpenAIEmbedder.from_env({"CCE_OPENAI_TIMEOUT": bad})


def test_credentials_in_the_base_url_are_sent_and_never_shown(server: FakeServer) -> None:
    base = server.url.replace("http://", "http://alice:hunter2@")
    embedder = OpenAIEmbedder(base, "m", environ={})
    assert embedder.try_embed_batch(["a"]) == [[1.0, 1.0, 0.5]]
    assert server.requests[0].headers["Authorization"] == "Basic YWxpY2U6aHVudGVyMg=="
    assert "hunter2" not in repr(embedder) + embedder.endpoint + embedder.location
    server.answer[0] = lambda r: (403, {}, b'{"error":{"message":"forbidden"}}')
    with pytest.raises(EmbedError) as caught:
        embedder.try_embed_batch(["a"])
    assert "hunter2" not in str(caught.value) and "http://***@127.0.0.1" in str(caught.value)


# --- hostile servers: redirects, drips, huge answers, unsendable keys ---------------------


@attrs.define
class RawServer:
    """A loopback listener whose every connection is handed to `serve(connection)`."""

    url: str
    connections: list[bytes]


def _whole_request(connection: socket.socket) -> bytes:
    """The request's head and its whole body: a server that closes with request bytes
    still unread makes the kernel reset the connection, and the reset can reach the
    client before the answer it was sent (seen under load as "connection reset")."""
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n\r\n" not in data:
            piece = connection.recv(65536)
            if not piece:
                return data
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip() or b"0")
        while len(body) < length:
            piece = connection.recv(65536)
            if not piece:
                break
            body += piece
            data += piece
    return data


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    listeners: list[socket.socket] = []

    def start(serve: Callable[[socket.socket], None]) -> RawServer:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)
        seen: list[bytes] = []

        def accept() -> None:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection:
                    connection.settimeout(5.0)
                    seen.append(_whole_request(connection))
                    with contextlib.suppress(OSError):
                        serve(connection)

        threading.Thread(target=accept, daemon=True).start()
        return RawServer(f"http://127.0.0.1:{listener.getsockname()[1]}", seen)

    yield start
    for listener in listeners:
        listener.close()


def test_a_redirect_is_an_error_and_the_key_never_leaves_the_host(
    server: FakeServer, raw_server: Callable[[Callable[[socket.socket], None]], RawServer]
) -> None:
    elsewhere = raw_server(lambda connection: None)
    target = elsewhere.url.replace("http://", "http://eve:pw-in-location@") + "/v1/embeddings"
    for status in (301, 302, 303, 307, 308):

        def redirect(request: Request, status: int = status) -> tuple[int, dict[str, str], bytes]:
            return status, {"Location": target}, b""

        server.answer[0] = redirect
        with pytest.raises(EmbedError) as caught:
            client(server, retries=3).try_embed_batch(["a"])
        message = str(caught.value)
        assert f"HTTP {status}" in message
        assert "not followed; point CCE_OPENAI_URL at the final address" in message
        assert "http://***@127.0.0.1" in message and "pw-in-location" not in message
    assert len(server.requests) == 5  # a redirect is not retried
    assert elsewhere.connections == []  # nothing, and no key, went to the other host


def test_a_server_that_drips_is_cut_off_at_the_deadline(
    raw_server: Callable[[Callable[[socket.socket], None]], RawServer],
) -> None:
    def drip(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n")
        for _ in range(400):  # one byte every 50 ms: 20 s in all
            connection.sendall(b" ")
            time.sleep(0.05)

    dripping = raw_server(drip)
    embedder = OpenAIEmbedder.from_env({"CCE_OPENAI_URL": dripping.url, "CCE_OPENAI_TIMEOUT": "1"})
    started = time.monotonic()
    with pytest.raises(EmbedError, match=r"no complete answer within 1.0s"):
        embedder.try_embed_batch(["a"])
    assert time.monotonic() - started < 8.0  # well under the 20 s the drip lasts


def test_an_answer_over_the_cap_is_refused(
    server: FakeServer,
    raw_server: Callable[[Callable[[socket.socket], None]], RawServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cce_retrieval.embed import openai

    monkeypatch.setattr(openai, "MAX_RESPONSE_BYTES", 1 << 20)
    big = b'{"data":[{"embedding":[1.0],"index":0}],"pad":"' + b"x" * (3 << 20) + b'"}'
    server.answer[0] = lambda r: (200, {}, big)
    with pytest.raises(EmbedError, match=f"larger than {1 << 20} bytes"):
        client(server).try_embed_batch(["a"])

    def announce_a_huge_body(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n{")
        time.sleep(5.0)  # the body never comes: only the announcement can be refused

    announced = raw_server(announce_a_huge_body)
    started = time.monotonic()
    with pytest.raises(EmbedError, match="larger than"):
        OpenAIEmbedder(announced.url, "m", environ={}, total_timeout=3.0).try_embed_batch(["a"])
    assert time.monotonic() - started < 2.5  # refused at once, not at the deadline

    def chunked(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b"x" * 65536
        for _ in range(48):  # 3 MiB, no Content-Length
            connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        connection.sendall(b"0\r\n\r\n")

    with pytest.raises(EmbedError, match="larger than"):
        OpenAIEmbedder(raw_server(chunked).url, "m", environ={}).try_embed_batch(["a"])


def test_a_key_from_a_mounted_secret_loses_its_line_break(server: FakeServer) -> None:
    embedder = OpenAIEmbedder(server.url, "m", environ={"CCE_OPENAI_API_KEY": " sk-mounted\n"})
    assert embedder.try_embed_batch(["a"]) == [[1.0, 1.0, 0.5]]
    assert server.requests[0].headers["Authorization"] == "Bearer sk-mounted"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("sk-first\nsk-second", "control character"),
        ("sk-tab\there", "control character"),
        ("sk-\u20ac-euro", "outside Latin-1"),
    ],
)
def test_a_key_that_cannot_be_sent_is_a_setting_error_that_never_shows_it(
    server: FakeServer, key: str, why: str
) -> None:
    embedder = OpenAIEmbedder(server.url, "m", environ={"OPENAI_API_KEY": key})
    for call in (lambda: embedder.try_embed_batch(["a"]), embedder.check):
        with pytest.raises(EmbedderMisconfigured) as caught:
            call()
        message = str(caught.value)
        assert "OPENAI_API_KEY" in message and why in message
        assert "sk-" not in message
    assert server.requests == []
