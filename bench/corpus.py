"""Benchmark corpora: the interpreter's own standard library, laid out as a plain tree.

Why it exists: benchmarks should run on real code every machine has. The stdlib
directory of an installed Python also holds `site-packages` (whatever happens to be
installed, so not comparable across machines), so this module mirrors only the
stdlib's own source files into a scratch directory with hard links (copies where
links are impossible) and reuses that mirror across runs.
"""

from __future__ import annotations

import os
import shutil
import sysconfig

SOURCE_SUFFIXES = (".py", ".c", ".h", ".rs", ".js", ".ts", ".rb", ".md")
EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})


def stdlib_dir() -> str:
    return sysconfig.get_paths()["stdlib"]


def mirror_stdlib(dest: str) -> str:
    """Mirror the stdlib's source files into `dest` (once) and return `dest`."""
    marker = dest.rstrip(os.sep) + ".complete"
    if os.path.exists(marker):
        return dest
    if os.path.exists(dest):
        shutil.rmtree(dest)
    source = stdlib_dir()
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDED_DIRS)
        rel = os.path.relpath(dirpath, source)
        for name in filenames:
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            src = os.path.join(dirpath, name)
            if os.path.islink(src) or not os.path.isfile(src):
                continue
            target_dir = os.path.normpath(os.path.join(dest, rel))
            os.makedirs(target_dir, exist_ok=True)
            target = os.path.join(target_dir, name)
            try:
                os.link(src, target)
            except OSError:
                shutil.copyfile(src, target)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(source + "\n")
    return dest


def default_corpus() -> str:
    """The stdlib mirror under `.bench/stdlib` at the repository root."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return mirror_stdlib(os.path.join(root, ".bench", "stdlib"))
