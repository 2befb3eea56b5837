"""Text from inputs that must neither crash a command nor reach the terminal raw.

A fixture header whose corpus holds a NUL, and case ids, backend names, tags,
configuration keys and paths holding terminal controls (ESC, OSC, CR), bidi overrides
or markdown that would open a block (docs/hostile-input.md#text-from-inputs-in-output).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


# --- a NUL in a fixture header's corpus ---------------------------------------------------


@pytest.mark.parametrize("command", ["check", "relevance", "pool"])
def test_a_nul_in_the_header_corpus_is_an_error_naming_the_line(
    tmp_path: Path, command: str, run_cce: RunCce
) -> None:
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"../c\\u0000orpus"}\n'
        '{"id":"a","query":"q","expected":["config.py"],"k":5}\n',
        encoding="utf-8",
    )
    status, out, err = run_cce(command, str(fixtures))
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


# --- terminal and markdown injection -------------------------------------------------------

EVIL_ID = "q\x1b[31mRED\x1b]0;title\x07\r\n## injected | x <b>\u202e"
EVIL_BACKEND = "bk\x1b[2J\n## backend"
EVIL_TAG = "t\x1b[0m\n## tag"
EVIL_KEY = "kind\x1b[1m\n## key"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_pair(tmp_path: Path) -> tuple[Path, Path]:
    """BASE and HEAD with a hostile case id, backend name, tag, parameter and path."""
    paths = []
    for source, value in ((BASE, 1), (HEAD, 2)):
        body: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
        for backend in body["backends"]:
            backend["backend"] = EVIL_BACKEND
            backend["config"] = {EVIL_KEY: f"v{value}\x1b[5m"}
            for row in backend["per_query"]:
                if row["id"] == "q-ring":  # a query the head makes worse
                    row["id"] = EVIL_ID
                    row["tags"] = [EVIL_TAG]
        target = tmp_path / f"{value}\x1b[7m.json"
        target.write_text(json.dumps(body), encoding="utf-8")
        paths.append(target)
    return paths[0], paths[1]


def test_diff_text_and_gate_lines_escape_text_from_the_reports(
    tmp_path: Path, run_cce: RunCce
) -> None:
    base, head = _hostile_pair(tmp_path)
    status, out, err = run_cce(
        "diff", str(base), str(head), "--by-tag", "--fail-on-query-regression", "--min", "mrr=1"
    )
    assert status == 3
    assert RAW_CONTROLS.search(out) is None and RAW_CONTROLS.search(err) is None
    assert all(not line.startswith("##") for line in (out + err).splitlines())
    shown_id = '"q\\u001b[31mRED\\u001b]0;title\\u0007\\r\\n## injected | x <b>\\u202e"'
    assert f"  {shown_id}" in out
    assert '"bk\\u001b[2J\\n## backend" ("' in out  # the backend, then its escaped path
    assert 'tag "t\\u001b[0m\\n## tag": 1 paired queries' in out
    assert '"kind\\u001b[1m\\n## key": "v1\\u001b[5m" → "v2\\u001b[5m"' in out
    assert f"gate failed: query {shown_id} got worse on P@k" in err
    assert 'gate failed: MRR of "bk\\u001b[2J\\n## backend" ("' in err


def test_diff_markdown_keeps_every_cell_on_one_line(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _hostile_pair(tmp_path)
    status, out, _ = run_cce("diff", str(base), str(head), "--by-tag", "--format", "markdown")
    assert status == 0
    assert RAW_CONTROLS.search(out) is None
    for line in out.splitlines():
        assert "injected" not in line or not line.lstrip().startswith("#"), line
        assert "## tag" not in line and "## backend" not in line and "## key" not in line
    table_rows = [line for line in out.splitlines() if line.startswith("|")]
    assert any("injected" in row for row in table_rows)
    assert all(row.endswith("|") for row in table_rows)


def test_diff_html_spells_controls_visibly(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _hostile_pair(tmp_path)
    status, out, _ = run_cce("diff", str(base), str(head), "--format", "html")
    assert status == 0
    assert RAW_CONTROLS.search(out) is None
    assert "q\\u001b[31mRED" in out
    assert "injected | x &lt;b&gt;" in out


def test_diff_json_keeps_the_ids_as_they_are(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _hostile_pair(tmp_path)
    status, out, _ = run_cce("diff", str(base), str(head), "--format", "json")
    assert status == 0
    rows = json.loads(out)["metrics"]["mrr"]["per_query"]
    assert EVIL_ID in [row["id"] for row in rows]  # JSON escapes it; the data stays exact


def test_plan_text_escapes_backend_names(tmp_path: Path, run_cce: RunCce) -> None:
    base, head = _hostile_pair(tmp_path)
    body: dict[str, Any] = json.loads(base.read_text(encoding="utf-8"))
    second: dict[str, Any] = json.loads(head.read_text(encoding="utf-8"))["backends"][0]
    second["backend"] = "other\x1b]8;;http://x\x07"
    body["backends"].append(second)
    pilot = tmp_path / "pilot.json"
    pilot.write_text(json.dumps(body), encoding="utf-8")
    status, out, err = run_cce("plan", str(pilot))
    assert status == 0
    assert RAW_CONTROLS.search(out + err) is None
    assert out.startswith(
        'sample-size plan: "other\\u001b]8;;http://x\\u0007" against "bk\\u001b[2J\\n## backend"'
    )


def test_relevance_and_check_escape_case_ids_tags_and_dead_anchors(
    tmp_path: Path, run_cce: RunCce
) -> None:
    shutil.copytree(
        Path(__file__).resolve().parents[3] / "eval" / "corpus" / "sample", tmp_path / "corpus"
    )
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"a\\u001b[31m\\r\\n## x","query":"load config",'
        '"expected":["config.py","no\\u001b]0;t\\u0007pe.py"],"k":5,"tags":["t\\u001b[1m"]}\n',
        encoding="utf-8",
    )
    status, out, err = run_cce("relevance", str(fixtures), "--compare", "bm25,hybrid", "--by-tag")
    assert status == 0
    assert RAW_CONTROLS.search(out + err) is None
    assert '  "a\\u001b[31m\\r\\n## x"  ' in out
    assert '  tag "t\\u001b[1m" (1 of 1 queries)' in out
    assert 'anchor "no\\u001b]0;t\\u0007pe.py": path no\\u001b]0;t\\u0007pe.py is not' in err
    status, out, err = run_cce("check", str(fixtures))
    assert status == 1
    assert RAW_CONTROLS.search(out + err) is None
    assert f'{fixtures}:2: case "a\\u001b[31m\\r\\n## x": anchor "no\\u001b]0;' in out


def test_an_error_naming_a_hostile_path_shows_it_escaped(tmp_path: Path, run_cce: RunCce) -> None:
    missing = tmp_path / "gone\x1b[2J\x9b.json"
    status, out, err = run_cce("diff", str(missing), str(HEAD))
    assert (status, out) == (1, "")
    assert RAW_CONTROLS.search(err) is None
    assert "gone\\u001b[2J\\u009b.json: No such file or directory" in err
