"""Backends from installed packages: the `cce.backends` entry points, and their results
checked into `SearchResult`s.

Why it exists: a team measures its own retriever by installing it as a plugin
(docs/backends.md#plugins). A plugin that fails to load must not take the registry down,
and what it returns is checked field by field before anything scores it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import metadata

import attrs

from cce_retrieval.model import Index, SearchResult
from cce_retrieval.rank.backends.spec import BackendConfigError, BackendSpec, ParamValue, Query

ENTRY_POINT_GROUP = "cce.backends"


class PluginBackend:
    """Wraps a plugin's object so its results become numbered `SearchResult`s."""

    def __init__(self, name: str, inner: object) -> None:
        self.name = name
        self._inner = inner

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        search = getattr(self._inner, "search", None)
        if not callable(search):
            raise BackendConfigError(f"backend {self.name!r} has no search(index, query, k)")
        raw = search(index, query, k)
        return [_as_result(self.name, item, rank) for rank, item in enumerate(raw, 1)][:k]


def _field(item: object, key: str, default: object = None) -> object:
    if isinstance(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def _as_result(backend: str, item: object, rank: int) -> SearchResult:
    """One plugin result as a `SearchResult`; a missing required field is an error."""
    values: dict[str, object] = {}
    for key in ("file_path", "start_line", "end_line", "score"):
        value = _field(item, key)
        if value is None:
            raise BackendConfigError(f"backend {backend!r}: result {rank} has no `{key}`")
        values[key] = value
    file_path, start, end, score = (
        values["file_path"],
        values["start_line"],
        values["end_line"],
        values["score"],
    )
    if not isinstance(file_path, str):
        raise BackendConfigError(f"backend {backend!r}: result {rank} `file_path` is not a string")
    if type(start) is not int or type(end) is not int:
        raise BackendConfigError(f"backend {backend!r}: result {rank} lines are not integers")
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise BackendConfigError(f"backend {backend!r}: result {rank} `score` is not a number")
    kind = _field(item, "kind", "")
    return SearchResult(
        rank=rank,
        chunk_id=str(_field(item, "chunk_id", "") or ""),
        file_path=file_path,
        start_line=start,
        end_line=end,
        chunk_type=str(_field(item, "chunk_type", kind) or ""),
        kind=str(kind or ""),
        score=float(score),
        content=str(_field(item, "content", "") or ""),
    )


def plugin_spec(entry: metadata.EntryPoint) -> BackendSpec:
    """A `BackendSpec` for one entry point: its own spec (typed parameters), or a bare
    factory wrapped with open parameters. Loading errors surface when it is used."""
    name = entry.name

    def load() -> object:
        try:
            return entry.load()
        except Exception as err:  # a broken plugin must not take the registry down
            raise BackendConfigError(
                f"backend plugin {name!r} ({entry.value}) failed to load: {err}"
            ) from err

    def factory(values: Mapping[str, ParamValue]) -> object:
        target = load()
        if isinstance(target, BackendSpec):
            return target.factory(values)
        if callable(target):
            return target(dict(values))
        raise BackendConfigError(f"backend plugin {name!r} is neither a factory nor a spec")

    try:
        target = entry.load()
    except Exception:
        return BackendSpec(name, f"plugin {entry.value} (fails to load)", (), factory, True, True)
    if isinstance(target, BackendSpec):
        return attrs.evolve(target, name=name, factory=factory, adapt=True)
    lines = (getattr(target, "__doc__", None) or "").strip().splitlines()
    help_text = lines[0] if lines else f"plugin {entry.value}"
    return BackendSpec(name, help_text, (), factory, open_params=True, adapt=True)


def entry_points() -> Iterator[metadata.EntryPoint]:
    yield from sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
