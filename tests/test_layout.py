"""The layout a newcomer reads stays true: the package boundary, and every list of commands.

Why it exists: docs/architecture.md#layout-the-pipeline-in-the-folders promises that
cce-cli reaches cce_retrieval only through its public API, enforced by ruff's banned-api
list in packages/cce-cli/ruff.toml; these tests keep that list equal to the subpackages
on disk and show that the rule fires. Command inventories (the README's package table
and command list, docs/architecture.md's package table) are checked against
`cce_cli.main.SUBCOMMANDS`, the one declaration of the subcommands.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from cce_cli.main import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL = ROOT / "packages" / "cce-retrieval" / "src" / "cce_retrieval"
CLI_RUFF = ROOT / "packages" / "cce-cli" / "ruff.toml"
COMMANDS = {name for name, _, _ in SUBCOMMANDS}


def _retrieval_submodules() -> set[str]:
    found = set()
    for path in RETRIEVAL.iterdir():
        if path.is_dir() and (path / "__init__.py").is_file():
            found.add(f"cce_retrieval.{path.name}")
        elif path.suffix == ".py" and path.name != "__init__.py":
            found.add(f"cce_retrieval.{path.stem}")
    return found


def test_every_retrieval_submodule_is_banned_in_cce_cli() -> None:
    config = tomllib.loads(CLI_RUFF.read_text(encoding="utf-8"))
    banned = set(config["lint"]["flake8-tidy-imports"]["banned-api"])
    assert banned == _retrieval_submodules()
    assert "TID251" in config["lint"]["extend-select"]


def _ruff_on(source: str, where: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename", where, "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_lint_fails_on_a_deep_import_from_cce_cli() -> None:
    deep = "from cce_retrieval.build.pipeline import build_index\n\nprint(build_index)\n"
    public = "from cce_retrieval import build_index\n\nprint(build_index)\n"
    where = "packages/cce-cli/src/cce_cli/commands/probe.py"
    refused = _ruff_on(deep, where)
    assert refused.returncode == 1
    assert "TID251" in refused.stdout
    assert _ruff_on(public, where).returncode == 0
    # cce_retrieval itself, and cce-cli's tests, may reach into the modules.
    assert _ruff_on(deep, "packages/cce-retrieval/src/cce_retrieval/probe.py").returncode == 0
    assert _ruff_on(deep, "packages/cce-cli/tests/test_probe.py").returncode == 0


def _table_commands(markdown: str) -> set[str]:
    row = next(line for line in markdown.splitlines() if line.startswith("| `cce-cli` "))
    described = row.split("|")[3]
    return set(re.findall(r"`([a-z]+)`", described.split(":", 1)[1]))


def test_package_tables_list_every_command() -> None:
    for doc in ("README.md", "docs/architecture.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert _table_commands(text) == COMMANDS, doc


def test_readme_command_list_shows_every_command() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^uv run cce ([a-z]+)\b", text, flags=re.MULTILINE))
    assert listed == COMMANDS


def test_architecture_layout_names_every_command_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    # A command's module is usually named after it; `import`, a keyword, is not.
    modules = {module.removeprefix("commands."): name for name, module, _ in SUBCOMMANDS}
    on_disk = {
        modules[path.stem]
        for path in (ROOT / "packages/cce-cli/src/cce_cli/commands").glob("*.py")
        if path.stem in modules
    }
    assert on_disk == COMMANDS
    commands_line = layout.split("commands/", 1)[1].split("evaluation/", 1)[0]
    assert set(re.findall(r"\b([a-z]+)\b", commands_line)) >= COMMANDS


def _lazy_table(init: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(names imported under TYPE_CHECKING -> module, `_LAZY` name -> module, `__all__`)
    of a package `__init__` that resolves its public names on first use."""
    import ast

    tree = ast.parse(init.read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    lazy: dict[str, str] = {}
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imported in node.body:
                assert isinstance(imported, ast.ImportFrom) and imported.module is not None
                for alias in imported.names:
                    typed[alias.asname or alias.name] = f"{imported.module}:{alias.name}"
        target: ast.expr
        value: ast.expr | None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if not isinstance(target, ast.Name) or value is None:
            continue
        if target.id == "_LAZY":
            for name, where in ast.literal_eval(value).items():
                module, attribute = where if isinstance(where, tuple) else (where, name)
                lazy[name] = f"{module}:{attribute}"
        elif target.id == "__all__":
            exported = list(ast.literal_eval(value))
    return typed, lazy, exported


def test_public_names_are_spelled_alike_in_every_table() -> None:
    """`__all__`, the lazy table and the type checker's imports name the same objects."""
    import importlib

    for package in ("cce_retrieval", "cce_cli"):
        init = next(ROOT.glob(f"packages/*/src/{package}/__init__.py"))
        typed, lazy, exported = _lazy_table(init)
        assert sorted(exported) == sorted(lazy) == sorted(typed), package
        assert len(set(exported)) == len(exported), package
        assert typed == lazy, package
        # A submodule of the same name would replace the exported object once imported.
        submodules = {path.stem for path in init.parent.iterdir() if path.name != "__init__.py"}
        assert not submodules & set(exported), package
        imported = importlib.import_module(package)
        for name, where in lazy.items():
            module, attribute = where.split(":")
            assert getattr(imported, name) is getattr(importlib.import_module(module), attribute)
