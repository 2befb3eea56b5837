"""Shared fixtures for the cce-metrics tests: where the read-only reference data lives."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def reference_dir() -> Path:
    """<repo>/../shared/reference, or skip when this checkout has no reference data."""
    path = Path(__file__).parents[3] / ".." / "shared" / "reference"
    if not path.is_dir():
        pytest.skip("reference data (../shared/reference) is not available")
    return path
