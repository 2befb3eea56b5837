"""`cce backends [PATH]`: list every backend name `--backend` accepts, with parameters.

Why it exists: backends come from three places - the built-ins, installed plugins
(`cce.backends` entry points) and named configurations in `cce.toml` - so a user needs
one place that shows which names exist, what each one is, which parameters it takes
(type, reference default, range) and what a configuration changes. The configuration is
found from PATH (a fixture file or directory, default `.`) like `cce relevance` finds
it, or given with `--config FILE`. See docs/backends.md.
"""

from __future__ import annotations

import argparse

import attrs

from cce_cli.evaluation import configurations as backend_config
from cce_cli.output import display_text, visible_controls, write_stdout
from cce_retrieval import Param, backend_names, backend_spec

__all__ = ["BackendsRequest", "configure", "list_backends", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="PATH", nargs="?", default=".", help="where to look for cce.toml"
    )
    parser.add_argument("--config", metavar="FILE", help="read configurations from FILE")


def listing(config: backend_config.BackendConfig) -> str:
    """The text `cce backends` prints."""
    lines: list[str] = []
    for name in backend_names():
        spec = backend_spec(name)
        lines.append(f"{name}: {spec.help}")
        for param in spec.params:
            lines.append(
                f"    {param.describe()}: {param.help}" if param.help else param.describe()
            )
    if config.backends:
        lines.append("")
        lines.append(f"configured in {display_text(config.path or '')}:")
        for name, named in config.backends.items():
            if named.unavailable is not None:
                lines.append(f"{name}: use {named.use}, unavailable: {named.unavailable}")
                continue
            changes = " ".join(
                f"{key}={Param.spell(value)}"
                for key, value in named.recorded().items()
                if key != "use"
            )
            lines.append(f"{name}: use {named.use}" + (f", {changes}" if changes else ""))
    # Plugins and cce.toml supply names, kinds and help text: none reaches the terminal raw.
    return "".join(visible_controls(line) + "\n" for line in lines)


@attrs.frozen(slots=True)
class BackendsRequest:
    """One `cce backends`: where a `cce.toml` is looked for, or the one to read."""

    path: str = "."
    config: str | None = None


def backends_request(args: argparse.Namespace) -> BackendsRequest:
    """The listing the parsed arguments ask for."""
    return BackendsRequest(str(args.path), args.config)


def run(args: argparse.Namespace) -> int:
    return list_backends(backends_request(args))


def list_backends(request: BackendsRequest) -> int:
    """Print every backend name and the configured ones found for `request`."""
    config = backend_config.config_for(request.config, request.path)
    write_stdout(listing(config))
    return 0
