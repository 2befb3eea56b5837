"""How an index gets built: worker count, the build cache and the progress bar.

Why it exists: every run that builds an index (a command, a suite member, a Python
caller) takes the same knobs, none of which changes a byte of output: the number of
worker processes, whether the incremental build cache (in the user cache directory, or
`CCE_CACHE_DIR`) is read and written, and whether a progress bar is drawn on stderr
(docs/index-store.md#build-cache, docs/index-store.md#progress). The flags that set them
are `cce_cli.commands.build_options`.

Progress uses tqdm: a small, long-maintained, pure-Python dependency whose bars show
rate and ETA and can wait a moment before appearing (`delay`), so quick runs stay
silent. Bars go to stderr only, and by default only when stderr is a terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import attrs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cce_retrieval import BuildCache, ProgressCallback

__all__ = [
    "CACHE_DIR_ENV",
    "BuildOptions",
    "BuildSettings",
    "cache_directory",
    "cache_root",
    "progress_bar",
]

CACHE_DIR_ENV = "CCE_CACHE_DIR"
PROGRESS_DELAY_S = 1.5
"""A bar appears only once the work has taken this long (quick runs stay silent)."""


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


@attrs.frozen(slots=True)
class BuildOptions:
    """What a run asks of its index builds: `--jobs`, `--no-cache`, `--progress`,
    `--protection` and `--verbose`, as plain values (a suite member's request pickles).

    None means the default: every CPU (at most 8), a terminal on stderr for progress,
    reference protection."""

    jobs: int | None = None
    no_cache: bool = False
    progress: bool | None = None
    protection: str | None = None
    verbose: bool = False

    def wants_progress(self) -> bool:
        """Whether to draw bars: as asked, else whether stderr is a terminal (never
        when stderr is closed)."""
        if self.progress is not None:
            return self.progress
        return sys.stderr is not None and sys.stderr.isatty()

    def settings(
        self, protect: bool, embedder: object, protection: str = "reference"
    ) -> BuildSettings:
        """The worker count, cache and progress these options ask for. The cache is
        salted with the protection mode, so it never mixes modes."""
        from cce_retrieval import DEFAULT_CACHE_MAX_BYTES, BuildCache, CacheSalt, default_jobs

        jobs = self.jobs or default_jobs()
        cache = None
        if not self.no_cache:
            salt = CacheSalt.for_build(protect, embedder, protection)
            cache = BuildCache(cache_directory(), salt, DEFAULT_CACHE_MAX_BYTES)
        return BuildSettings(jobs, cache, self.wants_progress())
