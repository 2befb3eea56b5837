"""The options that attach evidence to a report: `--results`, `--fixtures`, `--corpus`.

Why it exists: `cce report` and `cce diff` show, beside the scores, each query's text,
its expected anchors and what each side retrieved (with code). Both commands take the
same three options and read them the same way; this module owns their declaration and
turns them into an `Evidence` (docs/reports.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cce_cli.formats.evidence import Evidence, load_evidence, read_fixtures

__all__ = ["add_evidence_arguments", "evidence_for", "evidence_from_args"]


def add_evidence_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare `--results FILE...`, `--fixtures FILE` and `--corpus DIR`."""
    parser.add_argument(
        "--results",
        metavar="FILE",
        nargs="+",
        action="extend",
        default=[],
        help="cce.run/v1 results files (cce relevance --results) whose top k the HTML "
        "report shows per query; with two, the first is the base's and the second the head's",
    )
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="the fixture file: each query's text and expected anchors",
    )
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help="where the results' files are, when not where the results file says",
    )


def evidence_from_args(args: argparse.Namespace) -> Evidence | None:
    """The evidence the options name, or None when none is given."""
    return evidence_for(
        tuple(str(path) for path in args.results),
        None if args.fixtures is None else str(args.fixtures),
        None if args.corpus is None else str(args.corpus),
    )


def evidence_for(
    results: Sequence[str], fixtures: str | None, corpus: str | None
) -> Evidence | None:
    """The evidence of `--results`, `--fixtures` and `--corpus` as a request holds them,
    or None when neither results nor fixtures are given."""
    if not results and fixtures is None:
        return None
    fixture_set = None if fixtures is None else read_fixtures(fixtures)
    return load_evidence(list(results), corpus=corpus, fixtures=fixture_set)
