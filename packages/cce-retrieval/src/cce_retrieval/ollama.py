"""The Ollama embedder: vectors from a local Ollama server's `/api/embed` (retrieval spec §4.5).

Why it exists: an index can be built with `--embedder ollama`; its chunk vectors then
live in Ollama's embedding space, so every query against it must be embedded by the
same server. This module speaks the real HTTP protocol with the standard library only
(`urllib`), validates the response exactly as the reference does, and reports failures
with the reference's error-string prefixes.

Owns: `OllamaEmbedder` (the `Embedder` protocol: `name`, `embed`, `try_embed`,
`try_embed_batch`, plus `healthy`), `from_env`, the 2000-code-point input truncation and
the query-time warning line.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import IO

from cce_retrieval.embedder import EmbedError

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
MAX_INPUT_CHARS = 2000
DEFAULT_HEALTH_TIMEOUT_S = 30.0
DEFAULT_REQUEST_TIMEOUT_S = 300.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Make every 3xx an error: the reference treats any non-2xx status as a failure."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


# No proxy handler: Ollama is a local service, and an `http_proxy` variable must not
# reroute (or break) requests to it.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def _as_vector(entry: object) -> list[float]:
    """One `embeddings` entry: numbers kept as floats, anything else dropped (non-array → [])."""
    if not isinstance(entry, list):
        return []
    return [float(x) for x in entry if isinstance(x, int | float) and not isinstance(x, bool)]


class OllamaEmbedder:
    """Embeds through `POST {base_url}/api/embed`; name `"ollama"`.

    The reference sets no timeouts at all (its HTTP client waits forever). This port
    bounds every request instead: `health_timeout` (default 30 s) for `healthy()` and
    `request_timeout` (default 300 s, large enough for a batch of 64 long chunks on a
    slow machine) for everything else. Each applies to the connection and to every
    socket read. There are no retries and no client-side normalisation.
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

    def _post(self, texts: Sequence[str], timeout: float) -> list[list[float]]:
        inputs = [text[:MAX_INPUT_CHARS] for text in texts]
        body = json.dumps({"input": inputs, "model": self.model}, sort_keys=True)
        request = urllib.request.Request(
            self.endpoint,
            data=body.encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                status = response.status
                raw = response.read()
        except urllib.error.HTTPError as err:
            raise EmbedError(f"ollama request failed: HTTP status {err.code} {err.reason}") from err
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
            raise EmbedError(f"ollama request failed: {err}") from err
        if not 200 <= status < 300:
            raise EmbedError(f"ollama request failed: HTTP status {status}")
        try:
            document = json.loads(raw.decode("utf-8"), parse_int=float)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise EmbedError(f"ollama bad response: {err}") from err
        entries = document.get("embeddings") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise EmbedError("ollama response missing .embeddings")
        if len(entries) != len(inputs):
            raise EmbedError(
                f"ollama returned {len(entries)} embedding(s) for {len(inputs)} input(s)"
            )
        vectors = [_as_vector(entry) for entry in entries]
        for text, vector in zip(inputs, vectors, strict=True):
            if not vector and text:
                raise EmbedError("ollama returned an empty embedding for a non-empty input")
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

    def healthy(self) -> bool:
        """A real one-input request (`["ping"]`); healthy iff it succeeds."""
        try:
            self._post(["ping"], self.health_timeout)
        except EmbedError:
            return False
        return True
