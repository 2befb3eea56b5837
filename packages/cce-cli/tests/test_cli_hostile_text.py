"""Text from inputs that must neither crash a command nor reach the terminal raw.

A fixture header whose corpus holds a NUL, and case ids, backend names, tags,
configuration keys and paths holding terminal controls (ESC, OSC, CR), bidi overrides
or markdown that would open a block (docs/hostile-input.md#text-from-inputs-in-output).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from cce_cli.main import main

DATA = Path(__file__).parent / "data"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"

Outcome = tuple[int, str, str]


def _run(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- a NUL in a fixture header's corpus ---------------------------------------------------


@pytest.mark.parametrize("command", ["check", "relevance", "pool"])
def test_a_nul_in_the_header_corpus_is_an_error_naming_the_line(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"../c\\u0000orpus"}\n'
        '{"id":"a","query":"q","expected":["config.py"],"k":5}\n',
        encoding="utf-8",
    )
    status, out, err = _run([command, str(fixtures)], capsys)
    assert status == 1
    message = (
        'the header\'s corpus "../c\\u0000orpus" holds a NUL character, which no path can; '
        'write the corpus directory in the header\'s "corpus" field'
    )
    if command == "check":
        assert f"{fixtures}:1: {message}" in out + err
    else:
        assert (out, err) == ("", f"error: {fixtures}: line 1: {message}\n")
    assert "\x00" not in out + err and "Traceback" not in err
