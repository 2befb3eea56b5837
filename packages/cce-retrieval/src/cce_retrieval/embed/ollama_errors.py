"""The Ollama embedder's failures and URL redaction, apart from its HTTP client.

Why it exists: every command that can embed names these (to catch a misconfigured or
unreachable server, and to print a base URL without its credentials), but only a run
that really talks to Ollama needs `cce_retrieval.embed.ollama`, whose `http.client`, `email`
and `ssl` cost every other start about 50 ms. `cce_retrieval.embed.ollama` re-exports
what is defined here; both failures are the shared kinds of `cce_retrieval.embed.errors`.
"""

from __future__ import annotations

from cce_retrieval.embed.errors import EmbedderMisconfigured, EmbedderUnreachable
from cce_retrieval.embed.errors import redact_url as redact_url


class OllamaConfigError(EmbedderMisconfigured):
    """`CCE_OLLAMA_URL` cannot name a server (empty, unparsable, not http/https)."""


class OllamaUnreachable(EmbedderUnreachable):
    """No HTTP exchange happened: the connection was refused, failed or timed out."""
