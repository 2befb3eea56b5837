"""The options every building command shares: `--jobs`, `--no-cache`, `--progress`.

Why it exists: `cce index`, `cce conformance` and `cce relevance --dir` all build an
index, and all of them take the same knobs for how fast that goes. None of the knobs
changes a byte of output: they choose the number of worker processes, whether the
incremental build cache (in the user cache directory, or `CCE_CACHE_DIR`) is read and
written, and whether a progress bar is drawn on stderr. See
docs/index-store.md#build-cache and docs/index-store.md#progress. What the knobs do
is `cce_cli.evaluation.building`; this module only turns the flags into `BuildOptions`.
"""

from __future__ import annotations

import argparse

from cce_cli.commands.arguments import positive_int
from cce_cli.evaluation.building import (
    CACHE_DIR_ENV,
    BuildOptions,
)


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """Declare `--jobs N`, `--no-cache` and `--progress/--no-progress`."""
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes for chunking and embedding (default: the CPUs, at most 8)",
    )
    parser.add_argument(
        "--no-cache",
        dest="no_cache",
        action="store_true",
        help=f"neither read nor write the incremental build cache (${CACHE_DIR_ENV} or the "
        "user cache directory)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draw a progress bar on stderr (default: only when stderr is a terminal)",
    )


def build_options(args: argparse.Namespace) -> BuildOptions:
    """The build flags a command was given (the defaults for those it lacks)."""
    return BuildOptions(
        jobs=getattr(args, "jobs", None),
        no_cache=bool(getattr(args, "no_cache", False)),
        progress=getattr(args, "progress", None),
        protection=getattr(args, "protection", None),
        verbose=bool(getattr(args, "verbose", False)),
    )


def add_protection_argument(parser: argparse.ArgumentParser, default: str | None) -> None:
    """`--protection reference|strict` for every command that builds an index."""
    from cce_retrieval import PROTECTIONS

    parser.add_argument(
        "--protection",
        choices=PROTECTIONS,
        default=default,
        help="secret protection: reference (default; byte-identical to the reference "
        "engine) or strict (also skips more credential files and redacts more secret "
        "shapes; docs/hostile-input.md#secrets)",
    )


def add_verbose_argument(parser: argparse.ArgumentParser) -> None:
    """`--verbose` for every command that builds an index and may print notices."""
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print every notice on every run (the --protection strict notice is otherwise "
        "printed once per corpus content; docs/hostile-input.md#secrets)",
    )
