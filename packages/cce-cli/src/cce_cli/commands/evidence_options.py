"""The options that attach evidence to a report: `--results`, `--fixtures`, `--corpus`.

Why it exists: `cce report` and `cce diff` show, beside the scores, each query's text,
its expected anchors and what each side retrieved (with code). Both commands take the
same three options and read them the same way; this module owns their declaration and
turns them into an `Evidence` (docs/reports.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from cce_cli.formats.evidence import Evidence, load_evidence, read_results_text
from cce_cli.formats.suite_evidence import suite_results_evidence
from cce_cli.formats.suite_fixtures import read_fixtures_or_suite
from cce_cli.formats.suite_manifest import (
    GitCorpus,
    SuiteManifest,
    looks_like_suite,
    read_manifest,
)

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
        help="the fixture file (or the suite manifest, for suite reports): each query's text "
        "and expected anchors",
    )
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help="where the results' files are, when not where the results file says",
    )


def _suite_corpora(manifest: SuiteManifest) -> dict[str, str | None]:
    """Each member's corpus directory as it is on this machine, without fetching: a
    local corpus, or a git member's cached checkout when there is one."""
    from cce_cli.evaluation.building import cache_root
    from cce_cli.evaluation.corpora import checkout_path

    corpora: dict[str, str | None] = {}
    for member in manifest.members:
        if isinstance(member.corpus, GitCorpus):
            checkout = checkout_path(member.corpus, cache_root())
            root = os.path.join(checkout, member.corpus.root or "")
            corpora[member.name] = root if os.path.isdir(root) else None
        else:
            corpora[member.name] = member.corpus
    return corpora


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
    or None when neither results nor fixtures are given. With a suite manifest as
    `--fixtures`, the results are a suite's: each member's code is read from its own
    corpus."""
    if not results and fixtures is None:
        return None
    if results and fixtures is not None and looks_like_suite(fixtures):
        manifest = read_manifest(fixtures)
        texts = [(path, read_results_text(path)) for path in results]
        return suite_results_evidence(
            texts, _suite_corpora(manifest), read_fixtures_or_suite(fixtures)
        )
    fixture_set = None if fixtures is None else read_fixtures_or_suite(fixtures)
    return load_evidence(list(results), corpus=corpus, fixtures=fixture_set)
