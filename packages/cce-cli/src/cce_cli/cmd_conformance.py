"""`cce conformance` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse

from cce_cli.errors import CliError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise CliError("cce conformance is not implemented yet")
