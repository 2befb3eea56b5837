"""The reviewer views: the pull-request comment (`cce diff --format markdown`) and the
HTML report (`cce report`, `cce diff --format html`).

The data under `data/report/` is a small fixture set over the sample corpus plus
`hostile.js` (laid out per test by conftest.py's `report_workspace`), whose code looks
like markup, and one case whose id, query text and tag do; its two saved reports (bm25,
hybrid) and results files were written by `cce relevance ... --by-tag --json --results`.
The markdown is parsed by markdown-it-py and the HTML by the standard library's parser,
as a reader's renderer would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from cce_cli.render.comment import COMMENT_LIMIT, format3, format3_signed, md_text
from cce_retrieval import chunk_file

GOLDEN = Path(__file__).parent / "golden" / "diff.md"
HOSTILE_ID = "q-<script>alert(1)</script>\n## injected"
EVIDENCE = [
    "--results",
    "bm25.results.jsonl",
    "hybrid.results.jsonl",
    "--fixtures",
    "fixtures.jsonl",
]

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


@pytest.fixture(autouse=True)
def _in_data(monkeypatch: pytest.MonkeyPatch, report_data: Path) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(report_data)


def _comment(run_cce: RunCce, *extra: str) -> str:
    argv = ["diff", "bm25.report.json", "hybrid.report.json", "--by-tag", "--format", "markdown"]
    status, out, err = run_cce(*argv, *EVIDENCE, *extra)
    assert status in (0, 3), err
    return out


def _write_report(
    path: Path,
    backend: str,
    rows: Sequence[tuple[str, float]],
    extra: dict[str, Any] | None = None,
    query: bool = True,
) -> str:
    per_query = []
    for case_id, value in rows:
        row: dict[str, Any] = {
            "id": case_id,
            "k": 5,
            "mrr": f"{value:.6f}",
            "recall": f"{value:.6f}",
        }
        if query:
            row["query"] = f"where does the service {case_id} handle the retry of a failed job"
        per_query.append(row)
    entry: dict[str, Any] = {"backend": backend, "per_query": per_query, **(extra or {})}
    body = {"backends": [entry], "schema": "cce.relevance.report/v2"}
    path.write_text(json.dumps(body), encoding="utf-8")
    return str(path)


# --- the comment -----------------------------------------------------------------------


def test_comment_is_the_pinned_golden(run_cce: RunCce) -> None:
    """The shape of the comment; regenerate with the command in docs/reports.md."""
    assert _comment(run_cce) == GOLDEN.read_text(encoding="utf-8")


def test_comment_leads_with_the_verdict_and_has_base_and_head(
    run_cce: RunCce,
) -> None:
    out = _comment(run_cce, "--fail-on-query-regression")
    first = out.splitlines()[0]
    assert first.startswith("❌ **Gate failed** (")
    assert "from bm25 to hybrid" in first
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    headers = [t.content for t in tokens if t.type == "inline" and t.map and t.map[0] == 4]
    assert headers == ["### cce diff: bm25 → hybrid"] or "### cce diff: bm25 → hybrid" in out
    assert "| metric | base | head | delta | 95% CI | holm-adjusted p |" in out
    # Per-query rows are collapsed, with the query text beside the id.
    assert out.count("<details>") == out.count("</details>") >= 3
    assert "| evict least recently used cache entry | code\\-lru\\-evict |" not in out
    assert "| evict least recently used cache entry | code-lru-evict |" in out


def test_hostile_ids_and_text_stay_inert_in_the_comment(tmp_path: Path, run_cce: RunCce) -> None:
    rows = [(HOSTILE_ID, 0.5), ("plain", 0.5), ("a|b `c` *d*", 0.5)]
    base = _write_report(tmp_path / "base.json", "bm25", rows)
    head = _write_report(
        tmp_path / "head.json",
        "<img src=x onerror=alert(1)>",
        [(case_id, 1.0) for case_id, _ in rows],
    )
    out = run_cce("diff", base, head, "--format", "markdown")[1]
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    headings = [t for t in tokens if t.type == "heading_open"]
    assert len(headings) == 1  # the title; "\n## injected" did not become one
    assert not any(line.startswith("## ") for line in out.splitlines())
    assert "<script>" not in out and "<img" not in out
    html_bits = [t.content for t in tokens if t.type in ("html_block", "html_inline")]
    assert all("<script" not in bit and "onerror" not in bit for bit in html_bits)
    rendered = MarkdownIt("commonmark").enable("table").render(out)
    assert "q-&lt;script&gt;alert(1)&lt;/script&gt; ## injected" in rendered
    # Every per-query row kept its three cells: no `|` of an id split a cell.
    changed = [row for row in _md_tables(out) if row and row[0][0] == "query"]
    assert [len(cells) for table in changed for cells in table] == [3, 3, 3, 3]
    assert md_text("a|b\n## c") == "a\\|b \\#\\# c"


def _md_tables(markdown: str) -> list[list[list[str]]]:
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    for token in MarkdownIt("commonmark").enable("table").parse(markdown):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close" and row is not None:
            tables[-1].append(row)
            row = None
    return tables


def test_a_400_query_diff_fits_a_github_comment(tmp_path: Path, run_cce: RunCce) -> None:
    ids = [f"case-{i:03d}-{'x' * 40}" for i in range(400)]
    base = _write_report(tmp_path / "base.json", "bm25", [(i, 0.5) for i in ids])
    head_rows = [(case_id, 0.25 if n % 3 else 1.0) for n, case_id in enumerate(ids)]
    head = _write_report(tmp_path / "head.json", "hybrid", head_rows)
    status, out, _ = run_cce("diff", base, head, "--format", "markdown")
    assert status == 0
    assert len(out) <= COMMENT_LIMIT
    assert "query rows were left out to stay under 65,536 characters" in out
    shown = out.count("| where does the service case-")
    left = int(out.split(" query rows were left out")[0].rsplit("_", 1)[1])
    assert shown + left == 400
    # The worst rows are the ones kept.
    assert "got worse on recall, worst first" in out


def test_grammar_for_one_query_and_same_backend_names_the_files(
    tmp_path: Path, run_cce: RunCce
) -> None:
    base = _write_report(tmp_path / "before.json", "hybrid", [("only", 0.5)], query=False)
    head = _write_report(tmp_path / "after.json", "hybrid", [("only", 1.0)], query=False)
    out = run_cce("diff", base, head, "--format", "markdown")[1]
    assert f"### cce diff: {md_text(base)} → {md_text(head)}" in out
    assert "1 paired query on recall: 0 worse, 1 better, 0 unchanged." in out
    assert "1 query got better on recall, best first" in out
    assert "1 paired queries" not in out and "1 queries" not in out


def test_configuration_and_provenance_differences_are_named(
    tmp_path: Path, run_cce: RunCce
) -> None:
    rows = [("a", 0.5), ("b", 1.0)]
    base = _write_report(
        tmp_path / "b.json", "bm25-x", rows, {"config": {"use": "bm25", "k1": 1.2}}
    )
    head = _write_report(tmp_path / "h.json", "bm25-y", rows, {"config": {"use": "bm25", "b": 0.4}})
    out = run_cce("diff", base, head, "--format", "markdown")[1]
    assert "| config b | (default) | 0.4 |" in out
    assert "| config k1 | 1.2 | (default) |" in out
    body = json.loads(Path(head).read_text(encoding="utf-8"))
    body["provenance"] = {"commit": "abc"}
    Path(head).write_text(json.dumps(body), encoding="utf-8")
    out = run_cce("diff", base, head, "--format", "markdown")[1]
    assert "⚠️ Only the head report carries provenance" in out


@pytest.mark.parametrize(
    ("value", "plain", "signed"),
    [
        (0.0005, "0.001", "+0.001"),
        (0.0004999, "0.000", "+0.000"),
        (-0.0004, "0.000", "+0.000"),
        (-0.0335, "-0.034", "-0.034"),
        (1.0, "1.000", "+1.000"),
    ],
)
def test_three_decimals_round_half_away_from_zero(value: float, plain: str, signed: str) -> None:
    assert (format3(value), format3_signed(value)) == (plain, signed)


# --- the HTML report -------------------------------------------------------------------


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _page(run_cce: RunCce, *argv: str) -> str:
    status, out, err = run_cce(*argv)
    assert status == 0, err
    return out


def _diff_page(run_cce: RunCce) -> str:
    argv = ["diff", "bm25.report.json", "hybrid.report.json", "--by-tag", "--format", "html"]
    return _page(run_cce, *argv, *EVIDENCE)


def test_html_escapes_every_hostile_string(run_cce: RunCce) -> None:
    page = _diff_page(run_cce)
    parser = _Elements()
    parser.feed(page)
    names = [tag for tag, _ in parser.tags]
    assert names.count("script") == 2  # the data and cce's own script, nothing injected
    assert "img" not in names and "textarea" not in names and "b" not in names
    assert not any(name.startswith("on") for _, attrs in parser.tags for name, _ in attrs)
    data = json.loads(parser.scripts[0])
    code = "\n".join(line for lines in data["code"] for line in lines)
    assert '</script><script>alert("code")</script>' in code  # kept, as data
    assert "</" not in parser.scripts[0]  # but never as markup inside the script element
    assert "q-&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34; onerror=alert(1) &lt;/textarea&gt;" in page


def test_html_is_self_contained_and_deterministic(run_cce: RunCce) -> None:
    page = _diff_page(run_cce)
    assert page == _diff_page(run_cce)
    parser = _Elements()
    parser.feed(page)
    for _, attrs in parser.tags:
        for name, value in attrs:
            if name in ("src", "href", "action", "data"):
                raise AssertionError(f"the page refers to {value!r}")
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "default-src 'none'" in page


def test_cce_report_renders_a_relevance_report_and_a_saved_diff(
    tmp_path: Path, run_cce: RunCce
) -> None:
    target = tmp_path / "report.html"
    argv = ["report", "hybrid.report.json", "--results", "hybrid.results.jsonl", "-o"]
    assert _page(run_cce, *argv, str(target)) == ""
    page = target.read_text(encoding="utf-8")
    assert page.count('<tr class="case') == 12
    assert "cce relevance: hybrid" in page
    diff_json = _page(run_cce, "diff", "bm25.report.json", "hybrid.report.json", "--format", "json")
    saved = tmp_path / "diff.json"
    saved.write_text(diff_json, encoding="utf-8")
    page = _page(run_cce, "report", str(saved), *EVIDENCE)
    assert page.count('<tr class="case') == 12
    assert "cce diff: bm25 → hybrid" in page


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"schema": "cce.suite/v9"}', 'schema "cce.suite/v9" has no HTML page'),
        ("[1, 2]", "a report is a JSON object"),
        ("{", "invalid JSON"),
    ],
)
def test_cce_report_refuses_what_it_cannot_render(
    tmp_path: Path, content: str, fragment: str, run_cce: RunCce
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(content, encoding="utf-8")
    status, out, err = run_cce("report", str(path))
    assert (status, out) == (1, "")
    assert err.startswith("error: ") and fragment in err
    status, out, err = run_cce("report", str(tmp_path / "missing.json"))
    assert (status, out) == (1, "") and err.startswith("error: could not read report")


def test_html_for_400_queries_with_results_stays_under_2_mb(
    tmp_path: Path, run_cce: RunCce
) -> None:
    ids = [f"case-{i:03d}" for i in range(400)]
    base = _write_report(tmp_path / "base.json", "bm25", [(i, 0.5) for i in ids])
    head = _write_report(tmp_path / "head.json", "hybrid", [(i, 0.25) for i in ids])
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    line = "    value = compute_something(alpha, beta, gamma)  # a typical line of code\n"
    text = "".join(f"def function_{k}():\n{line * 8}\n" for k in range(6))
    for n in range(200):
        (corpus / f"module_{n:03d}.py").write_text(text, encoding="utf-8")
    # Every module has the same six functions at lines 10k+1..10k+9; their ids, which
    # the code shown is checked against, differ by path.
    chunk_ids = {
        (n, chunk.start_line): chunk.chunk_id
        for n in range(200)
        for chunk in chunk_file(f"module_{n:03d}.py", text).chunks
    }
    results = []
    for side, backend in ((0, "bm25"), (1, "hybrid")):
        lines = [json.dumps({"corpus": str(corpus), "embedder": "hash", "schema": "cce.run/v1"})]
        for n, case_id in enumerate(ids):
            hits = [
                {
                    "chunk_id": chunk_ids[((n + rank + side) % 200, 10 * rank + 1)],
                    "end_line": 10 * rank + 9,
                    "file_path": f"module_{(n + rank + side) % 200:03d}.py",
                    "kind": "function_definition",
                    "matches": [0] if rank == 1 else [],
                    "rank": rank,
                    "score": "0.500000",
                    "start_line": 10 * rank + 1,
                }
                for rank in range(1, 6)
            ]
            lines.append(
                json.dumps(
                    {"backend": backend, "id": case_id, "k": 5, "query": "q", "results": hits}
                )
            )
        path = tmp_path / f"{backend}.results.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        results.append(str(path))
    argv = ["diff", base, head, "--format", "html", "--results", *results]
    page = _page(run_cce, *argv, "--corpus", str(corpus))
    size = len(page.encode("utf-8"))
    assert size < 2_000_000, size
    assert page.count("def function_") == 1000  # each (file, lines) once: the code is shown
    assert page.count('<tr class="case') == 400


def test_cce_relevance_writes_the_same_page_with_its_own_results(
    run_cce: RunCce,
) -> None:
    argv = ["relevance", "fixtures.jsonl", "--compare", "bm25,hybrid", "--by-tag"]
    page = _page(run_cce, *argv, "--format", "html")
    assert page == _page(run_cce, *argv, "--format", "html")
    assert page.count('<tr class="case') == 12
    assert "cce diff: bm25 → hybrid" in page
    parser = _Elements()
    parser.feed(page)
    data = json.loads(parser.scripts[0])
    assert any("def load_config" in line for lines in data["code"] for line in lines)
    assert data["cases"][0]["anchors"] == ["config.py"]
