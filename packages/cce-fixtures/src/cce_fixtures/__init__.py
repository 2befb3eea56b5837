"""cce-fixtures: the `cce.relevance/v1` fixture contract, usable on its own.

Why it exists: labelled relevance fixtures are shared between the `cce relevance`
harness, other evaluation tools and a pre-commit hook, and all of them must read a
fixture exactly as the Rust reference does. This package owns that contract - the
anchor grammar and matching, case parsing with line-numbered errors, and the
`cce-fixtures validate` command - and depends on nothing else of ours.
"""

from cce_fixtures.anchor import Anchor, AnchorError, SearchHit
from cce_fixtures.fixtures import (
    DEFAULT_K,
    SCHEMA_ID,
    Case,
    FixtureError,
    FixtureSet,
    decode_fixture_bytes,
    find_problems,
    fixture_converter,
    parse_fixtures,
)

__all__ = [
    "DEFAULT_K",
    "SCHEMA_ID",
    "Anchor",
    "AnchorError",
    "Case",
    "FixtureError",
    "FixtureSet",
    "SearchHit",
    "decode_fixture_bytes",
    "find_problems",
    "fixture_converter",
    "parse_fixtures",
]
