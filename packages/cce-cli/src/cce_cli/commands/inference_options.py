"""The flags that say what a comparison's test is about: `--mean`, `--unit`, `--tag-correction`.

Why it exists: `cce diff` on two suite reports and `cce relevance SUITE.toml --compare`
test a suite's change the same way, so they declare the same flags here: which mean the
headline, test, interval and floors use (`--mean macro|micro`), whether the queries or
the members are the unit (`--unit query|member`), and, with `--by-tag`, whether the
correction adjusts within each tag or over every tag × metric (`--tag-correction`).
Their meaning lives in `cce_cli.compare.suite_inference` and `cce_cli.compare.tag_family`
(docs/statistics.md#query-level-versus-member-level-inference).
"""

from __future__ import annotations

import argparse

from cce_cli.compare.suite_inference import SUITE_MEANS, SUITE_UNITS
from cce_cli.compare.tag_family import TAG_SCOPES

__all__ = ["add_inference_arguments"]


def add_inference_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare `--mean`, `--unit` and `--tag-correction` (dests `mean`, `unit`, `tag_scope`)."""
    parser.add_argument(
        "--mean",
        choices=SUITE_MEANS,
        default=None,
        help="for suites, the mean the headline, test, interval and --min floors use: "
        "macro (default; each member counts once, a weighted paired test) or micro "
        "(every query pooled)",
    )
    parser.add_argument(
        "--unit",
        choices=SUITE_UNITS,
        default="query",
        help="for suites, the unit of the paired test: query (default) or member (the "
        "members' mean deltas; evidence about repositories outside the suite)",
    )
    parser.add_argument(
        "--tag-correction",
        choices=TAG_SCOPES,
        default="tag",
        dest="tag_scope",
        help="with --by-tag, adjust p within each tag (default) or over every tag x "
        "metric at once (family)",
    )
