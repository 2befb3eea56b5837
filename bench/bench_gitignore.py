"""Worst-case `.gitignore` lines: RE2 matching time against the backtracking engine's.

Why it exists: a line of stars (`**********a`) or `*a*a*a…b` makes a backtracking matcher
take exponential time on a long file name. Matching runs on RE2, linear in the path; this
script measures the hostile cases on both engines so the gap is visible without a timed
assertion in the test suite. The backtracking side is cut off after `BUDGET_S` per case.
Usage: `uv run python bench/bench_gitignore.py`.
"""

from __future__ import annotations

import multiprocessing
import re
import time

from cce_retrieval.walk.gitignore import compile_regex, glob_to_regex

BUDGET_S = 5.0
# (label, glob, path, stars per run): the last field rebuilds what the translator produced
# before runs of `*` were collapsed (one `[^/]*` per star).
CASES: tuple[tuple[str, str, bytes, int], ...] = (
    ("8 stars + a", "**/" + "*" * 8 + "a", b"b" * 200, 8),
    ("5000 stars + a", "**/" + "*" * 5000 + "a", b"b" * 200, 5000),
    ("(*a)x12 + b", "**/" + "*a" * 12 + "b", b"a" * 200, 1),
    ("(*a)x60 + b", "**/" + "*a" * 60 + "b", b"a" * 4000, 1),
    ("**/ x20 + c", "**/" * 20 + "c", b"a/" * 500, 1),
)


def _backtrack(source: str, path: bytes) -> None:
    re.compile(source.encode("ascii")).match(path)


def main() -> None:
    print(f"{'case':<18} {'re2 (ms)':>10} {'backtracking re (ms)':>22}")
    for label, glob, path, run in CASES:
        source = glob_to_regex(glob)
        matcher = compile_regex(source)
        started = time.perf_counter()
        for _ in range(100):
            matcher.match(path)
        linear_ms = (time.perf_counter() - started) * 1000.0 / 100
        old = source.replace("[^/]*", "[^/]*" * run)
        worker = multiprocessing.Process(target=_backtrack, args=(old, path))
        started = time.perf_counter()
        worker.start()
        worker.join(BUDGET_S)
        if worker.is_alive():
            worker.terminate()
            worker.join()
            backtracking = f"> {BUDGET_S * 1000:.0f} (cut off)"
        else:
            backtracking = f"{(time.perf_counter() - started) * 1000.0:.1f}"
        print(f"{label:<18} {linear_ms:>10.3f} {backtracking:>22}")


if __name__ == "__main__":
    main()
