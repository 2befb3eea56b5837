"""The OpenAI-compatible embeddings client against fake servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import pytest

from cce_retrieval import (
    BuildError,
    EmbedError,
    OpenAIEmbedder,
    build_index,
    create_embedder,
    parse_index,
    serialize_index,
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
    with pytest.raises(EmbedError, match="no answer within"):
        client(server, total_timeout=0.3, request_timeout=0.2, backoff=0.0).try_embed_batch(["a"])
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"<html>gateway</html>", "bad answer"),
        (b'{"data":[{"embedding":[NaN,1.0,0.5],"index":0}]}', "holds NaN"),
        (b'{"data":[{"embedding":[1e999,1.0,0.5],"index":0}]}', "non-finite"),
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
