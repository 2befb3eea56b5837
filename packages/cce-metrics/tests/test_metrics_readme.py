"""The README's usage examples run and print exactly what the README says they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def examples(text: str) -> list[tuple[str, str]]:
    """Every ```python block with the ```text block that follows it (its printed output)."""
    blocks = re.findall(r"```(python|text)\n(.*?)```", text, flags=re.DOTALL)
    languages = [language for language, _ in blocks]
    assert languages == ["python", "text"] * (len(blocks) // 2), languages
    return [(blocks[i][1], blocks[i + 1][1]) for i in range(0, len(blocks), 2)]


def test_readme_examples_print_their_documented_output() -> None:
    pairs = examples(README.read_text(encoding="utf-8"))
    assert len(pairs) == 2
    for example, documented_output in pairs:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example, str(README), "exec"), {"__name__": "readme_example"})
        assert printed.getvalue() == documented_output
        # The example must stand on cce-metrics alone, as an outside eval tool would.
        assert set(re.findall(r"\bcce_\w+", example)) == {"cce_metrics"}
