"""The `cce-fixtures` command: `cce-fixtures validate FILE...`, the pre-commit hook.

Why it exists: fixture files are hand-edited, and a broken one should fail at commit
time with every problem listed, not at evaluation time with only the first. This
module is the I/O edge of the package: it reads files, asks `find_problems`, and
prints one line per problem on stdout:

    FILE:LINE: message     a problem on that line (the `fixture line N: ` prefix of
                           the library message is replaced by the `LINE` column)
    FILE: message          a problem of the whole file: unreadable, not UTF-8, or
                           no query cases (no line 0 - editors would jump nowhere)

Valid files print nothing. Exit status: 0 when every file is valid, 1 when any is
not, 2 on usage errors (argparse).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from cce_fixtures.fixtures import FixtureError, decode_fixture_bytes, find_problems

__all__ = ["file_problems", "main", "validate_files"]


def _read_problem(error: OSError) -> str:
    reason = error.strerror or type(error).__name__
    return f"could not read fixtures: {reason}"


def _format_problem(path: str, problem: FixtureError) -> str:
    if problem.line is None:
        return f"{path}: {problem.detail}"
    return f"{path}:{problem.line}: {problem.detail}"


def file_problems(path: str) -> list[str]:
    """Every problem of the fixture file at `path`, formatted as the command prints it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return [f"{path}: {_read_problem(error)}"]
    try:
        text = decode_fixture_bytes(data)
    except UnicodeDecodeError as error:
        return [f"{path}: could not read fixtures: invalid UTF-8 at byte offset {error.start}"]
    return [_format_problem(path, problem) for problem in find_problems(text)]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cce-fixtures",
        description="Tools for cce.relevance/v1 fixture files.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate = commands.add_parser(
        "validate",
        help="check fixture files and list every problem as FILE:LINE: message",
        description=(
            "Check each fixture file against the cce.relevance/v1 contract and print "
            "every problem found. Exit 0 if all are valid, 1 otherwise."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="fixture file (NDJSON)")
    return parser


def validate_files(paths: Sequence[str], out: TextIO) -> int:
    """Print every problem of every file to `out`; 0 when all are valid, else 1."""
    status = 0
    for path in paths:
        for line in file_problems(path):
            print(line, file=out)
            status = 1
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cce-fixtures` script; returns the exit status."""
    arguments = _build_parser().parse_args(argv)
    # Only one subcommand today; argparse has already rejected anything else.
    return validate_files(arguments.files, sys.stdout)
