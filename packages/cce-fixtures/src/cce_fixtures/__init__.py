"""cce-fixtures: the `cce.relevance/v1` fixture contract, usable on its own.

Why it exists: labelled relevance fixtures are shared between the `cce relevance`
harness, other evaluation tools and a pre-commit hook, and all of them must read a
fixture exactly as the Rust reference does. This package owns that contract - the
anchor grammar and matching, case parsing with line-numbered errors, the checks
for what the contract allows but an author rarely means, and the
`cce-fixtures validate` command - and depends on nothing else of ours.
"""

from cce_fixtures.anchor import Anchor, AnchorError, SearchHit
from cce_fixtures.fixtures import (
    DEFAULT_K,
    MAX_K,
    SCHEMA_ID,
    Case,
    FixtureError,
    FixtureSet,
    decode_fixture_bytes,
    find_problems,
    fixture_converter,
    parse_fixtures,
)
from cce_fixtures.lint import (
    Finding,
    is_absolute_anchor_path,
    lint_fixtures,
    normalised_anchor_path,
)

__all__ = [
    "DEFAULT_K",
    "MAX_K",
    "SCHEMA_ID",
    "Anchor",
    "AnchorError",
    "Case",
    "Finding",
    "FixtureError",
    "FixtureSet",
    "SearchHit",
    "decode_fixture_bytes",
    "find_problems",
    "fixture_converter",
    "is_absolute_anchor_path",
    "lint_fixtures",
    "normalised_anchor_path",
    "parse_fixtures",
]
