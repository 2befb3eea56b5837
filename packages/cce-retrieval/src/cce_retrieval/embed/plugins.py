"""Embedders from installed packages: the `cce.embedders` entry points.

Why it exists: a team measures its own embedding model by installing it as a plugin,
the way `cce.backends` adds a retriever, with no change to cce. An entry point names an
`EmbedderSpec` (its name is replaced by the entry point's) or a bare factory
`factory(model, environ)`. A plugin that fails to load must not take the registry down:
it is listed, and choosing it is an `EmbedderMisconfigured` naming the plugin and why.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import metadata

import attrs

from cce_retrieval.embed.errors import EmbedderMisconfigured
from cce_retrieval.embed.hashing import Embedder
from cce_retrieval.embed.registry import EmbedderSpec

EMBEDDER_ENTRY_POINT_GROUP = "cce.embedders"


def plugin_embedder_spec(entry: metadata.EntryPoint) -> EmbedderSpec:
    """The `EmbedderSpec` of one entry point, named by the entry point."""
    name = entry.name
    try:
        target = entry.load()
    except Exception as err:  # a broken plugin must not take the registry down
        cause = f"embedder plugin {name!r} ({entry.value}) failed to load: {err}"

        def broken(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
            raise EmbedderMisconfigured(cause)

        return EmbedderSpec(name, f"plugin {entry.value} (fails to load)", broken)
    if isinstance(target, EmbedderSpec):
        return attrs.evolve(target, name=name)
    if callable(target):
        lines = (getattr(target, "__doc__", None) or "").strip().splitlines()
        return EmbedderSpec(name, lines[0] if lines else f"plugin {entry.value}", target)

    def not_a_factory(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
        raise EmbedderMisconfigured(
            f"embedder plugin {name!r} ({entry.value}) is neither an EmbedderSpec nor a factory"
        )

    return EmbedderSpec(name, f"plugin {entry.value} (not an embedder)", not_a_factory)


def embedder_entry_points() -> Iterator[metadata.EntryPoint]:
    yield from sorted(metadata.entry_points(group=EMBEDDER_ENTRY_POINT_GROUP), key=lambda e: e.name)
