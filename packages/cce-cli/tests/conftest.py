"""Shared test set-up for cce-cli: keep every command's build cache inside the test run.

Commands cache per-file build results in the user cache directory by default; tests
point `CCE_CACHE_DIR` at a temporary directory instead, so they neither read a
developer's cache nor leave anything behind.
"""

from __future__ import annotations

import pathlib

import pytest


@pytest.fixture(autouse=True)
def _private_build_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("cce-cache")
    monkeypatch.setenv("CCE_CACHE_DIR", str(directory))
    return directory
