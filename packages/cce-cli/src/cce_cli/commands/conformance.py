"""`cce conformance DIR [-o PATH]`: write the cross-implementation chunk table
(docs/index-store.md#conformance-document).

Why it exists: the conformance document is how this port proves it chunks exactly like
the reference. The command builds the index in memory (hash embedder, secret
protection on, nothing persisted beside it), writes the document atomically (a failed
write leaves the previous file) and prints `wrote <PATH>`.
"""

from __future__ import annotations

import argparse
import os

import attrs

from cce_cli.commands.build_options import (
    add_build_options,
    add_protection_argument,
    add_verbose_argument,
    build_options,
)
from cce_cli.errors import CliError
from cce_cli.evaluation.building import BuildOptions
from cce_cli.evaluation.indexes import (
    build_or_fail,
    print_protection_notice,
)
from cce_cli.output import display_text, write_output, write_stdout
from cce_retrieval import (
    DEFAULT_PROTECTION,
    HashEmbedder,
    conformance_document,
    describe_os_error,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="fixture directory to chunk")
    parser.add_argument(
        "-o",
        "--output",
        default="conformance.json",
        help="output file (default: ./conformance.json)",
    )
    add_build_options(parser)
    add_protection_argument(parser, DEFAULT_PROTECTION)
    add_verbose_argument(parser)


@attrs.frozen(slots=True)
class ConformanceRequest:
    """One `cce conformance`: the directory to chunk, where the document goes, and how
    the in-memory build runs."""

    directory: str
    output: str = "conformance.json"
    build: BuildOptions = attrs.field(factory=BuildOptions)


def conformance_request(args: argparse.Namespace) -> ConformanceRequest:
    """The conformance run the parsed arguments ask for."""
    return ConformanceRequest(str(args.dir), str(args.output), build_options(args))


def run(args: argparse.Namespace) -> int:
    return write_conformance(conformance_request(args))


def write_conformance(request: ConformanceRequest) -> int:
    """Build `request.directory` in memory and write its conformance document."""
    directory = request.directory
    output = request.output
    if not os.path.isdir(directory):
        raise CliError(f"not a directory: {directory}")
    result = build_or_fail(directory, HashEmbedder(), build=request.build)
    document = conformance_document(result.index)
    try:
        write_output(output, document.encode("utf-8"))
    except OSError as err:
        raise CliError(f"could not write {output}: {describe_os_error(err)}") from err
    write_stdout(f"wrote {display_text(output)}\n")
    print_protection_notice(result, request.build.verbose)
    return 0
