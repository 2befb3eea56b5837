"""Time and disk of fetching a suite's git members from local `file://` mirrors.

Why it exists: a benchmark of twenty repositories must be ready in seconds from mirrors,
not minutes, and not cost gigabytes of history nobody scores. This builds one mirror
repository with long history (300 commits, each rewriting one of five 150 KB random
files, plus a small `src/`), reached through 20 different URLs (symbolic links, so each
member is its own checkout), then times `cce suite fetch` of the 20 members three ways:
whole commits, with `root = "src"`, and with `root` when the mirror allows filters;
beside it, 20 full `git clone`s of the same (what an unshallow fetch costs). Prints
seconds and megabytes of each. Usage: `uv run python bench/bench_suite_fetch.py`.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time

MEMBERS = 20
COMMITS = 300
BLOB_BYTES = 150_000


def git(*argv: str, cwd: str | None = None, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, input=stdin, capture_output=True, check=True)
    return done.stdout.decode().strip()


def make_mirror(where: str) -> tuple[str, str]:
    mirror = os.path.join(where, "mirror")
    git("init", "--quiet", mirror)
    rng = random.Random(7)
    stream = bytearray()
    for number in range(COMMITS):
        data = rng.randbytes(BLOB_BYTES)
        code = f"print({number})\n".encode()
        stream += b"commit refs/heads/main\ncommitter c <c@c> %d +0000\ndata 2\nc\n" % (
            1_000_000_000 + number
        )
        stream += b"M 644 inline blob%d.bin\ndata %d\n%s\n" % (number % 5, len(data), data)
        stream += b"M 644 inline src/code.py\ndata %d\n%s\n" % (len(code), code)
    git("fast-import", "--quiet", cwd=mirror, stdin=bytes(stream))
    return mirror, git("rev-parse", "main", cwd=mirror)


def size_mb(path: str) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total / 1e6


def fetch(where: str, urls: list[str], rev: str, root: str, label: str) -> None:
    manifest = os.path.join(where, f"{label}.toml")
    with open(os.path.join(where, "f.jsonl"), "w", encoding="utf-8") as handle:
        handle.write('{"schema":"cce.relevance/v1"}\n')
    tables = ['schema = "cce.suite/v1"\n']
    for number, url in enumerate(urls):
        tables.append(
            f'\n[[members]]\nname = "m{number}"\nfixtures = "f.jsonl"\n'
            f'git = "{url}"\nrev = "{rev}"\n' + (f'root = "{root}"\n' if root else "")
        )
    with open(manifest, "w", encoding="utf-8") as handle:
        handle.write("".join(tables))
    cache = os.path.join(where, f"cache-{label}")
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cce_cli", "suite", "fetch", manifest],
        env={**os.environ, "CCE_CACHE_DIR": cache},
        capture_output=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    print(f"{label:<28} {seconds:6.2f} s {size_mb(cache):8.1f} MB")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cce-bench-fetch-") as where:
        mirror, rev = make_mirror(where)
        urls = []
        for number in range(MEMBERS):
            link = os.path.join(where, f"mirror{number}")
            os.symlink(mirror, link)
            urls.append(f"file://{link}")
        print(f"{MEMBERS} members, mirror history {size_mb(os.path.join(mirror, '.git')):.1f} MB")
        fetch(where, urls, rev, "", "whole commit")
        fetch(where, urls, rev, "src", "root = src")
        git("config", "uploadpack.allowFilter", "true", cwd=mirror)
        fetch(where, urls, rev, "src", "root = src, filters allowed")
        started = time.perf_counter()
        full = os.path.join(where, "full")
        for number, url in enumerate(urls):
            git("clone", "--quiet", url, os.path.join(full, str(number)))
        seconds = time.perf_counter() - started
        print(f"{'full clones (baseline)':<28} {seconds:6.2f} s {size_mb(full):8.1f} MB")


if __name__ == "__main__":
    main()
