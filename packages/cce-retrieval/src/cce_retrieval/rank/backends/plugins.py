"""Backends from installed packages: the `cce.backends` entry points, run through a
guard, and their results checked into `SearchResult`s.

Why it exists: a team measures its own retriever by installing it as a plugin
(docs/backends.md#plugins). A plugin that fails to load must not take the registry down;
whatever its factory or `search()` does (raise, exit, recurse, return junk) is one error
naming the plugin and its entry point (`cce_retrieval.plugin_calls`); and what it
returns is cut to `k` first and then checked field by field before anything scores it
(docs/hostile-input.md#plugins).
"""

from __future__ import annotations

import math
import numbers
import operator
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata

import attrs

from cce_retrieval.model import Index, SearchResult
from cce_retrieval.plugin_calls import PluginCaller, PluginError, close_generator, one_line
from cce_retrieval.rank.backends.spec import BackendConfigError, BackendSpec, ParamValue, Query

ENTRY_POINT_GROUP = "cce.backends"

LINE_LIMIT = 2**63
"""Result line numbers must be below this (what a signed 64-bit integer holds)."""


class BackendPluginError(PluginError, BackendConfigError):
    """A backend plugin failed to load, failed while it ran, or returned results that
    break the protocol; `str()` names the plugin, its entry point and what happened."""


def backend_caller(name: str, entry_point: str) -> PluginCaller:
    """The guard every call into the backend plugin `name` goes through."""
    return PluginCaller.of("backend", name, entry_point, BackendPluginError)


def _kind_of(value: object) -> str:
    """`None`, `an int`, `a str`: what a plugin returned, for a message."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


class PluginBackend:
    """Wraps a plugin's object so its results become numbered `SearchResult`s.

    At most `k` items of what `search()` returns are read (a generator is never advanced
    past its `k`-th item, and is closed after), and only those are checked.
    """

    def __init__(self, name: str, inner: object, entry_point: str = "") -> None:
        self.name = name
        self._caller = backend_caller(name, entry_point)
        search = self._caller.call("the factory's backend", _search_method, inner)
        if search is None:
            raise self._caller.error(
                f"the factory returned {_kind_of(inner)}, which has no search(index, query, k)"
            )
        self._search = search

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        return self._caller.call("search()", self._ranked, index, query, k)

    def _ranked(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        raw = self._search(index, query, k)
        if raw is None or isinstance(raw, str | bytes | bytearray | Mapping):
            raise self._caller.error(f"search() returned {_kind_of(raw)}, not a list of results")
        if not isinstance(raw, Iterable):
            raise self._caller.error(f"search() returned {_kind_of(raw)}, not a list of results")
        items = _first(raw, max(k, 0))
        asked = _describe_query(query)
        return [_as_result(self._caller, asked, item, rank) for rank, item in enumerate(items, 1)]


def _search_method(inner: object) -> Callable[[Index, Query, int], object] | None:
    search = getattr(inner, "search", None)
    return search if callable(search) else None


def _first(raw: Iterable[object], k: int) -> list[object]:
    """The first `k` items of `raw`, in order, reading no more than `k`; a generator is
    closed after (its `finally` runs now, under the guard, not whenever it is collected)."""
    if isinstance(raw, list | tuple):
        return list(raw[:k])
    iterator: Iterator[object] = iter(raw)
    kept: list[object] = []
    while len(kept) < k:
        try:
            kept.append(next(iterator))
        except StopIteration:
            break
    if isinstance(iterator, types.GeneratorType):
        close_generator(iterator)
    return kept


def _describe_query(query: Query) -> str:
    if query.case_id is not None:
        return f"case {one_line(repr(query.case_id), 80)}"
    return f"query {one_line(repr(query.text), 80)}"


def _field(item: object, key: str, default: object = None) -> object:
    if isinstance(item, Mapping):
        return item.get(key, default)
    return getattr(item, key, default)


def _plain_str(value: str) -> str:
    """`value` as an exact `str` (a subclass's own methods never run later, outside the guard)."""
    return value if type(value) is str else str.__str__(value)


def _as_result(caller: PluginCaller, asked: str, item: object, rank: int) -> SearchResult:
    """One plugin result as a `SearchResult`; a missing or unusable field is an error
    naming the query and the result's position."""

    def bad(problem: str) -> PluginError:
        return caller.error(f"{asked}: result {rank} {problem}")

    values: dict[str, object] = {}
    for key in ("file_path", "start_line", "end_line", "score"):
        value = _field(item, key)
        if value is None:
            raise bad(f"has no `{key}`")
        values[key] = value
    path_value, start_value, end_value, score_value = (
        values["file_path"],
        values["start_line"],
        values["end_line"],
        values["score"],
    )
    if not isinstance(path_value, str):
        raise bad(f"`file_path` is {_kind_of(path_value)}, not a string")
    file_path = _plain_str(path_value)
    if "\0" in file_path:
        raise bad(f"`file_path` {one_line(repr(file_path), 80)} holds a NUL character")
    start, end = _line(start_value), _line(end_value)
    if start is None or end is None:
        raise bad("lines are not integers")
    for key, line in (("start_line", start), ("end_line", end)):
        if line < 0:
            raise bad(f"`{key}` {line} is negative")
        if line >= LINE_LIMIT:
            raise bad(f"`{key}` {_shown(line)} is not below 2**63")
    if start > end:
        raise bad(f"`start_line` {start} is after `end_line` {end}")
    score = _score(score_value)
    if score is None:
        raise bad(f"`score` is {_kind_of(score_value)}, not a number")
    if not math.isfinite(score):
        raise bad(f"`score` {_shown(score_value)} is not a finite number")
    kind = _field(item, "kind", "")
    return SearchResult(
        rank=rank,
        chunk_id=_plain_str(str(_field(item, "chunk_id", "") or "")),
        file_path=file_path,
        start_line=start,
        end_line=end,
        chunk_type=_plain_str(str(_field(item, "chunk_type", kind) or "")),
        kind=_plain_str(str(kind or "")),
        score=score,
        content=_plain_str(str(_field(item, "content", "") or "")),
    )


def _shown(number: object) -> str:
    """A number for a message: its repr, or its size when it is too long to print (Python
    refuses to spell an integer of more than 4,300 digits)."""
    try:
        return one_line(repr(number), 60)
    except ValueError:  # int's own refusal: say how big it is instead
        size = number.bit_length() if isinstance(number, int) else 0
        return f"(an integer of {size} bits)"


def _line(value: object) -> int | None:
    """An integer line number (any `numbers.Integral` but bool) as an `int`, else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(operator.index(value))


def _score(value: object) -> float | None:
    """A score (any `numbers.Real` but bool) as a float (inf when it overflows one), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:  # an int beyond a double's range
        return math.inf


def plugin_spec(entry: metadata.EntryPoint) -> BackendSpec:
    """A `BackendSpec` for one entry point: its own spec (typed parameters), or a bare
    factory wrapped with open parameters. Loading errors surface when it is used."""
    name = entry.name
    caller = backend_caller(name, entry.value)

    def load() -> object:
        try:
            return caller.call("importing it", entry.load)
        except PluginError as err:  # a broken plugin must not take the registry down
            cause = str(err).removeprefix(f"{caller.prefix}: ")
            raise BackendPluginError(f"{caller.prefix} failed to load: {cause}") from err

    def factory(values: Mapping[str, ParamValue]) -> object:
        target = load()
        if isinstance(target, BackendSpec):
            return caller.call("the factory", target.factory, values)
        if callable(target):
            return caller.call("the factory", target, dict(values))
        raise caller.error("the entry point is neither a factory nor a BackendSpec")

    try:
        return caller.call("importing it", _described_spec, entry, factory)
    except PluginError:
        return BackendSpec(name, f"plugin {entry.value} (fails to load)", (), factory,
                           open_params=True, adapt=True, entry_point=entry.value)  # fmt: skip


def _described_spec(entry: metadata.EntryPoint, factory: Callable[..., object]) -> BackendSpec:
    """The spec listed for a plugin that loads: its own (renamed), or its factory's doc."""
    target = entry.load()
    if isinstance(target, BackendSpec):
        return attrs.evolve(
            target, name=entry.name, factory=factory, adapt=True, entry_point=entry.value
        )
    lines = (getattr(target, "__doc__", None) or "").strip().splitlines()
    help_text = lines[0] if lines else f"plugin {entry.value}"
    return BackendSpec(
        entry.name, help_text, (), factory, open_params=True, adapt=True, entry_point=entry.value
    )


def entry_points() -> Iterator[metadata.EntryPoint]:
    yield from sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
