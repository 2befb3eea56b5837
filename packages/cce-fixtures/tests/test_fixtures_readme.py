"""The README's library example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme_example"})


def test_readme_format_example_is_a_valid_fixture_set() -> None:
    from cce_fixtures import parse_fixtures

    text = README.read_text(encoding="utf-8")
    fixture = re.search(r"## The format\n\n```\n(.*?)```", text, re.DOTALL)
    assert fixture is not None
    fixtures = parse_fixtures(fixture.group(1))
    assert fixtures.corpus == "../corpus"
    assert [case.id for case in fixtures.cases] == ["login", "q3"]
