"""What an embedder is to the registry: its spec, its factory and its health check.

Why it exists: the registry (`cce_retrieval.embed.registry`) holds the specs and loads the
plugins' (`cce_retrieval.embed.plugins`), and a plugin's spec is built from the same types;
keeping the types below both lets each import them without importing the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

import attrs

from cce_retrieval.embed.hashing import Embedder

__all__ = ["CheckedEmbedder", "EmbedderFactory", "EmbedderSpec"]

EmbedderFactory = Callable[[str | None, Mapping[str, str] | None], Embedder]
"""`factory(model, environ)`: `model` None means the embedder's own default."""


@runtime_checkable
class CheckedEmbedder(Protocol):
    """An embedder that can fail before it embeds anything (a server, a model to load),
    and so has a health check and a place to name in messages."""

    @property
    def location(self) -> str:
        """Where its vectors come from, as it may be printed: a server's base URL with
        its credentials redacted, or a model's name or path."""
        ...

    def check(self) -> None:
        """Raise `EmbedderMisconfigured` for a setting that cannot work, and
        `EmbedderUnavailable(where, cause)` when the embedder cannot embed now."""
        ...


@attrs.frozen(slots=True)
class EmbedderSpec:
    """One registered embedder."""

    name: str
    help: str
    factory: EmbedderFactory
    fixed_dim: int | None = None
    """The length of every vector when it does not depend on a model (hash: 256)."""
    remote: bool = False
    """Whether it talks to a server (health-checked before use, refused when down)."""
    model_env: str | None = None
    """The environment variable that names its model, if any."""
    unit_vectors: bool = False
    """Whether its vectors are unit length (or empty) by construction and are used as
    they are (hash, whose bytes are the reference's). Every other embedder's vectors are
    scaled to length 1 when a store is built and when a query is ranked."""
    server: str = attrs.field(
        default=attrs.Factory(lambda self: f"the {self.name} server", takes_self=True)
    )
    """How messages name what must be running for it to embed ("Ollama")."""
    remedy: str = attrs.field(
        default=attrs.Factory(lambda self: f"start {self.server}", takes_self=True)
    )
    """What a user does when it is unreachable, as a lower-case imperative."""

    @property
    def health_check(self) -> str:
        """Its health check as messages name it: "the Ollama health check", "the
        openai server's health check"."""
        if self.server.startswith("the "):
            return f"{self.server}'s health check"
        return f"the {self.server} health check"
