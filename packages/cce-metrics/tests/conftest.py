"""Shared fixtures for the cce-metrics tests: where the read-only reference data lives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def reference_dir(reference_path: Callable[..., Path]) -> Path:
    """The reference data directory (`CCE_REFERENCE_DIR`; the root conftest skips without it)."""
    return reference_path()
