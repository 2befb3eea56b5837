"""Embedders from installed packages: the `cce.embedders` entry points, run guarded.

Why it exists: a team measures its own embedding model by installing it as a plugin,
the way `cce.backends` adds a retriever, with no change to cce. An entry point names an
`EmbedderSpec` (its name is replaced by the entry point's) or a bare factory
`factory(model, environ)`. A plugin that fails to load must not take the registry down:
it is listed, and choosing it is an `EmbedderMisconfigured` naming the plugin and why.
Whatever its factory or embedder does besides the protocol's own failures (`EmbedError`)
is one `EmbedderPluginError` naming the plugin and its entry point, never a traceback or
an exit (docs/hostile-input.md#plugins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import metadata

import attrs

from cce_retrieval.embed.errors import EmbedderMisconfigured
from cce_retrieval.embed.hashing import Embedder, EmbedError
from cce_retrieval.embed.spec import CheckedEmbedder, EmbedderFactory, EmbedderSpec
from cce_retrieval.plugin_calls import PluginCaller, PluginError

EMBEDDER_ENTRY_POINT_GROUP = "cce.embedders"


class EmbedderPluginError(PluginError, EmbedderMisconfigured):
    """An embedder plugin failed outside its protocol (it raised something other than an
    `EmbedError`, exited, or returned what is no embedder or no vector); `str()` names the
    plugin, its entry point and what happened."""


def _vector(values: object) -> list[float]:
    """One vector as plain floats: any sequence of real numbers (a list, a numpy row)."""
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise TypeError(f"a vector must be one sequence of numbers, not {array.ndim}-dimensional")
    vector: list[float] = array.tolist()
    return vector


def _vectors(batch: object) -> list[list[float]]:
    """A batch of vectors as plain floats: one conversion when they are all one width."""
    import numpy as np

    rows = list(batch)  # type: ignore[call-overload]
    try:
        array = np.asarray(rows, dtype=np.float64)
    except ValueError:  # ragged, or not numbers: each row says which
        return [_vector(row) for row in rows]
    if array.ndim != 2:
        return [_vector(row) for row in rows]
    vectors: list[list[float]] = array.tolist()
    return vectors


class GuardedEmbedder:
    """A plugin's embedder with every call guarded and every vector made plain floats.

    `name` and `model` are read once, when it is made. The variants below add the
    health check (`location`, `check()`) and the matrix fast path only when the plugin's
    embedder has them, so `isinstance` against those protocols answers as for the plugin.
    """

    model: str | None

    def __init__(self, inner: object, caller: PluginCaller) -> None:
        self._inner = inner
        self._caller = caller
        name = getattr(inner, "name", None)
        if not isinstance(name, str):
            raise caller.error(f"the factory's embedder has no string `name` (found {name!r:.60})")
        self.name = str.__str__(name)
        if hasattr(inner, "model"):
            self.model = getattr(inner, "model")  # noqa: B009 - set only when it has one

    def embed(self, text: str) -> list[float]:
        # `embed` never raises by the protocol, so even an EmbedError is the plugin's fault.
        return self._caller.strict().call("embed()", lambda: _vector(self._plugin.embed(text)))

    def try_embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        def batch() -> list[list[float]]:
            got = self._plugin.try_embed_batch(texts)
            if got is None or isinstance(got, str | bytes | Mapping):
                raise TypeError(f"it returned {type(got).__name__}, not a list of vectors")
            return _vectors(got)

        return self._caller.call("try_embed_batch()", batch)

    @property
    def _plugin(self) -> Embedder:
        inner: Embedder = self._inner  # type: ignore[assignment]
        return inner


class _CheckedGuardedEmbedder(GuardedEmbedder):
    location: str

    def __init__(self, inner: object, caller: PluginCaller) -> None:
        super().__init__(inner, caller)
        self.location = str(getattr(inner, "location", ""))

    def check(self) -> None:
        checked: CheckedEmbedder = self._inner  # type: ignore[assignment]
        self._caller.call("check()", checked.check)


def guarded_embedder(inner: object, caller: PluginCaller) -> Embedder:
    """`inner` (what a plugin's factory returned) behind the guard; an error naming the
    plugin when it is no embedder."""

    def make() -> Embedder:
        missing = [m for m in ("embed", "try_embed_batch") if not callable(getattr(inner, m, None))]
        if missing:
            raise caller.error(
                f"the factory returned {type(inner).__name__}, which has no "
                + " or ".join(f"{m}()" for m in missing)
            )
        if isinstance(inner, CheckedEmbedder):
            return _CheckedGuardedEmbedder(inner, caller)
        return GuardedEmbedder(inner, caller)

    return caller.call("the factory's embedder", make)


def _guarded_factory(caller: PluginCaller, factory: Callable[..., object]) -> EmbedderFactory:
    def made(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
        inner = caller.call("the factory", factory, model, environ)
        return guarded_embedder(inner, caller)

    return made


def embedder_caller(name: str, entry_point: str) -> PluginCaller:
    """The guard every call into the embedder plugin `name` goes through; the protocol's
    own failures (`EmbedError`: a server down, a model that will not load) pass."""
    return PluginCaller.of("embedder", name, entry_point, EmbedderPluginError, (EmbedError,))


def plugin_embedder_spec(entry: metadata.EntryPoint) -> EmbedderSpec:
    """The `EmbedderSpec` of one entry point, named by the entry point."""
    name = entry.name
    caller = embedder_caller(name, entry.value)
    try:
        return caller.call("importing it", _loaded_spec, entry, caller)
    except PluginError as err:  # a broken plugin must not take the registry down
        cause = f"{caller.prefix} failed to load: {str(err).removeprefix(caller.prefix + ': ')}"

        def broken(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
            raise EmbedderPluginError(cause)

        return EmbedderSpec(name, f"plugin {entry.value} (fails to load)", broken)


def _loaded_spec(entry: metadata.EntryPoint, caller: PluginCaller) -> EmbedderSpec:
    target = entry.load()
    if isinstance(target, EmbedderSpec):
        return attrs.evolve(
            target, name=entry.name, factory=_guarded_factory(caller, target.factory)
        )
    if callable(target):
        lines = (getattr(target, "__doc__", None) or "").strip().splitlines()
        help_text = lines[0] if lines else f"plugin {entry.value}"
        return EmbedderSpec(entry.name, help_text, _guarded_factory(caller, target))

    def not_a_factory(model: str | None, environ: Mapping[str, str] | None) -> Embedder:
        raise caller.error("the entry point is neither an EmbedderSpec nor a factory")

    return EmbedderSpec(entry.name, f"plugin {entry.value} (not an embedder)", not_a_factory)


def embedder_entry_points() -> Iterator[metadata.EntryPoint]:
    yield from sorted(metadata.entry_points(group=EMBEDDER_ENTRY_POINT_GROUP), key=lambda e: e.name)
