"""Where every package's tests find the reference data, and when its absence is an error.

Why it exists: some tests compare the project's outputs with reference data that does not
ship with the repository. They ask for it through the `reference_path` fixture, which reads
the directory from the environment variable `CCE_REFERENCE_DIR`. When the variable is unset
or a requested file is missing the test is skipped, so a plain checkout runs green; with
`CCE_REQUIRE_REFERENCE=1` (CI sets it, see `.ci/run`) the same condition fails the test, so
reference checks can never stop running silently.

The shared development suite of ranking work (`semble-dev`) lies beside the reference
data (`$CCE_REFERENCE_DIR/../bench/semble-dev`, or `../shared/bench/semble-dev` next to
the checkout); the `semble_dev` fixture finds it under the same rule.

This file sits at the workspace root so that the one rule serves all five packages' suites
(pytest loads it for every test path below the root).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

REFERENCE_DIR_ENV = "CCE_REFERENCE_DIR"
REQUIRE_REFERENCE_ENV = "CCE_REQUIRE_REFERENCE"


def _unavailable(why: str) -> None:
    message = f"reference data unavailable: {why}"
    if os.environ.get(REQUIRE_REFERENCE_ENV, "") not in ("", "0"):
        pytest.fail(f"{message} ({REQUIRE_REFERENCE_ENV} is set)", pytrace=False)
    pytest.skip(message)


def _reference_path(*parts: str) -> Path:
    root = os.environ.get(REFERENCE_DIR_ENV, "")
    if not root:
        _unavailable(f"{REFERENCE_DIR_ENV} is not set")
    path = Path(root).absolute().joinpath(*parts)
    if not path.exists():
        _unavailable(f"{path} does not exist")
    return path


@pytest.fixture(scope="session")
def reference_path() -> Callable[..., Path]:
    """`reference_path(*parts)`: the path below `$CCE_REFERENCE_DIR`, or skip (or fail)."""
    return _reference_path


def _semble_dev() -> Path:
    root = os.environ.get(REFERENCE_DIR_ENV, "")
    shared = (
        Path(root).absolute().parent if root else Path(__file__).resolve().parent.parent / "shared"
    )
    path = shared / "bench" / "semble-dev"
    if not (path / "suite.toml").is_file():
        _unavailable(f"the development suite {path} does not exist")
    return path


@pytest.fixture(scope="session")
def semble_dev() -> Path:
    """The shared development suite's folder (suite.toml, fixtures/, corpora/), or skip
    (or fail, with `CCE_REQUIRE_REFERENCE=1`) when it is absent."""
    return _semble_dev()
