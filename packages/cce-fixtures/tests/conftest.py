"""Shared test helpers for cce-fixtures: a minimal search hit and the reference data path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs
import pytest


@attrs.frozen
class FakeHit:
    """A search result with only the fields anchor matching reads."""

    file_path: str
    kind: str
    start_line: int
    end_line: int


HitFactory = Callable[[str, str, int, int], FakeHit]


@pytest.fixture
def make_hit() -> HitFactory:
    """Build a search hit from (file, kind, start line, end line)."""
    return FakeHit


@pytest.fixture
def reference_relevance_dir(reference_path: Callable[..., Path]) -> Path:
    """`eval/relevance` of the reference data (`CCE_REFERENCE_DIR`; skipped without it)."""
    return reference_path("eval", "relevance")


@pytest.fixture
def repo_root() -> Path:
    """The workspace root (holds .pre-commit-hooks.yaml)."""
    return Path(__file__).parents[3]
