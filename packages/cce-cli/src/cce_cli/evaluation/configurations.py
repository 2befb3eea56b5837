"""Named backend configurations: `cce.toml` or `[tool.cce]` in pyproject.toml.

Why it exists: a ranking change is measured by naming it as a configuration of a
registered backend (`[backends.bm25-b04]`, `use = "bm25"`, `b = 0.4`) and comparing it
with `--compare bm25,bm25-b04`, without editing the library. This module owns finding
the configuration file (given with `--config FILE`, else the first `cce.toml` or
`pyproject.toml` with a `[tool.cce]` table in the fixture file's directory or one of its
parents, like ruff), reading it with the standard library's `tomllib`, checking every
table against the backend registry (errors name the file, the table, the key and the
valid choices), and turning a backend name - registered, configured or an external run
- into a `Backend`. See docs/backends.md#named-configurations.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping, Sequence

import attrs

from cce_cli.errors import CliError
from cce_cli.formats import input_files
from cce_cli.output import display_text
from cce_retrieval import (
    Backend,
    BackendConfigError,
    PluginError,
    backend_names,
    backend_spec,
    create_backend,
    describe_os_error,
    embedder_names,
    rust_trim,
)

__all__ = [
    "CONFIG_NAME",
    "BackendConfig",
    "NamedBackend",
    "choose",
    "config_for",
    "discover_config",
    "is_plugin",
    "load_config",
    "requested",
]

CONFIG_NAME = "cce.toml"


@attrs.frozen(slots=True)
class NamedBackend:
    """One `[backends.NAME]` table: the registered backend it uses and its parameters."""

    name: str
    use: str
    params: Mapping[str, object]
    table: str
    unavailable: str | None = None
    """Why it cannot run (its `use` names no installed backend), or None: only the runs
    that choose it fail, and `cce backends` lists it with this reason."""

    def recorded(self) -> dict[str, object]:
        """What the report records: `use` plus the parameters that differ from defaults."""
        return {"use": self.use, **backend_spec(self.use).non_default(self.params)}


@attrs.frozen(slots=True)
class BackendConfig:
    """The named configurations of one file (none when no file was found)."""

    path: str | None = None
    backends: Mapping[str, NamedBackend] = attrs.field(factory=dict)


def _config_in(directory: str) -> str | None:
    candidate = os.path.join(directory, CONFIG_NAME)
    if os.path.isfile(candidate):
        return candidate
    pyproject = os.path.join(directory, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            data = input_files.read_input(pyproject, input_files.CONFIG)
            document = tomllib.loads(data.decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            # Somebody else's broken pyproject (bad TOML, not UTF-8, nested too deeply
            # for the parser, not a regular file) is not our configuration.
            return None
        tool = document.get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("cce"), dict):
            return pyproject
    return None


def discover_config(start: str) -> str | None:
    """The configuration file for `start` (a file or directory), searching upwards."""
    directory = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        found = _config_in(directory)
        if found is not None:
            return found
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def load_config(path: str) -> BackendConfig:
    """Read and check the named configurations in `path`; every problem is a CliError."""
    try:
        data = input_files.read_input(path, input_files.CONFIG)
    except OSError as err:
        raise CliError(f"could not read config {path}: {describe_os_error(err)}") from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise CliError(
            f"{path}: line {line}: not valid UTF-8 (byte 0x{data[err.start]:02x}); "
            "TOML files are UTF-8, so re-save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as err:
        raise CliError(f"{path}: invalid TOML: {err}") from None
    except RecursionError:
        raise CliError(
            f"{path}: invalid TOML: arrays or tables nested too deeply to read; flatten the nesting"
        ) from None
    prefix = ""
    if os.path.basename(path) == "pyproject.toml":
        tool = document.get("tool", {})
        document = tool.get("cce", {}) if isinstance(tool, dict) else {}
        prefix = "tool.cce."
    unknown = sorted(set(document) - {"backends"})
    if unknown:
        raise CliError(f"{path}: unknown table or key `{prefix}{unknown[0]}`; valid keys: backends")
    tables = document.get("backends", {})
    if not isinstance(tables, dict):
        raise CliError(f"{path}: `{prefix}backends` must be a table of [{prefix}backends.NAME]")
    registered = backend_names()
    named: dict[str, NamedBackend] = {}
    for name, table in tables.items():
        where = f"{path}: [{prefix}backends.{name}]"
        if not isinstance(table, dict):
            raise CliError(f'{where} must be a table with `use = "<backend>"`')
        if name in registered:
            raise CliError(
                f"{where}: {name!r} is a registered backend; give the configuration another name"
            )
        if not name or "," in name or "=" in name or rust_trim(name) != name:
            raise CliError(f"{where}: a backend name may not be blank or hold `,`, `=` or spaces")
        use = table.get("use")
        params = {key: value for key, value in table.items() if key != "use"}
        if isinstance(use, str) and use and use not in registered:
            # Most likely a plugin that is not installed here: the other configurations
            # of the file still work.
            reason = (
                f"{where}: key `use` names {use!r}, which is neither a built-in backend nor "
                f"an installed plugin; install the package that provides it, or use one of: "
                f"{', '.join(registered)}"
            )
            named[name] = NamedBackend(name, use, params, where, unavailable=reason)
            continue
        if not isinstance(use, str) or use not in registered:
            raise CliError(
                f"{where}: key `use` must name a registered backend; "
                f"valid choices: {', '.join(registered)}"
            )
        embedder = params.get("embedder")
        if isinstance(embedder, str) and embedder and embedder not in embedder_names():
            raise CliError(
                f"{where}: key `embedder` must name a registered embedder; "
                f"valid choices: {', '.join(embedder_names())}"
            )
        try:
            backend_spec(use).resolve(params)
        except BackendConfigError as err:
            raise CliError(f"{where}: {err}") from None
        named[name] = NamedBackend(name, use, params, where)
    return BackendConfig(path, named)


_ANNOUNCED: set[str] = set()
"""The discovered files this process has said it reads (each is named once)."""


def config_for(
    explicit: str | None, start: str, wanted: Sequence[str] | None = None
) -> BackendConfig:
    """`--config FILE` when given, else the discovered file, else no configurations.

    A discovered file is somebody's project setting, not something this command line
    asked for, so it is read only when needed: with `wanted` (the backend names the
    command line chose, external runs left out), only when one of them is not a
    registered backend; then its problems are errors, and stderr says once which file
    configured the run. Without `wanted` (a listing of every backend), a file that
    cannot be used is a warning and the command goes on with the registered backends.
    """
    if explicit is not None:
        # A device or FIFO is left to the reader, which says what it is.
        if not os.path.exists(explicit) or os.path.isdir(explicit):
            raise CliError(f"config {explicit} is not a file; pass an existing cce.toml")
        return load_config(explicit)
    found = discover_config(start)
    if found is None:
        return BackendConfig()
    if wanted is None:
        try:
            return load_config(found)
        except CliError as error:
            print(
                f"warning: {error.message}; going on with the registered backends only "
                "(pass --config to use another file)",
                file=sys.stderr,
            )
            return BackendConfig()
    registered = set(backend_names())
    if all(name in registered for name in wanted):
        return BackendConfig()
    config = load_config(found)
    if found not in _ANNOUNCED:
        _ANNOUNCED.add(found)
        print(f"note: backend configurations from {display_text(found)}", file=sys.stderr)
    return config


def requested(*lists: str | None, runs: Sequence[object] = ()) -> tuple[str, ...]:
    """The backend names comma lists (`--backend`, `--compare`) ask for, less the names
    the `--run NAME=FILE` options in `runs` give: what decides whether a discovered
    configuration is read."""
    run_names = {str(option).partition("=")[0].strip() for option in runs}
    names = [part.strip() for text in lists if text is not None for part in text.split(",")]
    return tuple(name for name in names if name and name not in run_names)


def all_names(config: BackendConfig, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """Registered names, then configured ones, then external runs: the valid choices."""
    return (*backend_names(), *config.backends, *extra)


def choose(
    text: str,
    config: BackendConfig,
    extra: Mapping[str, Backend] | None = None,
    flag: str = "--backend",
) -> tuple[str, ...]:
    """Names from a comma list: trimmed, blanks skipped, first occurrence kept, all known.

    An unknown name is a usage error (exit 2) with a did-you-mean; so is a list that
    names no backend at all (`,`)."""
    from cce_cli.evaluation.harness import (  # the harness's own rule
        BackendError,
        UnknownBackendError,
        parse_backends,
    )

    try:
        chosen = parse_backends(text, all_names(config, tuple(extra or {})), flag)
    except UnknownBackendError as err:
        raise CliError(str(err), exit_code=2) from None
    except BackendError as err:
        raise CliError(str(err), exit_code=2) from None
    for name in chosen:
        named = config.backends.get(name)
        if named is not None and named.unavailable is not None:
            raise CliError(named.unavailable)
    return chosen


def instantiate(
    name: str,
    config: BackendConfig,
    extra: Mapping[str, Backend] | None = None,
    overrides: Mapping[str, object] | None = None,
) -> Backend:
    """The `Backend` for a registered, configured or external-run name."""
    if extra and name in extra:
        return extra[name]
    unavailable = config.backends[name].unavailable if name in config.backends else None
    if unavailable is not None:
        raise CliError(unavailable)
    try:
        named = config.backends.get(name)
        if named is not None:
            params = {**named.params, **(overrides or {})}
            return create_backend(named.use, params, as_name=name)
        return create_backend(name, overrides)
    except PluginError as err:  # it names the plugin and its entry point itself
        raise CliError(str(err)) from None
    except BackendConfigError as err:
        where = config.backends[name].table if name in config.backends else f"backend {name!r}"
        raise CliError(f"{where}: {err}") from None


def is_plugin(name: str, config: BackendConfig) -> bool:
    """Whether `name` ranks with an installed plugin (itself, or configured from one):
    its results come from outside cce and are checked before they are scored."""
    named = config.backends.get(name)
    base = named.use if named is not None else name
    try:
        return backend_spec(base).adapt
    except BackendConfigError:
        return False


def recorded_configs(names: Sequence[str], config: BackendConfig) -> dict[str, dict[str, object]]:
    """Per configured backend that differs from its base's defaults, what it ran with."""
    recorded: dict[str, dict[str, object]] = {}
    for name in names:
        named = config.backends.get(name)
        if named is not None:
            recorded[name] = named.recorded()
    return recorded
