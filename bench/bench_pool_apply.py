"""`cce pool --apply` on one case with many judged candidates: the time it takes.

Why it exists: a judging file gathers every backend's top results per case, and an
apply weighs each judged candidate against the others of its case (an anchor must not
credit a candidate judged otherwise). This script times the whole command, in process,
on a case of 8,000 and of 50,000 candidates (overlapping chunks in a few hundred files,
judgments mixed), so a quadratic step shows without a timed assertion in the tests.
Usage: `uv run python bench/bench_pool_apply.py [N ...]` (part of `nox -s bench`).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from cce_cli.main import main

SIZES = (8_000, 50_000)
FILES = 400
JUDGMENTS = ("relevant", "secondary", "not", None)


def _judging_line(count: int) -> str:
    chooser = random.Random(count)
    candidates = []
    for n in range(count):
        start = chooser.randint(1, 2_000)
        candidates.append(
            {
                "end_line": start + chooser.randint(0, 40),
                "file_path": f"src/module_{n % FILES}.py",
                "judgment": chooser.choice(JUDGMENTS),
                "kind": chooser.choice(("function_definition", "class_definition", "block")),
                "snippet": "",
                "start_line": start,
            }
        )
    body = {"candidates": candidates, "id": "big", "query": "q", "schema": "cce.judging/v1"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"


def run(count: int) -> float:
    """Seconds `cce pool --apply` takes for one case of `count` candidates."""
    with tempfile.TemporaryDirectory(prefix="cce-bench-pool-") as tmp:
        root = Path(tmp)
        fixtures = root / "draft.jsonl"
        fixtures.write_text('{"id":"big","query":"q","expected":[]}\n', encoding="utf-8")
        judged = root / "judged.jsonl"
        judged.write_text(_judging_line(count), encoding="utf-8")
        argv = ["pool", "--apply", str(judged), str(fixtures), "-o", str(root / "out.jsonl")]
        started = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
        elapsed = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"cce pool --apply exited {code}")
        return elapsed


if __name__ == "__main__":
    # `nox -s bench` hands every script its corpus directories; this one needs none.
    sizes = [int(arg) for arg in sys.argv[1:] if arg.isdigit()] or list(SIZES)
    run(10)  # the command's imports, paid once, are not part of any size's time
    for size in sizes:
        print(f"pool --apply, {size:>7,} candidates in one case: {run(size):8.2f} s")
