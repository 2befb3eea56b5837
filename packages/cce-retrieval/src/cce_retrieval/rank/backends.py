"""The backend registry: every retriever `cce relevance` can score, by name, with parameters.

Why it exists: a ranking change is measured by expressing it as a backend and comparing
it with another, so a backend is a registered name, a help text, typed parameters whose
defaults are the reference constants, and a factory. Names in help and error messages
come from the registry; the built-in `bm25`, `vector` and `hybrid` are its first entries
and, with default parameters, rank exactly like the reference. Installed packages add
backends through the `cce.backends` entry-point group (docs/backends.md#plugins).

Owns: `Query`, the `Backend` protocol, `Param`, `BackendSpec`, `BACKENDS`,
`register_backend`, `create_backend`, `backend_names`, `BackendConfigError`, and the
adaptation of a plugin's results into `SearchResult`s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import metadata
from typing import Protocol, runtime_checkable

import attrs

from cce_retrieval.embed.registry import EmbeddingSpaceError, check_query_vector
from cce_retrieval.model import Index, SearchResult
from cce_retrieval.parity.text import rust_trim
from cce_retrieval.rank import hybrid
from cce_retrieval.rank.bm25 import BM25_B, BM25_K1
from cce_retrieval.rank.hybrid import REFERENCE_PARAMS, QueryEmbedder, SearchParams

__all__ = [
    "BACKENDS",
    "ENTRY_POINT_GROUP",
    "Backend",
    "BackendConfigError",
    "BackendSpec",
    "EmbeddingSpaceError",
    "Param",
    "Query",
    "Renamed",
    "backend_names",
    "backend_spec",
    "create_backend",
    "register_backend",
]

ENTRY_POINT_GROUP = "cce.backends"

ParamValue = bool | int | float | str


class BackendConfigError(ValueError):
    """A backend name or parameter that cannot be used; `str()` names the key and choices."""


@attrs.frozen(slots=True)
class Query:
    """One search to run: the text plus its query vector, embedded at most once.

    `case_id` names the labelled case the query comes from, when there is one: backends
    that replay recorded results (external runs) look their results up by it.
    """

    text: str
    _embedder: QueryEmbedder
    case_id: str | None = attrs.field(default=None, kw_only=True)
    _vector: list[Sequence[float]] = attrs.field(factory=list, init=False, eq=False)

    def vector(self) -> Sequence[float]:
        """The query embedding; computed on first use, then shared by every backend."""
        if not self._vector:
            self._vector.append(self._embedder.embed(self.text))
        return self._vector[0]


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
            bounds = f", in [{low}, {high}]"
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
    """Wrap what the factory returns so its results become `SearchResult`s (plugins)."""

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


@attrs.frozen(slots=True)
class Renamed:
    """A backend reported under another name (a named configuration of a registered one)."""

    name: str
    inner: Backend

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        return self.inner.search(index, query, k)


def _blank(index: Index, query: Query) -> bool:
    """A blank query or an empty index returns no results on every built-in backend."""
    return not rust_trim(query.text) or not index.chunks


def check_embedding_space(index: Index, embedder: str, model: str) -> None:
    """Refuse to query `index` with an embedder or model other than the one it records.

    An empty `embedder`/`model` means "whatever the index was built with".
    """
    recorded = index.embedder
    if embedder and embedder != recorded:
        raise EmbeddingSpaceError(
            f"the index was built with the {recorded!r} embedder but the backend asks for "
            f"{embedder!r}; re-index with {embedder!r} or drop the backend's `embedder`"
        )
    recorded_model = index.embedder_model or ""
    if model and model != recorded_model:
        raise EmbeddingSpaceError(
            f"the index was built with model {recorded_model!r} but the backend asks for "
            f"{model!r}; re-index with that model or drop the backend's `model`"
        )


@attrs.frozen(slots=True)
class Bm25Backend:
    """BM25 alone (raw sums as scores, no penalty, cap or graph)."""

    name: str = "bm25"
    k1: float = BM25_K1
    b: float = BM25_B

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        return hybrid.bm25_only_search(index, query.text, k, self.k1, self.b)


@attrs.frozen(slots=True)
class VectorBackend:
    """All chunks by rounded cosine with the query vector; score = cosine."""

    name: str = "vector"
    embedder: str = ""
    model: str = ""

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        check_embedding_space(index, self.embedder, self.model)
        vector = query.vector()
        check_query_vector(index, vector)
        return hybrid.vector_search(index, vector, k)


@attrs.frozen(slots=True)
class HybridBackend:
    """The `cce search` pipeline with graph expansion, cut back to `k`."""

    name: str = "hybrid"
    params: SearchParams = REFERENCE_PARAMS
    embedder: str = ""
    model: str = ""

    def search(self, index: Index, query: Query, k: int) -> list[SearchResult]:
        if _blank(index, query):
            return []
        check_embedding_space(index, self.embedder, self.model)
        # Expansion may append chunks after the top k, so the list is cut back to k.
        return hybrid.search_with_vector(index, query.vector(), query.text, k, True, self.params)[
            :k
        ]


_EMBEDDER_PARAMS = (
    Param("embedder", str, "", help="embedder the index must be built with ('' = as recorded)"),
    Param("model", str, "", help="embedding model the index must be built with ('' = as recorded)"),
)
_BM25_PARAMS = (
    Param("k1", float, BM25_K1, 0.0, None, help="BM25 term-frequency saturation"),
    Param("b", float, BM25_B, 0.0, 1.0, help="BM25 length normalisation"),
)
_R = REFERENCE_PARAMS
_HYBRID_PARAMS = (
    *_BM25_PARAMS,
    Param("rrf_k", float, _R.rrf_k, 0.0, None, help="RRF rank offset"),
    Param("rrf_vector_weight", float, 1.0, 0.0, None, help="RRF weight of the vector rank"),
    Param("rrf_keyword_weight", float, 1.0, 0.0, None, help="RRF weight of the BM25 rank"),
    Param(
        "code_lookup_boost",
        float,
        _R.code_lookup_boost,
        0.0,
        None,
        help="extra BM25 weight for code-lookup queries",
    ),
    Param(
        "candidate_multiplier",
        int,
        _R.candidate_multiplier,
        1,
        None,
        help="candidates per signal = k * this",
    ),
    Param(
        "confidence_weight",
        float,
        _R.confidence_weight,
        0.0,
        1.0,
        help="share of confidence (vs normalised RRF) in the final score",
    ),
    Param(
        "confidence_vector_weight",
        float,
        _R.confidence_vector_weight,
        0.0,
        None,
        help="weight of the vector score in confidence",
    ),
    Param(
        "confidence_keyword_weight",
        float,
        _R.confidence_keyword_weight,
        0.0,
        None,
        help="weight of the keyword hit in confidence",
    ),
    Param(
        "path_penalty",
        float,
        _R.path_penalty,
        0.0,
        1.0,
        help="score factor for test/doc/spec/plan paths",
    ),
    Param(
        "max_chunks_per_file",
        int,
        _R.max_chunks_per_file,
        1,
        None,
        help="diversity cap: results per file",
    ),
    Param("graph", bool, _R.graph, help="append chunks of import-graph neighbours"),
    Param("graph_depth", int, _R.graph_depth, 1, 8, help="import-graph hops to follow"),
    Param("graph_files", int, _R.graph_files, 0, None, help="neighbour files appended at most"),
    Param(
        "graph_chunks_per_file",
        int,
        _R.graph_chunks_per_file,
        0,
        None,
        help="chunks appended per neighbour file",
    ),
    Param("graph_scale", float, _R.graph_scale, 0.0, None, help="score factor of appended chunks"),
    *_EMBEDDER_PARAMS,
)


def _str(values: Mapping[str, ParamValue], key: str) -> str:
    return str(values[key])


def _make_bm25(values: Mapping[str, ParamValue]) -> Backend:
    return Bm25Backend("bm25", float(values["k1"]), float(values["b"]))


def _make_vector(values: Mapping[str, ParamValue]) -> Backend:
    return VectorBackend("vector", _str(values, "embedder"), _str(values, "model"))


def _make_hybrid(values: Mapping[str, ParamValue]) -> Backend:
    fields = {f.name for f in attrs.fields(SearchParams)}
    params = SearchParams(**{key: value for key, value in values.items() if key in fields})  # type: ignore[arg-type]
    return HybridBackend("hybrid", params, _str(values, "embedder"), _str(values, "model"))


BACKENDS: dict[str, BackendSpec] = {
    "bm25": BackendSpec("bm25", "BM25 alone", _BM25_PARAMS, _make_bm25),
    "vector": BackendSpec("vector", "cosine of the query vector", _EMBEDDER_PARAMS, _make_vector),
    "hybrid": BackendSpec(
        "hybrid", "the `cce search` pipeline (BM25 + vector, RRF, graph)", _HYBRID_PARAMS,
        _make_hybrid,
    ),
}  # fmt: skip
"""Registered backends in listing order; plugins are appended on first lookup."""

_plugins_loaded = False


def register_backend(spec: BackendSpec, replace: bool = False) -> None:
    """Add `spec` to the registry; BackendConfigError when the name is taken."""
    if spec.name in BACKENDS and not replace:
        raise BackendConfigError(f"backend {spec.name!r} is already registered")
    BACKENDS[spec.name] = spec


class _PluginBackend:
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


def _plugin_spec(entry: metadata.EntryPoint) -> BackendSpec:
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


def _entry_points() -> Iterator[metadata.EntryPoint]:
    yield from sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)


def load_plugins(force: bool = False) -> None:
    """Register every installed `cce.backends` entry point once (names already taken win)."""
    global _plugins_loaded
    if _plugins_loaded and not force:
        return
    _plugins_loaded = True
    for entry in _entry_points():
        if entry.name not in BACKENDS:
            BACKENDS[entry.name] = _plugin_spec(entry)


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
    made = spec.factory(spec.resolve(params))
    if spec.adapt:
        backend: Backend = _PluginBackend(spec.name, made)
    elif isinstance(made, Backend):
        backend = made
    else:
        raise BackendConfigError(f"backend {name!r}: its factory returned no backend")
    if as_name is not None and as_name != backend.name:
        return Renamed(as_name, backend)
    return backend
