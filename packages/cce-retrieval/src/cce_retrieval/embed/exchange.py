"""One bounded HTTP POST, shared by the embedders that talk to a server (Ollama and the
OpenAI-compatible client).

Why it exists: `urllib` and `http.client` bound each socket operation, not a request, so
a server that sends one byte a second is never cut off by a 60 s read timeout; they
buffer a body of any size; and urllib's redirect handler resends the `Authorization`
header to whatever host a 301/302/303 names. Both server clients need the same three
guarantees, so this module owns the exchange and nothing else:

- **a total deadline by the clock**: a watchdog timer shuts the socket down at the
  deadline, waking any blocked connect (of TLS), send or read;
- **a bounded body**: a `Content-Length` over `max_bytes` is refused before anything is
  read, and a body without one is read in pieces and refused once it passes the bound;
- **no redirects**: a 3xx is returned as an answer like any other status, so the caller
  reports it; nothing is ever sent to a host other than the one given.

Failures are typed (`ConnectFailed`, `DeadlineExceeded`, `ResponseTooLarge`,
`ExchangeBroken`) and carry no URL, so each client words them in its own terms and
prints only its redacted URL. See docs/hostile-input.md#embedding-servers.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import Final

import attrs

MAX_RESPONSE_BYTES: Final = 512 * 1024 * 1024
"""A response body larger than this is refused rather than buffered (64 vectors of
4096 dimensions are about 5 MB of JSON)."""

_READ_PIECE: Final = 1 << 20


class ExchangeFailure(Exception):
    """Why an exchange ended without a whole answer; `str()` is the cause, free of URLs."""


class ConnectFailed(ExchangeFailure):
    """No connection was made (refused, unresolvable name, TLS failure, connect timeout).

    `cause` is the underlying error, so a caller can tell a transient failure
    (`ConnectionError`, `TimeoutError`) from one that asking again cannot fix.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class DeadlineExceeded(ExchangeFailure):
    """The whole answer had not arrived when the deadline passed."""


class ResponseTooLarge(ExchangeFailure):
    """The body is (or announces itself as) larger than the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"larger than {limit} bytes")
        self.limit = limit


class ExchangeBroken(ExchangeFailure):
    """The connection broke after it was made (reset, closed, not HTTP).

    `cause` is the underlying error (a `ConnectionError` is worth another attempt).
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


@attrs.frozen(slots=True)
class Answer:
    """A whole HTTP answer: status, reason phrase, headers (names lower-cased) and body."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class _Watchdog:
    """Shuts the connection's socket down at the deadline, waking any blocked operation.

    The socket is looked up when the timer fires, so the TLS handshake (which runs on the
    plain socket `connect` made) is covered as well as the request and the body.
    """

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.fired = False
        self._connection = connection
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self._connection.sock
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


def _read_body(response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    """The whole body, or `ResponseTooLarge` as soon as it is known to pass `max_bytes`."""
    announced = response.length
    if announced is not None and announced > max_bytes:
        raise ResponseTooLarge(max_bytes)
    if announced is not None:
        return response.read()
    body = bytearray()
    while True:
        piece = response.read(_READ_PIECE)
        if not piece:
            return bytes(body)
        body += piece
        if len(body) > max_bytes:
            raise ResponseTooLarge(max_bytes)


def post(
    server: urllib.parse.SplitResult,
    target: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
    *,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> Answer:
    """POST `body` to `target` (path and query) on `server`'s host, within `timeout`
    seconds in all (connect, TLS, send, headers, body).

    `server` is a parsed http(s) URL; its userinfo is never sent (a caller puts
    credentials in `headers`). Any status is an `Answer`, a redirect included: it is
    never followed. Raises an `ExchangeFailure`.
    """
    connection_class = (
        http.client.HTTPSConnection if server.scheme == "https" else http.client.HTTPConnection
    )
    deadline = time.monotonic() + timeout
    connection = connection_class(server.hostname or "", server.port, timeout=timeout)
    watchdog = _Watchdog(connection, timeout)
    try:
        try:
            connection.connect()
        except (OSError, http.client.HTTPException) as err:
            # A server that never completes the connection (or its TLS handshake) is
            # unreachable, whichever timer noticed first.
            cause = TimeoutError(f"timed out after {timeout:g} s") if watchdog.fired else err
            raise ConnectFailed(cause) from None
        try:
            connection.request("POST", target, body=body, headers=dict(headers))
            response = connection.getresponse()
            raw = _read_body(response, max_bytes)
        except (OSError, http.client.HTTPException) as err:
            if watchdog.fired or isinstance(err, TimeoutError) or time.monotonic() >= deadline:
                raise DeadlineExceeded(f"no complete answer within {timeout:g} s") from None
            raise ExchangeBroken(err) from None
        if watchdog.fired:
            raise DeadlineExceeded(f"no complete answer within {timeout:g} s")
        answer_headers = {name.lower(): value for name, value in response.getheaders()}
        return Answer(response.status, response.reason, answer_headers, raw)
    finally:
        watchdog.cancel()
        connection.close()


def request_target(url: str) -> str:
    """The path and query of `url` as sent on the request line (`/` for none)."""
    parts = urllib.parse.urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    return target
