"""Reports and pilots that `cce diff` and `cce plan` must refuse or show safely.

Scores outside what a metric can be, numbers Python reads more loosely than JSON,
duplicate backends, flags that make the arithmetic overflow, and text from a report
(case ids, backend names, configuration keys, paths) holding terminal controls or
markdown that would open a block (docs/hostile-input.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def _report(source: Path = BASE) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    return body


def _write(path: Path, body: dict[str, Any]) -> Path:
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


# --- gate floors ---------------------------------------------------------------------


def test_a_floor_is_printed_as_given_not_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(["diff", str(BASE), str(HEAD), "--min", "recall=1.0000001"], capsys)
    assert status == 3
    assert err == (
        f"gate failed: recall of hybrid ({HEAD}) is 0.875000, below --min recall=1.0000001\n"
    )
    # A floor `%g` shows exactly keeps its short form.
    status, _, err = _run(["diff", str(BASE), str(HEAD), "--min", "recall=1"], capsys)
    assert err.endswith("below --min recall=1\n")


def test_an_alpha_is_printed_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(["diff", str(BASE), str(HEAD), "--alpha", "0.0500001"], capsys)
    assert status == 0
    assert "alpha 0.0500001" in out and "alpha 0.05\n" not in out
