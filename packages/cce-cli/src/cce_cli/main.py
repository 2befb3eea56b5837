"""The `cce` command: argument parsing and dispatch to one module per subcommand.

Why it exists: each subcommand lives in its own module (`cmd_index`, `cmd_search`,
`cmd_conformance`, `cmd_relevance`, `cmd_diff`) exposing `configure(parser)` and `run(args) -> int`;
this module wires them into one argparse tree and owns the error contract: a
`CliError` becomes `error: <message>` on stderr with its exit status, usage errors
exit 2 (argparse), and stdout stays empty on error.
"""

from __future__ import annotations

import argparse
import contextlib
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
from cce_cli.output import stdout_error

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


def _report(message: str) -> None:
    """`message` on stderr, if there is a stderr to write to.

    An undecodable byte of a path in the message is shown as `\\xNN`.
    """
    message = "".join(
        f"\\x{ord(char) - 0xDC00:02x}" if "\udc80" <= char <= "\udcff" else char for char in message
    )
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run, and turn every user-facing failure into `error: ...` and its status.

    A closed stdout is refused before any work; a stdout that fails while the command
    prints (full disk, broken pipe) is exit 1 with a message; Ctrl-C is exit 130.
    """
    if sys.stdout is None:
        _report("error: stdout is closed; nothing was done (redirect it, e.g. > /dev/null)")
        return 1
    try:
        parser, runners = build_parser()
        args = parser.parse_args(argv)
        code = runners[args.command](args)
        sys.stdout.flush()  # what `print` buffered: a full disk surfaces here
        return code
    except CliError as err:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        _report(f"error: {err.message}")
        return err.exit_code
    except KeyboardInterrupt:
        _report("error: interrupted")
        return 130
    except OSError as err:
        if not _is_stdout_failure(err):
            raise
        _report(f"error: {stdout_error(err).message}")
        return 1


def _is_stdout_failure(err: OSError) -> bool:
    """A broken pipe, or a write error raised while flushing stdout (ENOSPC, EIO)."""
    if isinstance(err, BrokenPipeError):
        return True
    try:
        sys.stdout.flush()
    except OSError:
        return True
    return False


if __name__ == "__main__":
    sys.exit(main())
