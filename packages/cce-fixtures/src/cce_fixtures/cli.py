"""The `cce-fixtures` command: `cce-fixtures validate FILE...`, the pre-commit hook.

Why it exists: fixture files are hand-edited, and a broken one should fail at commit
time with every problem listed, not at evaluation time with only the first. This
module is the I/O edge of the package: it reads files, asks `find_problems`, and
prints one line per problem on stdout:

    FILE:LINE: message     a problem on that line (the `fixture line N: ` prefix of
                           the library message is replaced by the `LINE` column)
    FILE: message          a problem of the whole file: unreadable, not UTF-8, or
                           no query cases (no line 0 - editors would jump nowhere)

Beyond the contract, `cce_fixtures.lint` adds errors the reference does not detect
(duplicate ids, a header `corpus` that is not a path) and warnings for what is valid
but almost certainly not meant (a key one typo away from a field, an anchor path the
index never records); warnings print as `FILE:LINE: warning: message`.

Valid files print nothing. Exit status: 0 when no file has an error (warnings alone
pass, unless `--strict`), 1 otherwise, 2 on usage errors (argparse). A reader that closes
the pipe early (`| head -1`) ends the command quietly with status 1; a closed stdout
(`>&-`) or one that fails (`> /dev/full`) is an `error:` on stderr, exit 1, as with `cce`.
A path that is not a regular file (a FIFO, `/dev/zero`) is that file's problem, never read
(`cce_fixtures.input_file`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from cce_fixtures.fixtures import FixtureError, decode_fixture_bytes, find_problems
from cce_fixtures.input_file import MAX_FIXTURE_BYTES, read_input_file
from cce_fixtures.lint import Finding, lint_fixtures

__all__ = ["file_findings", "file_problems", "main", "validate_files"]


def _read_problem(error: OSError) -> str:
    reason = error.strerror or type(error).__name__
    return f"could not read fixtures: {reason}"


def _as_finding(problem: FixtureError) -> Finding:
    return Finding(problem.line, "error", problem.detail)


def _format_finding(path: str, finding: Finding) -> str:
    prefix = path if finding.line is None else f"{path}:{finding.line}"
    label = "warning: " if finding.severity == "warning" else ""
    return f"{prefix}: {label}{finding.message}"


def file_findings(path: str) -> list[Finding]:
    """Every error and warning of the fixture file at `path`, in line order.

    Contract problems come first on their line; file-level ones (unreadable, no cases)
    come last, as `find_problems` orders them.
    """
    try:
        data = read_input_file(path, MAX_FIXTURE_BYTES, "fixture files")
    except OSError as error:
        return [Finding(None, "error", _read_problem(error))]
    try:
        text = decode_fixture_bytes(data)
    except UnicodeDecodeError as error:
        message = f"could not read fixtures: invalid UTF-8 at byte offset {error.start}"
        return [Finding(None, "error", message)]
    findings = [_as_finding(problem) for problem in find_problems(text)]
    findings.extend(lint_fixtures(text, os.path.dirname(path)))
    last = float("inf")
    return sorted(findings, key=lambda finding: last if finding.line is None else finding.line)


def file_problems(path: str) -> list[str]:
    """Every finding of the fixture file at `path`, formatted as the command prints it."""
    return [_format_finding(path, finding) for finding in file_findings(path)]


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
    validate.add_argument(
        "--strict", action="store_true", help="fail (exit 1) on warnings as well as errors"
    )
    return parser


def validate_files(paths: Sequence[str], out: TextIO, *, strict: bool = False) -> int:
    """Print every finding of every file to `out`; 1 when any is an error, else 0.

    With `strict`, warnings fail too.
    """
    status = 0
    for path in paths:
        for finding in file_findings(path):
            print(_format_finding(path, finding), file=out)
            if strict or finding.severity == "error":
                status = 1
    return status


def _say(message: str) -> None:
    """`message` on stderr, if there is a stderr to write to."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=sys.stderr)


def _silence_stdout() -> None:
    """Point fd 1 at the null device, so the flush at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _os_error_text(error: OSError) -> str:
    """Rust's `io::Error` display, as `cce` prints it: `<strerror> (os error <n>)`."""
    if error.errno is not None and error.strerror:
        return f"{error.strerror} (os error {error.errno})"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cce-fixtures` script (and its pre-commit hook); returns the exit
    status.

    Output streams behave as `cce`'s do (docs/hostile-input.md#output-streams-and-interrupts):
    a closed stdout (`>&-`) is refused before any work, and a write to stdout that fails
    (`> /dev/full`) is an `error:` on stderr, exit 1; a reader that stops early
    (`| head -1`) ends the command quietly with status 1.
    """
    if sys.stdout is None:
        _say("error: stdout is closed; nothing was done (redirect it, e.g. > /dev/null)")
        return 1
    arguments = _build_parser().parse_args(argv)
    # Only one subcommand today; argparse has already rejected anything else.
    try:
        status = validate_files(arguments.files, sys.stdout, strict=arguments.strict)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (`| head -1`): that is its choice, not an error to
        # report.
        _silence_stdout()
        return 1
    except OSError as error:
        _silence_stdout()
        _say(f"error: could not write to stdout: {_os_error_text(error)}")
        return 1
    return status
