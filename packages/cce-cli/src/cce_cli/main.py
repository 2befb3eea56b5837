"""The `cce` command: argument parsing and dispatch to one module per subcommand.

Why it exists: each subcommand lives in its own module (`cmd_index`, `cmd_search`,
`cmd_conformance`, `cmd_relevance`) exposing `configure(parser)` and `run(args) -> int`;
this module wires them into one argparse tree and owns the error contract: a
`CliError` becomes `error: <message>` on stderr with its exit status, usage errors
exit 2 (argparse), and stdout stays empty on error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from cce_cli.errors import CliError

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("index", "cce_cli.cmd_index", "index a directory into a persisted store"),
    ("search", "cce_cli.cmd_search", "search a persisted store"),
    ("conformance", "cce_cli.cmd_conformance", "write the cross-implementation chunk table"),
    ("relevance", "cce_cli.cmd_relevance", "score retrieval against labeled fixtures"),
)


class CommandModule(Protocol):
    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, CommandModule]]:
    parser = argparse.ArgumentParser(
        prog="cce", description="cce: measure how good code retrieval is"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    modules: dict[str, CommandModule] = {}
    for name, module_name, help_text in COMMANDS:
        module = cast(CommandModule, importlib.import_module(module_name))
        module.configure(sub.add_parser(name, help=help_text, description=help_text))
        modules[name] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    try:
        return modules[args.command].run(args)
    except CliError as err:
        sys.stdout.flush()
        print(f"error: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
