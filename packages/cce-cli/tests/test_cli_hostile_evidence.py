"""Reports built from input files that are hostile or merely mismatched: the code they
show, the ids they cut, the fixtures they compare (docs/hostile-input.md, docs/gating.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
BASE = DATA / "diff-base.json"
HEAD = DATA / "diff-head.json"

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


# --- a huge case id in the pull-request comment ----------------------------------------------


def test_a_200_kb_case_id_is_cut_in_the_comment_not_dropped(
    tmp_path: Path, run_cce: RunCce
) -> None:
    huge = "q-ring-" + "x" * 200_000
    paths = []
    for source in (BASE, HEAD):
        body: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
        for backend in body["backends"]:
            for row in backend["per_query"]:
                if row["id"] == "q-ring":  # a query the head makes worse
                    row["id"] = huge
        target = tmp_path / source.name
        target.write_text(json.dumps(body), encoding="utf-8")
        paths.append(target)
    status, out, _ = run_cce("diff", str(paths[0]), str(paths[1]), "--format", "markdown")
    assert status == 0
    assert len(out) <= 65_536
    rows = [line for line in out.splitlines() if line.startswith("| q-ring-")]
    assert len(rows) == 1, "the row of the query with the long id is kept"
    assert "q-ring-" + "x" * 92 + "…" in rows[0]
    assert "left out to" not in out
