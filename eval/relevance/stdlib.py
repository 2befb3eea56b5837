"""`code` against `bm25` on hand-written queries over real code every machine has: the
interpreter's standard library.

Why it exists: the development and held-out suites come from one benchmark, whose
queries were written by its authors; `eval/relevance/stdlib.jsonl` is a third,
independent set (60 questions and identifiers a Python developer asks, each naming the
module that answers it, on paths that exist in the 3.11, 3.12 and 3.13 standard
libraries). The corpus is the stdlib mirror of `bench/corpus.py` (`.bench/stdlib`),
made here if it is missing. Usage: `uv run python eval/relevance/stdlib.py` (or
`uv run nox -s ranking`); it prints `cce relevance --compare bm25,code` and exits with
its status.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

from corpus import default_corpus  # noqa: E402

from cce_cli.main import main as cce  # noqa: E402

FIXTURES = os.path.join(HERE, "stdlib.jsonl")


def main() -> int:
    corpus = default_corpus()
    return cce(
        [
            "relevance",
            FIXTURES,
            "--dir",
            corpus,
            "--compare",
            "bm25,code",
            "--metrics",
            "mrr,ndcg,recall",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
