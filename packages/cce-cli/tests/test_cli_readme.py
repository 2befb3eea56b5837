"""The README's usage example runs and prints exactly what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def code_block(text: str, language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, f"expected one {language} block in the README, found {len(blocks)}"
    return str(blocks[0])


def test_readme_example_prints_its_documented_output() -> None:
    text = README.read_text(encoding="utf-8")
    example = code_block(text, "python")
    documented_output = code_block(text, "text")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, str(README), "exec"), {"__name__": "readme_example"})
    assert printed.getvalue() == documented_output
    # The example drives the harness through public names only.
    imported = set(re.findall(r"^from (cce_\w+(?:\.\w+)?) import", example, flags=re.MULTILINE))
    assert "cce_cli" in imported
    assert not any(name.startswith("cce_cli.") for name in imported)
