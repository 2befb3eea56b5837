"""What a backend is: the query it takes, the protocol it meets, and the typed parameters
and factory it is registered with.

Why it exists: a ranking change is measured by expressing it as a backend and comparing
it with another, so a backend is a name, a help text, typed parameters whose defaults are
the reference constants, and a factory; these types say so once for the built-ins and
for plugins (docs/backends.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from cce_retrieval.model import Index, SearchResult
from cce_retrieval.rank.hybrid import QueryEmbedder, vectorless_query

ParamValue = bool | int | float | str


class BackendConfigError(ValueError):
    """A backend name or parameter that cannot be used; `str()` names the key and choices."""


@attrs.frozen(slots=True)
class Query:
    """One search to run: the text plus its query vector, embedded at most once.

    `case_id` names the labelled case the query comes from, when there is one: backends
    that replay recorded results (external runs) look their results up by it.
    `corpus_root` is where the corpus lives on disk, when known.
    """

    text: str
    _embedder: QueryEmbedder
    case_id: str | None = attrs.field(default=None, kw_only=True)
    corpus_root: str | None = attrs.field(default=None, kw_only=True)
    """The absolute directory the index was built from (or a store's recorded root),
    when known: a plugin that reads files or runs its own index over them needs it."""
    _vector: list[Sequence[float]] = attrs.field(factory=list, init=False, eq=False)

    def vector(self) -> Sequence[float]:
        """The query embedding; computed on first use, then shared by every backend."""
        if not self._vector:
            self._vector.append(self._embedder.embed(self.text))
        return self._vector[0]

    def has_no_vector(self, index: Index) -> bool:
        """Whether the query was embedded (by a backend that ranks by vectors) and has no
        vector against `index` (`vectorless_query`: zeros or a failed embedding), so
        the vector signal gave it nothing; False when nothing embedded it. Never embeds:
        a caller may ask after every backend, a BM25-only run included."""
        return bool(self._vector) and vectorless_query(index, self._vector[0])


@runtime_checkable
class Backend(Protocol):
    """A retriever: the `k` best results of `query` over `index`, best first."""

    @property
    def name(self) -> str:
        """The name the backend was created under (registry name or configured name)."""
        ...

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        """At most `k` results, best first, ranks 1..n; never mutates `index`."""
        ...


def toml_value(value: object) -> str:
    """`value` spelled as in a `cce.toml` (`true`, `0.4`, `"text"`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _kind_name(kind: type) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(
        kind, kind.__name__
    )


@attrs.frozen(slots=True)
class Param:
    """One typed backend parameter; `default` is the reference value."""

    name: str
    kind: type
    default: ParamValue
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[ParamValue, ...] | None = None
    help: str = ""
    above_minimum: bool = False
    """The minimum itself is refused: the value must be greater (RRF's offset, which a
    0-based rank of 0 would otherwise divide by)."""

    @staticmethod
    def spell(value: object) -> str:
        """A parameter value spelled as in a `cce.toml` (`true`, `0.4`, `"text"`)."""
        return toml_value(value)

    def describe(self) -> str:
        """`name (kind, default D, range)` for listings and error messages."""
        bounds = ""
        if self.choices is not None:
            bounds = ", one of " + ", ".join(toml_value(c) for c in self.choices)
        elif self.minimum is not None or self.maximum is not None:
            low = "-inf" if self.minimum is None else f"{self.minimum:g}"
            high = "inf" if self.maximum is None else f"{self.maximum:g}"
            bounds = f", in {'(' if self.above_minimum else '['}{low}, {high}]"
        return f"{self.name} ({self.kind.__name__}, default {toml_value(self.default)}{bounds})"

    def coerce(self, value: object) -> ParamValue:
        """`value` as this parameter's kind; BackendConfigError when it cannot be one."""
        if self.kind is bool:
            if not isinstance(value, bool):
                raise BackendConfigError(f"`{self.name}` must be {_kind_name(bool)}")
            result: ParamValue = value
        elif self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise BackendConfigError(f"`{self.name}` must be {_kind_name(int)}")
            result = value
        elif self.kind is float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise BackendConfigError(f"`{self.name}` must be {_kind_name(float)}")
            result = float(value)
            if not math.isfinite(result):
                raise BackendConfigError(f"`{self.name}` must be a finite number")
        elif self.kind is str:
            if not isinstance(value, str):
                raise BackendConfigError(f"`{self.name}` must be {_kind_name(str)}")
            result = value
        else:  # pragma: no cover - the registry only declares the four kinds above
            raise BackendConfigError(f"`{self.name}` has an unsupported kind {self.kind!r}")
        if self.choices is not None and result not in self.choices:
            valid = ", ".join(repr(c) for c in self.choices)
            raise BackendConfigError(f"`{self.name}` must be one of {valid}, not {result!r}")
        if isinstance(result, int | float) and not isinstance(result, bool):
            if self.minimum is not None and self.above_minimum and result <= self.minimum:
                raise BackendConfigError(
                    f"`{self.name}` must be greater than {self.minimum:g}, not {result!r}"
                )
            if self.minimum is not None and result < self.minimum:
                raise BackendConfigError(
                    f"`{self.name}` must be at least {self.minimum:g}, not {result!r}"
                )
            if self.maximum is not None and result > self.maximum:
                raise BackendConfigError(
                    f"`{self.name}` must be at most {self.maximum:g}, not {result!r}"
                )
        return result


BackendFactory = Callable[[Mapping[str, ParamValue]], object]
"""Receives every parameter and returns a `Backend` (or, for a plugin, any object whose
`search(index, query, k)` returns objects or mappings with the result fields)."""


@attrs.frozen(slots=True)
class BackendSpec:
    """A registered backend: name, one-line help, typed parameters and a factory.

    `factory` receives every parameter (defaults filled in, values validated). A spec
    with `open_params` passes keys it does not declare through unchecked (plugins that
    register a bare factory have no declared parameters).
    """

    name: str
    help: str
    params: tuple[Param, ...]
    factory: BackendFactory
    open_params: bool = False
    adapt: bool = False
    """Wrap what the factory returns so its results become `SearchResult`s (plugins):
    the factory and `search()` then run guarded, and their results are checked."""
    entry_point: str = ""
    """The `module:attr` of the plugin's entry point, which its error messages name."""

    def param(self, key: str) -> Param | None:
        return next((p for p in self.params if p.name == key), None)

    def defaults(self) -> dict[str, ParamValue]:
        return {p.name: p.default for p in self.params}

    def resolve(self, given: Mapping[str, object] | None) -> dict[str, ParamValue]:
        """Defaults overlaid with `given`, each value checked; raises BackendConfigError."""
        values = self.defaults()
        for key, value in (given or {}).items():
            param = self.param(key)
            if param is None:
                if self.open_params and isinstance(value, bool | int | float | str):
                    values[key] = value
                    continue
                valid = ", ".join(p.name for p in self.params) or "none"
                raise BackendConfigError(
                    f"unknown parameter `{key}` for backend {self.name!r}; valid keys: {valid}"
                )
            values[key] = param.coerce(value)
        return values

    def non_default(self, given: Mapping[str, object] | None) -> dict[str, ParamValue]:
        """The resolved parameters that differ from their defaults, sorted by key."""
        resolved = self.resolve(given)
        defaults = self.defaults()
        return {
            key: resolved[key]
            for key in sorted(resolved)
            if key not in defaults or resolved[key] != defaults[key]
        }
