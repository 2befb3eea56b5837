"""`cce import FORMAT ...`: turn another benchmark's files into a cce suite.

Why it exists: public code-search benchmarks ship their labels in formats of their own;
importing them once gives a `cce.suite/v1` manifest and one `cce.relevance/v1` fixture
file per repository, which cce reads like any hand-written set. This module owns the
command's arguments, one sub-command per format (`semble`), and the summary it prints
(one line per fixture file, then the manifest); the conversion and the writing live in
`cce_cli.formats.semble`. The module is not called `import`, a Python keyword.
Documented in docs/relevance.md#importing-the-semble-benchmark.
"""

from __future__ import annotations

import argparse
import os

from cce_cli.formats.semble import MANIFEST_NAME, convert, write_suite
from cce_cli.output import write_stdout

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare `cce import`'s formats and their arguments."""
    formats = parser.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    semble = formats.add_parser(
        "semble",
        help="the semble benchmark: annotations/<name>.json files plus a repositories file",
        description="write a cce.suite/v1 manifest (DIR/suite.toml) and one fixture file "
        "per repository (DIR/fixtures/<name>.jsonl) from the semble benchmark's files",
    )
    semble.add_argument(
        "annotations",
        metavar="ANNOTATIONS_DIR",
        help="directory of <name>.json task lists, one per repository",
    )
    semble.add_argument(
        "--repos",
        required=True,
        metavar="REPOS.json",
        help="the repositories: name, language, url, revision, benchmark_root",
    )
    semble.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the suite directory to create; it must not exist or be empty",
    )


def _queries(count: int) -> str:
    return f"{count} quer{'y' if count == 1 else 'ies'}"


def run(args: argparse.Namespace) -> int:
    """Convert everything first, then write it all at once; list what was written."""
    suite = convert(args.annotations, args.repos)
    write_suite(suite, args.output)
    lines = [f"{member.fixtures}: {_queries(member.cases)}" for member in suite.members]
    total = sum(member.cases for member in suite.members)
    lines.append(
        f"{os.path.join(args.output, MANIFEST_NAME)}: {len(suite.members)} member(s), "
        f"{_queries(total)}"
    )
    write_stdout("".join(line + "\n" for line in lines))
    return 0
