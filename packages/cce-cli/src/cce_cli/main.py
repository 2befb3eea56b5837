"""The `cce` command: argument parsing and dispatch to one module per subcommand.

Why it exists: each subcommand lives in its own module under `cce_cli.commands`, listed
once in `SUBCOMMANDS`, exposing `configure(parser)` and `run(args) -> int`; this module
wires them into one argparse tree and owns the error contract: a `CliError` becomes
`error: <message>` on stderr with its exit status, usage errors exit 2 (argparse), and
stdout stays empty on error. A plugin's failure that reaches it (a `PluginError`) is
`error: <message>`, exit 1, too; a `KeyboardInterrupt` a plugin raised with no Ctrl-C
behind it is such an error, not an interrupt.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

from cce_cli.errors import CliError
from cce_cli.interrupts import count_interrupts, interrupts_received
from cce_cli.output import stdout_error, visible_controls

Run = Callable[[argparse.Namespace], int]


class Command(Protocol):
    """What a subcommand module offers: its arguments and its run function."""

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# One line per subcommand, in the order `cce --help` lists them: name, module, help.
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("index", "commands.index", "index a directory into a persisted store"),
    ("search", "commands.search", "search a persisted store"),
    ("conformance", "commands.conformance", "write the cross-implementation chunk table"),
    ("relevance", "commands.relevance", "score retrieval against labeled fixtures"),
    (
        "diff",
        "commands.diff",
        "compare two saved relevance reports query by query, with a pass/fail gate",
    ),
    (
        "report",
        "commands.report",
        "render a saved relevance report or diff as one self-contained HTML page",
    ),
    ("check", "commands.check", "find fixture anchors that match nothing"),
    ("queries", "commands.queries", "list the distinct queries of metrics.jsonl event logs"),
    ("pool", "commands.pool", "pool several backends' results for judging, or apply judgments"),
    ("plan", "commands.plan", "how many queries a comparison needs, from a pilot report"),
    ("backends", "commands.backends", "list the backends --backend accepts, with their parameters"),
    ("suite", "commands.suite", "prepare a suite's corpora ahead of a run (fetch)"),
    ("import", "commands.import_suite", "write a suite from another benchmark's files (semble)"),
)


def command_module(module: str) -> Command:
    """The subcommand module `cce_cli.<module>`, imported now."""
    loaded: Command = importlib.import_module(f"cce_cli.{module}")
    return loaded


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names: its first argument that is not an option, if known.

    The top-level parser has no option taking a value, so that argument is the command.
    """
    names = {name for name, _, _ in SUBCOMMANDS}
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in names else None
    return None


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that text for stdout (`--help`) that cannot be written
    is an error: argparse drops the `OSError`, so `cce --help > /dev/full` said nothing
    and exited 0."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message or file is None or file is not sys.stdout:
            super()._print_message(message, file)
            return
        try:
            file.write(message)
        except OSError as err:
            raise stdout_error(err) from None


def build_parser(
    only: str | None = None, every: bool = True
) -> tuple[argparse.ArgumentParser, dict[str, Run]]:
    """The argparse tree. Every subcommand is listed; its arguments are configured for
    all of them (`every`), or only for `only`, so one command's run imports only its
    own module (a `cce search` never loads the chunker or the statistics)."""
    parser = _Parser(prog="cce", description="cce: measure how good code retrieval is")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    runners: dict[str, Run] = {}
    for name, module_name, help_text in SUBCOMMANDS:
        command = sub.add_parser(name, help=help_text, description=help_text)
        if every or name == only:
            module = command_module(module_name)
            module.configure(command)
            runners[name] = module.run
    return parser, runners


def _report(message: str) -> None:
    """`message` on stderr, if there is a stderr to write to.

    An undecodable byte of a path in the message is shown as `\\xNN`, and any other
    control character that came from an input as `\\uNNNN` (line breaks stay: some
    messages list one problem a line).
    """
    message = visible_controls(message, keep="\n")
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=sys.stderr)


def _stderr_to_null() -> None:
    """Point a closed stderr (`2>&-`) at the null device, so the command runs as with
    `--no-progress` and says nothing.

    Python leaves `sys.stderr` None then, and every check of it (`isatty()` for the
    progress bar) or `print(..., file=sys.stderr)`, which falls back to stdout, would
    misbehave. File descriptor 2 is taken too, while it is still free: otherwise the next
    file opened (a store being written) would get it, and anything a library or a child
    process writes to "stderr" would land in that file."""
    if sys.stderr is not None:
        return
    try:
        descriptor = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.fstat(2)
    except OSError:  # still closed: hand it the null device
        if descriptor != 2:
            os.dup2(descriptor, 2)
            os.close(descriptor)
            descriptor = 2
    sys.stderr = os.fdopen(descriptor, "w", buffering=1, errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run, and turn every user-facing failure into `error: ...` and its status.

    A closed stdout is refused before any work; a stdout that fails while the command
    prints (full disk, broken pipe) is exit 1 with a message; Ctrl-C is exit 130. A
    closed stderr is the null device.
    """
    _stderr_to_null()
    count_interrupts()
    interrupts_before = interrupts_received()
    if sys.stdout is None:
        _report("error: stdout is closed; nothing was done (redirect it, e.g. > /dev/null)")
        return 1
    try:
        arguments = sys.argv[1:] if argv is None else list(argv)
        only = chosen_command(arguments)
        if any(argument.startswith("--fail-on-q") for argument in arguments):
            # Its value is optional: a bare flag must not take the next positional.
            from cce_cli.commands.gate_options import bind_bare_regression_flag

            arguments = bind_bare_regression_flag(arguments)
        parser, runners = build_parser(only, every=False)
        try:
            args = parser.parse_args(arguments)
        except SystemExit as done:
            if done.code in (0, None):  # `--help` has succeeded only once its text is out
                sys.stdout.flush()
            raise
        code = runners[args.command](args)
        sys.stdout.flush()  # what `print` buffered: a full disk surfaces here
        return code
    except CliError as err:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        _report(f"error: {err.message}")
        return err.exit_code
    except KeyboardInterrupt as err:
        plugin = _plugin_interrupt(err)
        no_ctrl_c = interrupts_before is not None and interrupts_received() == interrupts_before
        if plugin is not None and no_ctrl_c:
            _report(f"error: {plugin}; no Ctrl-C came, so the plugin raised it itself")
            return 1
        _report("error: interrupted")
        return 130
    except OSError as err:
        if not _is_stdout_failure(err):
            raise
        _report(f"error: {stdout_error(err).message}")
        return 1
    except Exception as err:
        failure = _plugin_failure(err)
        if failure is None:
            raise
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        _report(f"error: {failure}")
        return 1


def _plugin_failure(err: Exception) -> str | None:
    """The message of a plugin's failure that no command turned into a `CliError`."""
    if "cce_retrieval.plugin_calls" not in sys.modules:  # no plugin ever ran
        return None
    from cce_retrieval import PluginError

    return str(err) if isinstance(err, PluginError) else None


def _plugin_interrupt(err: KeyboardInterrupt) -> str | None:
    """What a `KeyboardInterrupt` out of plugin code says, or None for any other."""
    if "cce_retrieval.plugin_calls" not in sys.modules:
        return None
    from cce_retrieval import PluginInterrupt

    return err.message if isinstance(err, PluginInterrupt) else None


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
