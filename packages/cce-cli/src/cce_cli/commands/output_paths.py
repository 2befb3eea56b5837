"""The rule that an output file is never one of the command's own inputs.

Why it exists: `cce relevance fx.jsonl --results fx.jsonl` replaced the hand-labeled
fixtures it had just read, and every command that reads files and writes one has the
same shape (`relevance --results/--export-qrels`, `pool -o`, `queries --fixtures`,
`report -o`). Each such command asks this module, before any work, whether an output
resolves to the same file as an input: same device and inode, so a symlink, a hard link
or another spelling of the path is caught as well as the path itself. A match is a usage
error (exit 2) naming both paths; nothing has been read or written by then.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
from collections.abc import Iterable

from cce_cli.errors import CliError
from cce_cli.evaluation.configurations import discover_config
from cce_cli.formats.external_runs import parse_run_option
from cce_cli.formats.suite_manifest import looks_like_suite, read_manifest
from cce_cli.output import display_text

__all__ = ["USAGE", "evaluation_inputs", "refuse_output_over_input", "suite_member_outputs"]

USAGE = 2

_STDIO = "-"


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the regular file `path` names through links, or None.

    Only a regular file can be replaced by a write; a device, a pipe or a directory
    shared by an input and an output (`/dev/stdout`, `-o DIR`) is not refused."""
    if path == _STDIO:
        return None
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # missing, unreadable, or a NUL in the name
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_dev, info.st_ino


def refuse_output_over_input(
    outputs: Iterable[tuple[str, str | None]], inputs: Iterable[str | None]
) -> None:
    """Raise a usage error when an output is the same file as an input.

    `outputs` are (flag, path) pairs, a None path being an output not asked for;
    `inputs` are the paths the command reads, None for one not given."""
    known: dict[tuple[int, int], str] = {}
    for path in inputs:
        if path is not None:
            identity = _identity(path)
            if identity is not None:
                known.setdefault(identity, path)
    for flag, output in outputs:
        if output is None:
            continue
        identity = _identity(output)
        if identity is None or identity not in known:
            continue
        raise CliError(
            f"{flag} {display_text(output)} is the same file as the input "
            f"{display_text(known[identity])}; "
            "writing it would replace what the command reads. Choose another output path",
            USAGE,
        )


def evaluation_inputs(args: argparse.Namespace) -> list[str | None]:
    """What `cce relevance` and `cce pool` read: the fixtures (or a suite's manifest and
    member fixture files), the configuration, the store and the `--run` files.

    A malformed `--run` or manifest is left out here; the command reports it itself."""
    fixtures = str(args.fixtures)
    inputs: list[str | None] = [fixtures, args.config, args.store]
    if args.config is None:
        with contextlib.suppress(OSError, ValueError):
            inputs.append(discover_config(fixtures))
    for option in args.run:
        with contextlib.suppress(CliError):
            inputs.append(parse_run_option(str(option))[1])
    if looks_like_suite(fixtures):
        with contextlib.suppress(CliError):
            inputs.extend(member.fixtures for member in read_manifest(fixtures).members)
    return inputs


def suite_member_outputs(args: argparse.Namespace, flag: str) -> list[tuple[str, str | None]]:
    """`DIR/<member>.jsonl` for each member of the suite `cce pool --apply ... -o DIR`
    writes, or nothing when the fixtures are not a readable suite."""
    fixtures = str(args.fixtures)
    if args.output is None or not looks_like_suite(fixtures):
        return []
    try:
        members = read_manifest(fixtures).members
    except CliError:
        return []
    return [(flag, os.path.join(str(args.output), f"{member.name}.jsonl")) for member in members]
