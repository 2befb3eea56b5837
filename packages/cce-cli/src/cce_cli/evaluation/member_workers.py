"""How many worker processes a suite's `--jobs N` starts: never more than there are members
to score or cores to run them on.

Why it exists: each worker is a forked copy of the command, with its own index in memory.
`--jobs 48` used to fork 48 of them for 48 members on a two-core machine, so they only
competed for the cores and multiplied the memory; and `--jobs 8` for three members asked
for five workers that had nothing to do. This module owns that cap and the one stderr
line that says it applied (docs/suites.md), and how a suite awaits its members' results,
whether they are scored here, in local processes or on a Dask cluster: in member order,
with a progress line before each wait, every pending member cancelled when one fails.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["available_cores", "collect_in_order", "in_order", "member_workers"]

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def member_workers(jobs: int, members: int) -> int:
    """The worker processes `--jobs jobs` gets for `members` members: at most the members
    and the available cores (at least 1). When that is fewer than asked, one stderr line
    says so and why."""
    cores = available_cores()
    workers = max(1, min(jobs, members, cores))
    if workers < jobs:
        noun = "member" if members == 1 else "members"
        core_noun = "core is" if cores == 1 else "cores are"
        print(
            f"warning: --jobs {jobs}: running {workers} worker "
            f"{'process' if workers == 1 else 'processes'}, since the suite has {members} "
            f"{noun} and {cores} {core_noun} available",
            file=sys.stderr,
        )
    return workers


def in_order(
    items: Sequence[_Item],
    names: Sequence[str],
    result_of: Callable[[_Item, str], _Result],
    progress: Callable[[int, int, str], None] | None,
) -> list[_Result]:
    """`result_of(item, name)` for every item, in order; `progress(done, total, name)`
    before each and `progress(total, total, "")` after the last."""
    results: list[_Result] = []
    for done, item in enumerate(items):
        if progress is not None:
            progress(done, len(items), names[done])
        results.append(result_of(item, names[done]))
    if progress is not None:
        progress(len(items), len(items), "")
    return results


def collect_in_order(
    futures: Sequence[concurrent.futures.Future[_Result]],
    names: Sequence[str],
    result_of: Callable[[concurrent.futures.Future[_Result], str], _Result],
    progress: Callable[[int, int, str], None] | None,
) -> list[_Result]:
    """`in_order` over the futures, each awaited by `result_of(future, name)`. On any
    exception, Ctrl-C included, every future is cancelled before it propagates."""
    try:
        return in_order(futures, names, result_of, progress)
    except BaseException:
        for future in futures:
            future.cancel()
        raise
