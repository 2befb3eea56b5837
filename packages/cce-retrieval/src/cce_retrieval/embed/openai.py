"""An OpenAI-compatible embeddings client: `POST {base_url}/v1/embeddings`.

Why it exists: vLLM, llama.cpp's server, Text Embeddings Inference, LM Studio and hosted
APIs all speak this one protocol, so a single client lets `vector` and `hybrid` be
measured with real semantic embeddings. The standard library is enough (`http.client`,
through `cce_retrieval.embed.exchange`), and every failure mode a server has in practice
is handled explicitly:

- the base URL is checked before any request (http or https, a host); a base that
  already ends in `/v1` (the OpenAI SDK's convention) is not doubled into `/v1/v1`;
- batching (`batch_size` inputs per request, results put back in input order by `index`);
- a bounded total time per call (`total_timeout`), each request also bounded, both by
  the clock (a server that drips one byte a second is cut off at the deadline), and a
  bounded answer (`MAX_RESPONSE_BYTES`);
- redirects are never followed (a 3xx is an error naming its target, redacted), so the
  `Authorization` header only ever goes to the configured host;
- only transient failures are retried, with exponential backoff and never past the total
  deadline: a refused or reset connection, a timeout, 408, 429 (honouring a numeric
  `Retry-After`) and 5xx. Anything else (another 4xx, a TLS or name-resolution failure,
  an answer that is not JSON) fails at once, because asking again gets the same answer;
- errors that keep the server's own message (`{"error": {"message": ...}}` or the body),
  so a model that does not exist reads as such rather than as "unreachable", and an HTML
  page (a wrong base URL, a proxy's login page) is named as HTML;
- answers that are not JSON, hold NaN, infinities or values beyond `MAX_VECTOR_VALUE`,
  lack a vector, or change dimension are errors, so a bad answer can never be written
  into a store;
- the API key is read from the environment at request time (`CCE_OPENAI_API_KEY`, else
  `OPENAI_API_KEY`) with surrounding whitespace stripped, sent only as the
  `Authorization` header, and never printed (not even when it cannot be sent), stored
  or kept on the object; `user:password@` in the base URL is sent as basic auth when
  there is no key, and every URL this module prints has it replaced by `***`.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from cce_retrieval.embed import exchange
from cce_retrieval.embed.errors import (
    EmbedderMisconfigured,
    EmbedderUnavailable,
    EmbedderUnreachable,
    has_unsendable_char,
    redact_url,
)
from cce_retrieval.embed.hashing import MAX_VECTOR_VALUE, EmbedError

DEFAULT_OPENAI_URL: Final = "http://localhost:8000"
DEFAULT_OPENAI_MODEL: Final = "text-embedding-3-small"
API_KEY_VARIABLES: Final = ("CCE_OPENAI_API_KEY", "OPENAI_API_KEY")
DEFAULT_BATCH_SIZE: Final = 64
DEFAULT_TOTAL_TIMEOUT_S: Final = 300.0
DEFAULT_REQUEST_TIMEOUT_S: Final = 60.0
DEFAULT_RETRIES: Final = 4
DEFAULT_BACKOFF_S: Final = 0.5
_MAX_MESSAGE: Final = 300

MAX_RESPONSE_BYTES: Final = exchange.MAX_RESPONSE_BYTES
"""An answer larger than this is refused (one whose `Content-Length` says so, unread)."""


def _sendable_key(key: str, variable: str) -> str:
    """`key` when it can be sent in an HTTP header; `EmbedderMisconfigured` otherwise,
    naming the variable and what is wrong, never the key."""
    if any(char < " " or char == "\x7f" for char in key):
        raise EmbedderMisconfigured(
            f"the API key in {variable} holds a control character (a line break or a "
            "tab inside it); set it to the key alone"
        )
    try:
        key.encode("latin-1")
    except UnicodeEncodeError:
        raise EmbedderMisconfigured(
            f"the API key in {variable} holds a character that cannot be sent in an HTTP "
            "header (outside Latin-1); set it to the key alone"
        ) from None
    return key


class _Retryable(Exception):
    """A failure worth another attempt (408, 429, 5xx, connection trouble); `str()` says why.

    `unreachable` when no HTTP exchange happened, so the last one is reported as such.
    """

    def __init__(
        self, message: str, retry_after: float | None = None, *, unreachable: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable


def _is_html(body: bytes) -> bool:
    """Whether an answer is an HTML page (JSON never starts with `<`)."""
    return body.lstrip()[:1] == b"<"


def check_base_url(base_url: str) -> urllib.parse.SplitResult:
    """The parts of `base_url`; EmbedderMisconfigured unless it names an http(s) server."""
    shown = redact_url(base_url)
    advice = f"set CCE_OPENAI_URL like {DEFAULT_OPENAI_URL}"
    if has_unsendable_char(base_url):
        raise EmbedderMisconfigured(
            f"the openai base URL {shown!r} is not a valid URL (it holds a space or a "
            f"control character); {advice}"
        )
    try:
        parts = urllib.parse.urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as err:
        raise EmbedderMisconfigured(
            f"the openai base URL {shown!r} is not a valid URL ({err}); {advice}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EmbedderMisconfigured(
            f"the openai base URL must be an http:// or https:// URL with a host, got "
            f"{shown!r}; {advice}"
        )
    return parts


def _reject_constant(name: str) -> float:
    raise ValueError(f"the answer holds {name}, not a number")


def _server_message(body: bytes) -> str:
    """The server's own error text: `error.message` of a JSON body, else the body."""
    if _is_html(body):
        return "an HTML page, not JSON"
    text = body.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(document.get("message"), str):
            text = document["message"]
    text = " ".join(text.split())
    return text[:_MAX_MESSAGE] + ("..." if len(text) > _MAX_MESSAGE else "")


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


class OpenAIEmbedder:
    """Embeds through an OpenAI-compatible `/v1/embeddings` endpoint; name `"openai"`."""

    name = "openai"

    def __init__(
        self,
        base_url: str = DEFAULT_OPENAI_URL,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        environ: Mapping[str, str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT_S,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.base_url = base_url
        self.model = model
        self.batch_size = batch_size
        self.total_timeout = total_timeout
        self.request_timeout = request_timeout
        self.retries = retries
        self.backoff = backoff
        self._environ = environ
        self._sleep = sleep
        self.dimension: int | None = None
        """The vector length of the first answer; every later answer must match it."""

    def __repr__(self) -> str:  # never shows the key (it is not held anyway)
        return f"OpenAIEmbedder(base_url={self.display_url!r}, model={self.model!r})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAIEmbedder:
        """`CCE_OPENAI_URL` (default http://localhost:8000), `CCE_OPENAI_MODEL`, and
        `CCE_OPENAI_TIMEOUT`: the bound, in seconds, on the total time of one call,
        retries included (default 300). A timeout that is not a positive number is an
        `EmbedderMisconfigured`."""
        env = os.environ if environ is None else environ
        total = DEFAULT_TOTAL_TIMEOUT_S
        raw = env.get("CCE_OPENAI_TIMEOUT")
        if raw is not None:
            try:
                total = float(raw)
            except ValueError:
                total = math.nan
            if not (math.isfinite(total) and total > 0):
                raise EmbedderMisconfigured(
                    f"CCE_OPENAI_TIMEOUT must be a positive number of seconds, got {raw!r}"
                )
        return cls(
            env.get("CCE_OPENAI_URL", DEFAULT_OPENAI_URL),
            env.get("CCE_OPENAI_MODEL", DEFAULT_OPENAI_MODEL),
            environ=environ,
            total_timeout=total,
            request_timeout=min(DEFAULT_REQUEST_TIMEOUT_S, total),
        )

    @property
    def display_url(self) -> str:
        """The base URL as printed: credentials redacted."""
        return redact_url(self.base_url)

    @property
    def endpoint(self) -> str:
        """The embeddings URL as printed (credentials redacted); a base URL ending in
        `/v1` gets `/embeddings`, any other `/v1/embeddings`."""
        return redact_url(self._endpoint(self.base_url))

    @staticmethod
    def _endpoint(base_url: str) -> str:
        base = base_url.rstrip("/")
        return base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")

    @property
    def location(self) -> str:
        """Where its vectors come from, as printed (`display_url`)."""
        return self.display_url

    def check_url(self) -> None:
        """Raise `EmbedderMisconfigured` unless the base URL names an http(s) server."""
        check_base_url(self.base_url)

    def _api_key(self) -> str | None:
        """The key from the environment, surrounding whitespace stripped (a mounted secret
        often ends in a newline); `EmbedderMisconfigured`, never showing the key, for one
        that cannot be sent as a header."""
        env = os.environ if self._environ is None else self._environ
        for variable in API_KEY_VARIABLES:
            key = env.get(variable, "").strip()
            if key:
                return _sendable_key(key, variable)
        return None

    def _request_once(self, inputs: Sequence[str], timeout: float) -> bytes:
        body = json.dumps(
            {"encoding_format": "float", "input": list(inputs), "model": self.model},
            ensure_ascii=False,
        ).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        parts = check_base_url(self.base_url)
        key = self._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif parts.username is not None:
            credentials = f"{urllib.parse.unquote(parts.username)}:"
            credentials += urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        # The request goes to the host of the URL (its userinfo is sent as a header above).
        target = exchange.request_target(self._endpoint(self.base_url))
        failed = f"openai embeddings at {self.endpoint} failed"
        try:
            answer = exchange.post(
                parts, target, body, headers, timeout, max_bytes=MAX_RESPONSE_BYTES
            )
        except exchange.DeadlineExceeded:
            raise _Retryable(f"no complete answer within {timeout:.1f}s") from None
        except exchange.ResponseTooLarge as err:
            raise EmbedError(f"{failed}: the answer is {err}") from None
        except exchange.ConnectFailed as err:
            if isinstance(err.cause, TimeoutError):
                raise _Retryable(f"no answer within {timeout:.1f}s", unreachable=True) from None
            if isinstance(err.cause, ConnectionError):
                raise _Retryable(f"unreachable ({err})", unreachable=True) from None
            # A name that does not resolve, a TLS failure: asking again changes nothing.
            raise EmbedderUnreachable(f"{failed}: unreachable ({err})") from None
        except exchange.ExchangeBroken as err:
            if isinstance(err.cause, ConnectionError):
                raise _Retryable(f"connection failed ({err})", unreachable=True) from None
            raise EmbedError(f"{failed}: connection failed ({err})") from None
        if 200 <= answer.status < 300:
            return answer.body
        message = f"HTTP {answer.status}: {_server_message(answer.body) or answer.reason}"
        if 300 <= answer.status < 400:
            # Never followed: the credentials must not go to another host.
            location = answer.header("Location")
            where = f" to {redact_url(location)}" if location else ""
            raise EmbedError(
                f"{failed}: HTTP {answer.status} {answer.reason} (redirect{where} not "
                "followed; point CCE_OPENAI_URL at the final address)"
            )
        if answer.status in (408, 429) or answer.status >= 500:
            raise _Retryable(message, _retry_after(answer.header("Retry-After")))
        if _is_html(answer.body):
            raise EmbedError(
                f"the server at {self.endpoint} answered with HTML, not JSON "
                f"(HTTP {answer.status}); is the base URL right?"
            )
        raise EmbedError(f"{failed}: {message}")

    def _request(self, inputs: Sequence[str], deadline: float) -> bytes:
        """One batch, retried with backoff on retryable failures until the deadline."""
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EmbedError(
                    f"openai embeddings at {self.endpoint} failed: no answer within the "
                    f"total timeout of {self.total_timeout:g}s"
                )
            try:
                return self._request_once(inputs, min(self.request_timeout, remaining))
            except _Retryable as err:
                attempt += 1
                wait = self.backoff * (2 ** (attempt - 1))
                if err.retry_after is not None:
                    wait = max(wait, err.retry_after)
                if attempt > self.retries or time.monotonic() + wait >= deadline:
                    tries = f"{attempt} attempt{'s' if attempt != 1 else ''}"
                    kind = EmbedderUnreachable if err.unreachable else EmbedError
                    raise kind(
                        f"openai embeddings at {self.endpoint} failed after {tries}: {err}"
                    ) from None
                self._sleep(wait)

    def _parse(self, raw: bytes, count: int) -> list[list[float]]:
        where = f"openai embeddings at {self.endpoint}"
        if _is_html(raw):
            raise EmbedError(
                f"the server at {self.endpoint} answered with HTML, not JSON; "
                "is the base URL right?"
            )
        try:
            document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError) as err:
            raise EmbedError(f"{where} gave a bad answer: {err}") from None
        except RecursionError:
            raise EmbedError(f"{where} gave a bad answer: JSON nested too deeply") from None
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            raise EmbedError(f"{where} gave a bad answer: no `data` array")
        if len(data) != count:
            raise EmbedError(f"{where} returned {len(data)} embedding(s) for {count} input(s)")
        vectors: list[list[float] | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbedError(f"{where} gave a bad answer: `data[{position}]` is not an object")
            slot = item.get("index", position)
            embedding = item.get("embedding")
            if type(slot) is not int or not 0 <= slot < count or vectors[slot] is not None:
                raise EmbedError(f"{where} gave a bad answer: `data[{position}].index` is wrong")
            if not isinstance(embedding, list) or not embedding:
                raise EmbedError(f"{where} gave no embedding for input {slot}")
            vector: list[float] = []
            for value in embedding:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise EmbedError(f"{where} gave a non-number in embedding {slot}")
                number = float(value)
                if not math.isfinite(number):
                    raise EmbedError(f"{where} gave a non-finite value in embedding {slot}")
                if abs(number) > MAX_VECTOR_VALUE:
                    raise EmbedError(
                        f"{where} gave a value of magnitude over {MAX_VECTOR_VALUE:g} in embedding "
                        f"{slot}; its dot products would overflow"
                    )
                vector.append(number)
            if self.dimension is None:
                self.dimension = len(vector)
            elif len(vector) != self.dimension:
                raise EmbedError(
                    f"{where} returned a {len(vector)}-dimensional embedding after "
                    f"{self.dimension}-dimensional ones (model {self.model!r})"
                )
            vectors[slot] = vector
        return [v for v in vectors if v is not None]

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, in batches of `batch_size`; raises EmbedError.

        The total time of the call is bounded by `total_timeout`, retries included.
        """
        deadline = time.monotonic() + self.total_timeout
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            # Servers reject empty strings; a single space embeds "nothing" consistently.
            inputs = [text if text else " " for text in batch]
            vectors.extend(self._parse(self._request(inputs, deadline), len(inputs)))
        return vectors

    def try_embed(self, text: str) -> list[float]:
        return self.try_embed_batch([text])[0]

    def embed(self, text: str) -> list[float]:
        """Query-time embedding that never raises: on failure warn on stderr, return `[]`."""
        try:
            return self.try_embed(text)
        except EmbedError as err:
            print(f"warning: {err}; vector recall disabled for this query", file=sys.stderr)
            return []

    def check(self) -> None:
        """The health check: the base URL, then one small request.

        `EmbedderMisconfigured` for a base URL that names no server; otherwise any
        failure is an `EmbedderUnavailable` keeping the server's message.
        """
        self.check_url()
        self._api_key()  # a key that cannot be sent is a setting to fix, not a server fault
        try:
            self.try_embed_batch(["ping"])
        except EmbedError as err:
            raise EmbedderUnavailable(self.display_url, err) from None
