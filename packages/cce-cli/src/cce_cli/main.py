"""The `cce` command: argument parsing and dispatch to one module per subcommand.

Why it exists: each subcommand lives in its own module (`cmd_index`, `cmd_search`,
`cmd_conformance`, `cmd_relevance`, `cmd_diff`) exposing `configure(parser)` and `run(args) -> int`;
this module wires them into one argparse tree and owns the error contract: a
`CliError` becomes `error: <message>` on stderr with its exit status, usage errors
exit 2 (argparse), and stdout stays empty on error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

from cce_cli import (
    cmd_backends,
    cmd_check,
    cmd_conformance,
    cmd_diff,
    cmd_index,
    cmd_plan,
    cmd_pool,
    cmd_queries,
    cmd_relevance,
    cmd_search,
)
from cce_cli.errors import CliError

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


class Command(Protocol):
    """What a subcommand module offers: its arguments and its run function."""

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# One line per subcommand, in the order `cce --help` lists them.
SUBCOMMANDS: tuple[tuple[str, Command, str], ...] = (
    ("index", cmd_index, "index a directory into a persisted store"),
    ("search", cmd_search, "search a persisted store"),
    ("conformance", cmd_conformance, "write the cross-implementation chunk table"),
    ("relevance", cmd_relevance, "score retrieval against labeled fixtures"),
    ("diff", cmd_diff, "compare two saved relevance reports query by query, with a pass/fail gate"),
    ("check", cmd_check, "find fixture anchors that match nothing"),
    ("queries", cmd_queries, "list the distinct queries of metrics.jsonl event logs"),
    ("pool", cmd_pool, "pool several backends' results for judging, or apply judgments"),
    ("plan", cmd_plan, "how many queries a comparison needs, from a pilot report"),
    ("backends", cmd_backends, "list the backends --backend accepts, with their parameters"),
)

COMMANDS: tuple[tuple[str, Configure, Run, str], ...] = tuple(
    (name, module.configure, module.run, help_text) for name, module, help_text in SUBCOMMANDS
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
