"""The `cce` command: argument parsing and dispatch to one module per subcommand.

Why it exists: each subcommand lives in its own module (`cmd_index`, `cmd_search`,
`cmd_conformance`, `cmd_relevance`) exposing `configure(parser)` and `run(args) -> int`;
this module wires them into one argparse tree and owns the error contract: a
`CliError` becomes `error: <message>` on stderr with its exit status, usage errors
exit 2 (argparse), and stdout stays empty on error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from cce_cli import cmd_backends, cmd_conformance, cmd_index, cmd_relevance, cmd_search
from cce_cli.errors import CliError

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]

COMMANDS: tuple[tuple[str, Configure, Run, str], ...] = (
    ("index", cmd_index.configure, cmd_index.run, "index a directory into a persisted store"),
    ("search", cmd_search.configure, cmd_search.run, "search a persisted store"),
    (
        "conformance",
        cmd_conformance.configure,
        cmd_conformance.run,
        "write the cross-implementation chunk table",
    ),
    (
        "relevance",
        cmd_relevance.configure,
        cmd_relevance.run,
        "score retrieval against labeled fixtures",
    ),
    (
        "backends",
        cmd_backends.configure,
        cmd_backends.run,
        "list the backends --backend accepts, with their parameters",
    ),
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Run]]:
    parser = argparse.ArgumentParser(
        prog="cce", description="cce: measure how good code retrieval is"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    runners: dict[str, Run] = {}
    for name, configure, run, help_text in COMMANDS:
        configure(sub.add_parser(name, help=help_text, description=help_text))
        runners[name] = run
    return parser, runners


def main(argv: Sequence[str] | None = None) -> int:
    parser, runners = build_parser()
    args = parser.parse_args(argv)
    try:
        return runners[args.command](args)
    except CliError as err:
        sys.stdout.flush()
        print(f"error: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
