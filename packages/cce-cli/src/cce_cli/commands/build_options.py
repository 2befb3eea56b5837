"""The options every building command shares: `--jobs`, `--no-cache`, `--progress`.

Why it exists: `cce index`, `cce conformance` and `cce relevance --dir` all build an
index, and all of them take the same knobs for how fast that goes. None of the knobs
changes a byte of output: they choose the number of worker processes, whether the
incremental build cache (in the user cache directory, or `CCE_CACHE_DIR`) is read and
written, and whether a progress bar is drawn on stderr. See
docs/index-store.md#build-cache and docs/index-store.md#progress.

Progress uses tqdm: a small, long-maintained, pure-Python dependency whose bars show
rate and ETA and can wait a moment before appearing (`delay`), so quick runs stay
silent. Bars go to stderr only, and by default only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

import attrs

from cce_cli.commands.arguments import positive_int
from cce_retrieval import (
    DEFAULT_CACHE_MAX_BYTES,
    BuildCache,
    CacheSalt,
    ProgressCallback,
    default_jobs,
)

CACHE_DIR_ENV = "CCE_CACHE_DIR"
PROGRESS_DELAY_S = 1.5
"""A bar appears only once the work has taken this long (quick runs stay silent)."""


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


def cache_root() -> str:
    """`$CCE_CACHE_DIR`, else the platform's user cache directory for cce."""
    import platformdirs

    return os.environ.get(CACHE_DIR_ENV) or platformdirs.user_cache_dir("cce", appauthor=False)


def cache_directory() -> str:
    """The build cache: `cache_root()` + `/build`."""
    return os.path.join(cache_root(), "build")


@attrs.frozen(slots=True)
class BuildSettings:
    """How a command builds: worker count, cache (or None) and whether to draw progress."""

    jobs: int
    cache: BuildCache | None
    progress: bool


def build_settings(
    args: argparse.Namespace, protect: bool, embedder: object, protection: str = "reference"
) -> BuildSettings:
    """The settings the parsed options ask for (the defaults when a command lacks them).

    The cache is salted with the protection mode, so it never mixes modes.
    """
    jobs = getattr(args, "jobs", None) or default_jobs()
    cache = None
    if not getattr(args, "no_cache", False):
        salt = CacheSalt.for_build(protect, embedder, protection)
        cache = BuildCache(cache_directory(), salt, DEFAULT_CACHE_MAX_BYTES)
    return BuildSettings(jobs, cache, wants_progress(args))


@contextlib.contextmanager
def progress_bar(
    enabled: bool, description: str, unit: str = "file"
) -> Iterator[ProgressCallback | None]:
    """A `progress(done, total)` callback drawing a tqdm bar on stderr, or None."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    # No monitor thread: the bar is updated on every file anyway, and a build that
    # stays single-threaded can fork its BM25 apart (`cce_retrieval.build.processes`).
    tqdm.monitor_interval = 0
    bar = tqdm(
        desc=description,
        unit=unit,
        file=sys.stderr,
        delay=PROGRESS_DELAY_S,
        leave=False,
        dynamic_ncols=True,
    )

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        bar.close()


def wants_progress(args: argparse.Namespace) -> bool:
    """Whether to draw bars: `--progress`/`--no-progress`, else whether stderr is a
    terminal (never when stderr is closed)."""
    forced = getattr(args, "progress", None)
    if forced is not None:
        return bool(forced)
    return sys.stderr is not None and sys.stderr.isatty()
