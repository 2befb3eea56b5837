"""The import contracts that `nox -s lint` runs hold, and they fail when they should.

Why it exists: docs/architecture.md#layers promises that the packages' layers, their
boundaries and the absence of import cycles are enforced by import-linter (the
`[tool.importlinter]` contracts of pyproject.toml). A contract that never fails
enforces nothing, so each test copies the packages' sources to a temporary directory,
injects one forbidden import (an upward one, a cycle, a leaf package reaching another,
argparse below the commands)
and runs `lint-imports` on the copy with the project's own configuration: the named
contract must break, and the untouched copy must keep every contract.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cce-stats", "cce-fixtures", "cce-metrics", "cce-retrieval", "cce-cli")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A copy of every package's `src` tree and of the configuration, side by side."""
    for package in PACKAGES:
        shutil.copytree(
            ROOT / "packages" / package / "src",
            tmp_path / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(copy: Path, contract: str | None = None) -> tuple[int, str]:
    """`lint-imports` on the copy (it is first on the path), output's whitespace folded."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(copy / package) for package in PACKAGES)
    command = [str(LINT_IMPORTS), "--no-cache", str(copy / "pyproject.toml")]
    if contract is not None:
        command += ["--contract", contract]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=copy, env=env, timeout=300, check=False
    )
    return done.returncode, re.sub(r"\s+", " ", done.stdout + done.stderr)


def _inject(copy: Path, module: str, line: str) -> None:
    """Prepend `line` to `module` (a path below a package's `src`), after its docstring."""
    path = copy / module
    text = path.read_text(encoding="utf-8")
    marker = "from __future__ import annotations\n"
    assert marker in text, module
    path.write_text(text.replace(marker, marker + line + "\n", 1), encoding="utf-8")


def test_the_copied_sources_keep_every_contract(sources: Path) -> None:
    status, output = _lint(sources)
    assert status == 0, output
    assert "Contracts: 6 kept, 0 broken." in output


def test_an_upward_import_in_cce_cli_breaks_its_layers(sources: Path) -> None:
    # formats/ is below commands/: reading a file format must not reach a command.
    _inject(sources, "cce-cli/cce_cli/formats/json_text.py", "import cce_cli.commands.relevance")
    status, output = _lint(sources, "cli-layers")
    assert status == 1
    assert "cce-cli layers: entry, main, commands, runs, render" in output
    assert "BROKEN" in output
    assert "cce_cli.formats is not allowed to import cce_cli.commands" in output


def test_a_cycle_inside_one_layer_breaks_the_acyclic_contract(sources: Path) -> None:
    # render/diff imports render/changes; the reverse closes a cycle that no layer
    # contract sees, since both modules are in the same layer.
    _inject(sources, "cce-cli/cce_cli/render/changes.py", "import cce_cli.render.diff")
    status, layered = _lint(sources, "cli-layers")
    assert status == 0, layered
    status, output = _lint(sources, "cli-acyclic")
    assert status == 1
    assert "no import cycle among siblings" in output and "BROKEN" in output
    assert "cce_cli.render" in output


def test_a_leaf_package_importing_another_breaks_the_package_boundary(sources: Path) -> None:
    _inject(sources, "cce-stats/cce_stats/__init__.py", "import cce_metrics")
    status, output = _lint(sources, "packages")
    assert status == 1
    assert "only cce-cli composes the packages" in output and "BROKEN" in output
    assert "cce_stats is not allowed to import cce_metrics" in output


def test_an_upward_import_in_cce_retrieval_breaks_its_pipeline_order(sources: Path) -> None:
    # walk/ runs before the store exists: it must not know about it.
    _inject(sources, "cce-retrieval/cce_retrieval/walk/walker.py", "import cce_retrieval.store")
    status, output = _lint(sources, "retrieval-layers")
    assert status == 1
    assert "cce_retrieval.walk is not allowed to import cce_retrieval.store" in output


def test_a_deep_import_of_cce_retrieval_from_cce_cli_is_refused(sources: Path) -> None:
    _inject(sources, "cce-cli/cce_cli/formats/trec.py", "import cce_retrieval.rank.bm25")
    status, output = _lint(sources, "retrieval-public-api")
    assert status == 1
    assert "cce-cli reaches cce-retrieval only through its top-level names" in output
    assert "BROKEN" in output


def test_argparse_below_the_commands_is_refused(sources: Path) -> None:
    # A run reaches the layers below the commands as a typed request, never as a Namespace.
    _inject(sources, "cce-cli/cce_cli/compare/gate.py", "import argparse")
    status, output = _lint(sources, "no-argparse-below-commands")
    assert status == 1
    assert "cce_cli.compare.gate -> argparse" in output
