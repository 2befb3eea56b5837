"""The definition splitter (`split_unparsed`) checked on a suite read as if no language
were parsed: every file becomes one whole-file chunk, as Go or Java files are today.

Why it exists: the development suite has no unparsed language, so the splitter cannot
change anything there; reading every file as unparsed is the one way to test it on
those queries (docs/ranking.md, "Unparsed languages"). The chunker's language lookup
is switched off in this process only, and the stores are built in a build cache of
their own (`CCE_CACHE_DIR`, default a temporary directory), so no real store or cache
entry ever holds these chunks. Usage:
`uv run python eval/ranking/unparsed.py [SUITE]` (default the semble-dev suite).
"""

from __future__ import annotations

import os
import sys
import tempfile

from ablation import CONFIG, DEFAULT_SUITE

import cce_retrieval.chunk.chunker as chunker
from cce_cli.main import main as cce


def main() -> int:
    suite = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SUITE
    os.environ["CCE_CACHE_DIR"] = tempfile.mkdtemp(prefix="cce-unparsed-")
    # Every file read as an unparsed language: the chunker finds no language pack.
    vars(chunker)["pack_for_path"] = lambda path: None
    return cce(
        [
            "relevance",
            suite,
            "--config",
            CONFIG,
            "--compare",
            "code-11-plurals,code-12-split-unparsed",
            "--metrics",
            "ndcg",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
