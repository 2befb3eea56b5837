"""Keeps the README's usage example true by running it as a doctest."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_python_example_runs_as_shown() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1, "the README should carry exactly one python example"
    parser = doctest.DocTestParser()
    test = parser.get_doctest(blocks[0], globs={}, name="README.md", filename=str(README), lineno=0)
    assert test.examples, "the python example should contain >>> lines"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    outcome = runner.run(test)
    assert outcome.failed == 0
    assert outcome.attempted == len(test.examples)
