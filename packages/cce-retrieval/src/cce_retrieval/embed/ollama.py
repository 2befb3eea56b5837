"""The Ollama embedder: vectors from a local Ollama server's `/api/embed`
(docs/retrieval.md#ollama-embedder).

Why it exists: an index can be built with `--embedder ollama`; its chunk vectors then
live in Ollama's embedding space, so every query against it must be embedded by the
same server. This module speaks the real HTTP protocol with the standard library only
(`http.client`), validates the response as the reference does plus what the reference
lets through (non-finite numbers, ragged dimensions), and reports failures with the
reference's error-string prefixes, keeping the real cause (refused connection, HTTP
status, redirect, garbage body, missing or miscounted embeddings, deadline).

A hostile or broken server cannot hang a command: each request has a total deadline,
enforced by a watchdog that shuts the socket down, not just a per-read timeout, and a
bounded body (`cce_retrieval.embed.exchange`, shared with the OpenAI-compatible client). The base
URL is validated up front (`OllamaConfigError`), and every URL this module prints has its
credentials replaced by `***` (`redact_url`). See docs/hostile-input.md#embedding-servers.

Each input is cut to its first 2000 code points, and a query whose embedding fails
warns on stderr and is ranked without vectors.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.parse
from collections.abc import Mapping, Sequence

from cce_retrieval.embed import exchange
from cce_retrieval.embed.errors import EmbedderUnavailable, has_unsendable_char
from cce_retrieval.embed.hashing import EmbedError, check_vectors

# Re-exported, so whoever uses the embedder imports its failures from the same module.
from cce_retrieval.embed.ollama_errors import OllamaConfigError as OllamaConfigError
from cce_retrieval.embed.ollama_errors import OllamaUnreachable as OllamaUnreachable
from cce_retrieval.embed.ollama_errors import redact_url as redact_url

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
MAX_INPUT_CHARS = 2000
DEFAULT_HEALTH_TIMEOUT_S = 30.0
DEFAULT_REQUEST_TIMEOUT_S = 300.0
MAX_RESPONSE_BYTES = exchange.MAX_RESPONSE_BYTES
"""A response larger than this is refused rather than buffered (64 vectors are ~1 MB)."""


def _split_base_url(base_url: str) -> urllib.parse.SplitResult:
    if not base_url:
        raise OllamaConfigError(
            "CCE_OLLAMA_URL is set but empty; unset it to use "
            f"{DEFAULT_OLLAMA_URL} or set it to the server's http:// URL"
        )
    shown = redact_url(base_url)
    if has_unsendable_char(base_url):
        raise OllamaConfigError(
            f"CCE_OLLAMA_URL is not a valid URL ({shown!r}: it holds a space or a control "
            "character); set it like http://localhost:11434"
        )
    try:
        parts = urllib.parse.urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as err:
        raise OllamaConfigError(
            f"CCE_OLLAMA_URL is not a valid URL ({shown}: {err}); "
            "set it like http://localhost:11434"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OllamaConfigError(
            f"CCE_OLLAMA_URL must be an http:// or https:// URL with a host, got {shown}; "
            "set it like http://localhost:11434"
        )
    return parts


def _as_vector(entry: object) -> list[float]:
    """One `embeddings` entry: numbers kept as floats, anything else dropped (non-array → [])."""
    if not isinstance(entry, list):
        return []
    return [float(x) for x in entry if isinstance(x, int | float) and not isinstance(x, bool)]


class OllamaEmbedder:
    """Embeds through `POST {base_url}/api/embed`; name `"ollama"`.

    The reference sets no timeouts at all (its HTTP client waits forever). This port
    bounds every request instead: `health_timeout` (default 30 s) for the health check and
    `request_timeout` (default 300 s, large enough for a batch of 64 long chunks on a
    slow machine) for everything else. Each is a total deadline for the whole exchange
    (connect, send, headers, body), so a server dripping one byte at a time still ends.
    Redirects are not followed (any non-2xx status is a failure, as in the reference);
    `user:password@` in the base URL is sent as HTTP basic auth and never printed.
    There are no retries and no client-side normalisation.
    """

    name = "ollama"

    def __init__(
        self,
        base_url: str = DEFAULT_OLLAMA_URL,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.health_timeout = health_timeout
        self.request_timeout = request_timeout
        self.dimension: int | None = None
        """The length of the first non-empty vector the server returned (the health
        check's, for a checked embedder): part of the build cache's key."""

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT_S,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
    ) -> OllamaEmbedder:
        """Base URL from `CCE_OLLAMA_URL`, model from `CCE_OLLAMA_MODEL`.

        A variable that is set but empty is used as the empty string, like the reference.
        """
        env = os.environ if environ is None else environ
        return cls(
            env.get("CCE_OLLAMA_URL", DEFAULT_OLLAMA_URL),
            env.get("CCE_OLLAMA_MODEL", DEFAULT_OLLAMA_MODEL),
            health_timeout=health_timeout,
            request_timeout=request_timeout,
        )

    @property
    def endpoint(self) -> str:
        """Plain concatenation, so a trailing `/` in the base URL gives `//api/embed`."""
        return self.base_url + "/api/embed"

    def check_url(self) -> None:
        """Raise `OllamaConfigError` unless the base URL names an http(s) server."""
        _split_base_url(self.base_url)

    @property
    def display_url(self) -> str:
        """The base URL as printed: credentials redacted."""
        return redact_url(self.base_url)

    @property
    def location(self) -> str:
        """Where its vectors come from, as printed (`display_url`)."""
        return self.display_url

    def check(self) -> None:
        """The health check: `OllamaConfigError` for a base URL that names no server,
        else `check_health`'s failure as an `EmbedderUnavailable` at `display_url`."""
        self.check_url()
        try:
            self.check_health()
        except EmbedError as err:
            raise EmbedderUnavailable(self.display_url, err) from None

    def _exchange(self, body: bytes, timeout: float) -> tuple[int, str, str, bytes]:
        """POST `body`; (status, reason, Location header, body), all within `timeout` s."""
        parts = _split_base_url(self.base_url)
        headers = {"Content-Type": "application/json"}
        if parts.username is not None:
            credentials = f"{urllib.parse.unquote(parts.username)}:"
            credentials += urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        target = exchange.request_target(self.endpoint)
        try:
            answer = exchange.post(
                parts, target, body, headers, timeout, max_bytes=MAX_RESPONSE_BYTES
            )
        except exchange.ConnectFailed as err:
            raise OllamaUnreachable(
                f"ollama request failed: cannot connect to {self.display_url}: {err}"
            ) from None
        except exchange.DeadlineExceeded:
            raise EmbedError(
                f"ollama request failed: no complete response within {timeout:g} s"
            ) from None
        except exchange.ResponseTooLarge as err:
            raise EmbedError(f"ollama bad response: {err}") from None
        except exchange.ExchangeFailure as err:
            raise EmbedError(f"ollama request failed: {err}") from None
        return answer.status, answer.reason, answer.header("Location") or "", answer.body

    def _post(self, texts: Sequence[str], timeout: float) -> list[list[float]]:
        inputs = [text[:MAX_INPUT_CHARS] for text in texts]
        body = json.dumps({"input": inputs, "model": self.model}, sort_keys=True)
        status, reason, location, raw = self._exchange(body.encode("utf-8"), timeout)
        if 300 <= status < 400:
            target = f" to {redact_url(location)}" if location else ""
            raise EmbedError(
                f"ollama request failed: HTTP status {status} {reason} "
                f"(redirect{target} not followed; point CCE_OLLAMA_URL at the final address)"
            )
        if not 200 <= status < 300:
            raise EmbedError(f"ollama request failed: HTTP status {status} {reason}")
        try:
            document = json.loads(raw.decode("utf-8"), parse_int=float)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            cause = "nested too deeply" if isinstance(err, RecursionError) else str(err)
            raise EmbedError(f"ollama bad response: {cause}") from None
        entries = document.get("embeddings") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise EmbedError("ollama response missing .embeddings")
        if len(entries) != len(inputs):
            raise EmbedError(
                f"ollama returned {len(entries)} embedding(s) for {len(inputs)} input(s)"
            )
        vectors = [_as_vector(entry) for entry in entries]
        check_vectors(vectors, inputs, "ollama")
        if self.dimension is None:
            self.dimension = next((len(vector) for vector in vectors if vector), None)
        return vectors

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """One request for all of `texts` (the caller batches by 64); raises `EmbedError`.

        Empty strings are sent as `""` and may come back as empty vectors. An empty list
        needs no request and returns `[]`.
        """
        if not texts:
            return []
        return self._post(texts, self.request_timeout)

    def try_embed(self, text: str) -> list[float]:
        """One text; the empty text is `[]` without any request."""
        if not text:
            return []
        # `_post` guarantees exactly one vector per input.
        return self.try_embed_batch([text])[0]

    def embed(self, text: str) -> list[float]:
        """Query-time embedding that never raises: on failure warn on stderr, return `[]`."""
        try:
            return self.try_embed(text)
        except EmbedError as err:
            print(f"warning: {err}; vector recall disabled for this query", file=sys.stderr)
            return []

    def check_health(self) -> None:
        """A real one-input request (`["ping"]`) within `health_timeout`; raises `EmbedError`.

        `OllamaUnreachable` when no HTTP exchange happened, `OllamaConfigError` for a base
        URL that names no server, plain `EmbedError` for every other cause.
        """
        self._post(["ping"], self.health_timeout)

    def healthy(self) -> bool:
        """`check_health` as a boolean."""
        try:
            self.check_health()
        except EmbedError:
            return False
        return True
