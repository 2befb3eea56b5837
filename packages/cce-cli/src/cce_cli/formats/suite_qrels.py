"""A suite's qrels: every member's judged anchors in one TREC file, ids `member/case-id`.

Why it exists: `cce relevance SUITE.toml --export-qrels FILE` must give trec_eval,
ir_measures and ranx the judgments of the whole suite under the query ids the suite's
`--results` run and its report use (`member/case-id`), so the suite's judged run and
these qrels reproduce cce's per-query nDCG and AP (docs/suites.md#running-a-suite). The
qrels depend on the fixtures alone, so they are written from the manifest before any
member is scored; each member's lines are `cce_cli.formats.trec.qrels_text`'s.
"""

from __future__ import annotations

from cce_cli.formats import external_runs
from cce_cli.formats.evidence import read_fixtures
from cce_cli.formats.suite_manifest import SuiteManifest
from cce_cli.formats.trec import qrels_text

__all__ = ["suite_qrels_text", "write_suite_qrels"]


def suite_qrels_text(manifest: SuiteManifest, granularity: str, graded: bool) -> str:
    """Every member's qrels in manifest order, query ids qualified as `member/case-id`."""
    return "".join(
        qrels_text(
            read_fixtures(member.fixtures),
            granularity=granularity,
            graded=graded,
            prefix=f"{member.name}/",
        )
        for member in manifest.members
    )


def write_suite_qrels(path: str, manifest: SuiteManifest, granularity: str, graded: bool) -> None:
    """Write `suite_qrels_text` to `path` atomically; a failure is a CliError naming it."""
    external_runs.write_text(path, suite_qrels_text(manifest, granularity, graded), "qrels")
