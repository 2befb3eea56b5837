"""What a suite's HTML page shows when a query is opened: each member's results, with the
code from that member's own corpus.

Why it exists: members search different corpora, and two corpora may both hold a
`README.md` at lines 1-20; the page keys code by path and lines, so a suite's results
are qualified as `member/path` (and their ids as `member/case-id`) before they meet.
The code is the one each member's store kept (`stored_code`: protected, cut to the
shown lines), never read back from the files (docs/reports.md#suites). This module
owns that qualification and assembles the one `Evidence` of the suite.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import attrs

from cce_cli.formats.evidence import Evidence, evidence_from_runs
from cce_cli.formats.results_file import RUN_SCHEMA, parse_run
from cce_fixtures import FixtureSet

__all__ = ["MemberEvidence", "member_evidence", "suite_evidence", "suite_results_evidence"]

CodeByLines = Mapping[tuple[str, int, int], tuple[str, ...]]


@attrs.frozen(slots=True)
class MemberEvidence:
    """One member's results as `cce.run/v1` record lines and the code of each result,
    ids and paths qualified by the member's name."""

    lines: str
    code: CodeByLines


def member_evidence(name: str, run_text: str, code: CodeByLines) -> MemberEvidence:
    """Qualify a member's run (its header dropped) and its stored code by `name/`."""
    prefix = f"{name}/"
    lines = []
    for line in run_text.splitlines()[1:]:
        record = json.loads(line)
        record["id"] = prefix + str(record.get("id", ""))
        for result in record.get("results") or ():
            if isinstance(result, dict):
                result["file_path"] = prefix + str(result.get("file_path", ""))
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    qualified = {(prefix + path, start, end): text for (path, start, end), text in code.items()}
    return MemberEvidence("".join(line + "\n" for line in lines), qualified)


def suite_evidence(members: Sequence[MemberEvidence], fixtures: FixtureSet) -> Evidence:
    """The evidence of the whole suite: every member's results and code, and the
    fixtures' query text and expected anchors (ids qualified alike)."""
    header = json.dumps({"schema": RUN_SCHEMA})  # no corpus: no file is read back
    text = header + "\n" + "".join(member.lines for member in members)
    code: dict[tuple[str, int, int], tuple[str, ...]] = {}
    for member in members:
        code.update(member.code)
    evidence = evidence_from_runs([("this suite", text)], fixtures=fixtures, stored=code)
    # Anchors name paths in the member's corpus: shown qualified, like the results.
    anchors = {
        case_id: tuple(f"{case_id.split('/', 1)[0]}/{anchor}" for anchor in found)
        for case_id, found in evidence.anchors.items()
    }
    return attrs.evolve(evidence, anchors=anchors)


def _one_results_file(
    path: str, text: str, corpora: Mapping[str, str | None], fixtures: FixtureSet
) -> Evidence:
    parse_run(text, path)  # every problem of the file named before anything is read
    by_member: dict[str, list[str]] = {}
    for line in text.splitlines()[1:]:
        if not line.strip():
            continue
        record = json.loads(line)
        case_id = str(record.get("id", ""))
        name = str(record.get("member") or case_id.split("/", 1)[0])
        if case_id.startswith(f"{name}/"):
            record["id"] = case_id[len(name) + 1 :]
        by_member.setdefault(name, []).append(json.dumps(record, sort_keys=True))
    header = json.dumps({"schema": RUN_SCHEMA})
    members = []
    for name, rows in by_member.items():
        member_text = header + "\n" + "".join(row + "\n" for row in rows)
        root = corpora.get(name)
        # Read back from the member's own corpus through strict protection, and shown
        # only when that text still yields the chunk the results name (read_code).
        code = {} if root is None else evidence_from_runs([(path, member_text)], corpus=root).code
        members.append(member_evidence(name, member_text, code))
    return suite_evidence(members, fixtures)


def suite_results_evidence(
    files: Sequence[tuple[str, str]], corpora: Mapping[str, str | None], fixtures: FixtureSet
) -> Evidence:
    """The evidence of a suite's `--results` files ((path, text) pairs; with two, the
    base's and the head's): each member's results read against `corpora[member]`, the
    member's own corpus (None: no code for it), paths and ids qualified."""
    loaded = [_one_results_file(path, text, corpora, fixtures) for path, text in files]
    code: dict[tuple[str, int, int], tuple[str, ...]] = {}
    for evidence in loaded:
        code.update(evidence.code)
    return attrs.evolve(
        loaded[0], runs=tuple(run for evidence in loaded for run in evidence.runs), code=code
    )
