"""The Ollama embedder's failures and URL redaction, apart from its HTTP client.

Why it exists: every command that can embed names these (to catch a misconfigured or
unreachable server, and to print a base URL without its credentials), but only a run
that really talks to Ollama needs `cce_retrieval.embed.ollama`, whose `http.client`, `email`
and `ssl` cost every other start about 50 ms. `cce_retrieval.embed.ollama` re-exports
what is defined here.
"""

from __future__ import annotations

from cce_retrieval.embed.hashing import EmbedError


class OllamaConfigError(EmbedError):
    """`CCE_OLLAMA_URL` cannot name a server (empty, unparsable, not http/https)."""


class OllamaUnreachable(EmbedError):
    """No HTTP exchange happened: the connection was refused, failed or timed out."""


def redact_url(url: str) -> str:
    """`url` with any `user:password@` replaced by `***@`, for every message that prints it.

    Works on text that does not parse as a URL too (the userinfo is found by its `@`).
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    at = rest.rfind("@", 0, authority_end)
    if at < 0:
        return url
    return f"{scheme}://***@{rest[at + 1 :]}"
