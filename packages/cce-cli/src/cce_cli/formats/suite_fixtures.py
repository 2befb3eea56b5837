"""The fixtures behind a report's queries, whether the report is one run or a suite.

Why it exists: `cce diff --fixtures` and `cce report --fixtures` add each query's text
and expected anchors to the reviewer's pages. A suite report's ids are `member/case-id`,
so its fixtures are the manifest's members' files with their ids qualified the same way;
and a manifest cce does not recognise (no `schema`, another version) must be named as
such, with what it lacks, instead of being read as a fixture file whose second line is
not JSON. This module owns that choice: a manifest goes through `read_manifest` (its
errors name the file and the fix), anything else through `read_fixtures`.
"""

from __future__ import annotations

import attrs

from cce_cli.errors import CliError
from cce_cli.formats.evidence import read_fixtures
from cce_cli.formats.suite_manifest import (
    SUITE_SCHEMA,
    looks_like_suite,
    read_manifest,
    toml_unless_json,
)
from cce_fixtures import FixtureSet

__all__ = ["read_fixtures_or_suite", "refuse_unrecognised_manifest"]


def _reads_as_toml(path: str) -> bool:
    """Whether `path` is TOML rather than JSON lines: what a manifest missing both its
    `schema` and its `[[members]]` still is."""
    return bool(toml_unless_json(path))


def read_fixtures_or_suite(path: str) -> FixtureSet:
    """The fixture file at `path`, or, for a suite manifest, every member's fixtures in
    manifest order with ids `member/case-id` (the ids of a suite report)."""
    if looks_like_suite(path):
        manifest = read_manifest(path)
        cases = []
        for member in manifest.members:
            fixtures = read_fixtures(member.fixtures)
            cases += [attrs.evolve(case, id=f"{member.name}/{case.id}") for case in fixtures.cases]
        return FixtureSet(None, tuple(cases))
    refuse_unrecognised_manifest(path)
    return read_fixtures(path)


def refuse_unrecognised_manifest(path: str) -> None:
    """A CliError naming `path` when it is TOML that is no suite manifest (no `schema`,
    no `[[members]]`): read as fixtures it would fail on its second line, unnamed."""
    if _reads_as_toml(path):
        raise CliError(
            f"{path}: neither a fixture file (JSON lines) nor a suite manifest cce reads: it "
            "is TOML with no schema and no [[members]]; a suite declares "
            f'schema = "{SUITE_SCHEMA}" and one [[members]] table per member (docs/suites.md)'
        )
