"""The failures every embedder shares, and URL redaction for the messages that name a server.

Why it exists: a command decides what to say from the kind of failure, never from which
embedder failed. A setting that cannot work (`EmbedderMisconfigured`) is reported as
such before anything is asked; a server that never answered (`EmbedderUnreachable`) is
"unreachable", while one that answered wrongly keeps its own message; and a health check
that fails raises one `EmbedderUnavailable(where, cause)`. This module is free of
`http.client` and `ssl`, so naming these costs a command nothing; the Ollama names in
`cce_retrieval.embed.ollama_errors` are subclasses kept for their callers.
"""

from __future__ import annotations

from cce_retrieval.embed.hashing import EmbedError


class EmbedderMisconfigured(EmbedError):
    """A setting names no usable server or model (an empty or non-http(s) URL, a missing
    optional package); `str()` says which setting and how to fix it."""


class EmbedderModelMissing(EmbedderMisconfigured):
    """An embedder that has no default model was given none. `embedder` names it and
    `model_env` the variable that would name one; `str()` says how a command-line user
    names it (`--model`), which a caller with another way (a configuration key) replaces."""

    def __init__(self, message: str, embedder: str, model_env: str) -> None:
        super().__init__(message)
        self.embedder = embedder
        self.model_env = model_env


class EmbedderUnreachable(EmbedError):
    """No exchange with the server happened: the connection was refused, failed or timed out."""


class EmbedderUnavailable(EmbedError):
    """The health check of an embedder failed.

    `where` is what was checked, as it may be printed (a base URL with its credentials
    redacted, a model path); `cause` is the failure, whose message is kept.
    """

    def __init__(self, where: str, cause: EmbedError) -> None:
        super().__init__(str(cause))
        self.where = where
        self.cause = cause

    @property
    def unreachable(self) -> bool:
        """True when nothing answered at all (the reference's "unreachable")."""
        return isinstance(self.cause, EmbedderUnreachable)


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


def has_unsendable_char(url: str) -> bool:
    """Whether `url` holds a space or a control character, which `http.client` refuses
    to send (`InvalidURL`) only when the first request is made."""
    return any(char <= " " or char == "\x7f" for char in url)
