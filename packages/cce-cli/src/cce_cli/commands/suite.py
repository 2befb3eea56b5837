"""`cce suite fetch SUITE.toml`: prepare every member's corpus before a run.

Why it exists: a suite's git members are cloned into the cache directory on first use;
on a new machine or in CI that is minutes of network before the first query. Fetching
ahead makes the run itself offline and its time the scoring's alone, and shows, member
by member, where each corpus is (docs/suites.md#corpora). It changes nothing that is
already in place: a checkout at its pinned commit is reused as it is.
"""

from __future__ import annotations

import argparse
import sys

from cce_cli.errors import CliError
from cce_cli.evaluation.corpora import member_corpus
from cce_cli.formats.suite_manifest import GitCorpus, read_manifest
from cce_cli.output import display_text, write_stdout
from cce_cli.runs.suite import suite_cache_root


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("fetch",), help="fetch: check out every git member")
    parser.add_argument("manifest", metavar="SUITE.toml", help="a cce.suite/v1 manifest")


def run(args: argparse.Namespace) -> int:
    manifest = read_manifest(str(args.manifest))
    if args.action != "fetch":  # argparse's choices keep this unreachable
        raise CliError(f"unknown suite action {args.action!r}", 2)
    cache = suite_cache_root()
    lines = []
    total = len(manifest.members)
    for done, member in enumerate(manifest.members, 1):
        corpus = member_corpus(member, cache)
        if isinstance(member.corpus, GitCorpus):
            source = f"{member.corpus.url} @ {member.corpus.rev}"
        else:
            source = "local directory"
        print(f"[{done}/{total}] {member.name}: {display_text(corpus)}", file=sys.stderr)
        lines.append(f"{member.name}\t{display_text(corpus)}\t{display_text(source)}\n")
    write_stdout("".join(lines))
    return 0
