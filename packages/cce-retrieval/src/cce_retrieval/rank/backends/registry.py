"""The backend registry: every retriever `cce relevance` can score, by name.

Why it exists: names in help and error messages come from the registry; the built-ins
are its first entries and installed plugins are appended on first lookup, so a command
loops over the registry instead of naming backends.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from cce_retrieval.model import Index, SearchResult
from cce_retrieval.rank.backends.builtin import BUILTIN_BACKENDS
from cce_retrieval.rank.backends.code import CODE_BACKENDS
from cce_retrieval.rank.backends.grep import GREP_BACKEND
from cce_retrieval.rank.backends.plugins import (
    PluginBackend,
    backend_caller,
    entry_points,
    plugin_spec,
)
from cce_retrieval.rank.backends.spec import Backend, BackendConfigError, BackendSpec, Query


@attrs.frozen(slots=True)
class Renamed:
    """A backend reported under another name (a named configuration of a registered one)."""

    name: str
    inner: Backend

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        return self.inner.search(index, query, k)


BACKENDS: dict[str, BackendSpec] = {spec.name: spec for spec in (*BUILTIN_BACKENDS, *CODE_BACKENDS)}
"""Registered backends in listing order; plugins are appended on first lookup."""

# Built in but opt-in: the no-index baseline runs only when named (docs/backends.md#grep).
BACKENDS[GREP_BACKEND.name] = GREP_BACKEND


_plugins_loaded = False


def register_backend(spec: BackendSpec, replace: bool = False) -> None:
    """Add `spec` to the registry; BackendConfigError when the name is taken."""
    if spec.name in BACKENDS and not replace:
        raise BackendConfigError(f"backend {spec.name!r} is already registered")
    BACKENDS[spec.name] = spec


def load_plugins(force: bool = False) -> None:
    """Register every installed `cce.backends` entry point once (names already taken win)."""
    global _plugins_loaded
    if _plugins_loaded and not force:
        return
    _plugins_loaded = True
    for entry in entry_points():
        if entry.name not in BACKENDS:
            BACKENDS[entry.name] = plugin_spec(entry)


def backend_names() -> tuple[str, ...]:
    """Every registered backend name: the built-ins first, then plugins by name."""
    load_plugins()
    return tuple(BACKENDS)


def backend_spec(name: str) -> BackendSpec:
    """The registered spec of `name`; BackendConfigError listing the valid names."""
    load_plugins()
    spec = BACKENDS.get(name)
    if spec is None:
        raise BackendConfigError(f"unknown backend {name!r}; expected one of {', '.join(BACKENDS)}")
    return spec


def create_backend(
    name: str, params: Mapping[str, object] | None = None, *, as_name: str | None = None
) -> Backend:
    """A ready backend: `name`'s factory given its defaults overlaid with `params`.

    `as_name` reports it under another name (a named configuration).
    """
    spec = backend_spec(name)
    resolved = spec.resolve(params)
    backend: Backend
    if spec.adapt:  # plugin code: run guarded, whatever it does
        caller = backend_caller(spec.name, spec.entry_point)
        made = caller.call("the factory", spec.factory, resolved)
        backend = PluginBackend(spec.name, made, spec.entry_point)
    else:
        made = spec.factory(resolved)
        if not isinstance(made, Backend):
            raise BackendConfigError(f"backend {name!r}: its factory returned no backend")
        backend = made
    if as_name is not None and as_name != backend.name:
        return Renamed(as_name, backend)
    return backend
