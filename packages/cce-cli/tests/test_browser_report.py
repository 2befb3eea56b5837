"""The HTML report in a real browser: Debian's chromium, driven headless by Playwright.

Why these tests exist: escaping can be checked on the bytes, but whether the page loads
without errors, requests nothing, sorts, filters and shows a query's code can only be
checked by running it. They are marked `browser` and run by `nox -s browser`, which
installs the system chromium when it is missing; Playwright never downloads a browser
here. Without chromium or Playwright they skip, unless CCE_REQUIRE_BROWSER=1 (the nox
session sets it) makes that a failure. The session also keeps a screenshot in
CCE_BROWSER_OUTPUT.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cce_cli.main import main

pytestmark = pytest.mark.browser


def _unavailable(reason: str) -> None:
    if os.environ.get("CCE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


ARGV = [
    "diff",
    "bm25.report.json",
    "hybrid.report.json",
    "--by-tag",
    "--results",
    "bm25.results.jsonl",
    "hybrid.results.jsonl",
    "--fixtures",
    "fixtures.jsonl",
    "--format",
    "html",
]

Opened = tuple[Any, list[str], list[str], list[str]]


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory, report_data_module: Path) -> Path:
    target = tmp_path_factory.mktemp("report") / "report.html"
    here = os.getcwd()
    written = io.StringIO()
    os.chdir(report_data_module)
    try:
        with contextlib.redirect_stdout(written):
            code = main(ARGV)
    finally:
        os.chdir(here)
    assert code == 0
    target.write_text(written.getvalue(), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        _unavailable("no chromium on PATH (nox -s browser installs Debian's)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (cce-cli's dev group has it)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.fixture
def opened(browser: Any, report_page: Path) -> Iterator[Opened]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    dialogs: list[str] = []
    page.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))

    def dismiss(dialog: Any) -> None:  # an alert() that ran: recorded, then closed
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.goto(report_page.as_uri())
    page.wait_for_load_state("load")
    yield page, errors, requests, dialogs
    page.close()


def _ids(page: Any) -> list[str]:
    ids: list[str] = page.eval_on_selector_all(
        "#queries tbody tr.case:not([hidden]) button.open", "nodes => nodes.map(n => n.textContent)"
    )
    return ids


def test_loads_without_errors_or_requests(opened: Opened) -> None:
    _, errors, requests, dialogs = opened
    assert errors == []
    assert all(url.startswith("file://") for url in requests), requests
    assert len(requests) == 1  # the page itself
    assert dialogs == []


def test_one_row_per_case(opened: Opened) -> None:
    page = opened[0]
    assert len(_ids(page)) == 12


def test_clicking_a_query_shows_its_results_with_code(
    opened: Opened,
) -> None:
    page, errors, requests, _ = opened
    page.click("#queries tr.case[data-i='0'] button.open")
    detail = page.locator("#queries tr.detail")
    assert detail.count() == 1
    assert detail.locator("h3").all_text_contents() == ["bm25", "hybrid"]
    assert "def load_config" in detail.locator("pre.code").nth(1).text_content()
    assert detail.locator("li.found").count() == 2  # config.py found by both sides
    output = os.environ.get("CCE_BROWSER_OUTPUT")
    if output:
        Path(output).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(output) / "report.png"), full_page=False)
    assert errors == [] and len(requests) == 1


def test_sorting_and_filtering_reorder_and_hide_rows(
    opened: Opened,
) -> None:
    page = opened[0]
    before = _ids(page)
    # The rows open worst first on the primary metric (P@k, the first shown).
    statuses = page.eval_on_selector_all(
        "#queries tbody tr.case", "nodes => nodes.map(n => n.dataset.status)"
    )
    assert statuses[0] == "worse" and "worse" not in statuses[statuses.index("same") :]
    page.click("#queries thead th:last-child")
    ascending = _ids(page)
    assert sorted(ascending) == sorted(before)
    page.click("#queries thead th:last-child")
    assert _ids(page) != ascending
    page.fill("#filter", "cache")
    shown = _ids(page)
    assert 0 < len(shown) < 12
    assert page.text_content("#shown") == f"{len(shown)} of 12 queries"


def test_hostile_strings_stay_inert(opened: Opened) -> None:
    page, errors, requests, dialogs = opened
    hostile = page.locator("#queries tr.case button.open", has_text="alert(1)")
    assert hostile.text_content() == "q-<script>alert(1)</script>\n## injected"
    hostile.click()
    code = page.locator("#queries tr.detail pre.code", has_text="renderBanner").first
    assert '</script><script>alert("code")</script>' in code.text_content()
    assert page.locator("img, textarea, #queries b").count() == 0
    assert page.locator("script").count() == 2
    query = page.locator("#queries tr.case td.query", has_text="onerror")
    assert '" onerror=alert(1) </textarea><script>alert(2)</script>' in query.text_content()
    assert dialogs == [] and errors == [] and len(requests) == 1


REPO = Path(__file__).parents[3]


@pytest.fixture(scope="module")
def cost_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A relevance run with cost metrics, as its HTML page."""
    target = tmp_path_factory.mktemp("cost") / "cost.html"
    written = io.StringIO()
    argv = [
        "relevance",
        str(REPO / "eval" / "relevance" / "code.jsonl"),
        "--dir",
        str(REPO / "eval" / "corpus" / "sample"),
        "--backend",
        "bm25,grep",
        "--metrics",
        "first-hit-tokens",
        "--budgets",
        "500,4000",
        "--format",
        "html",
    ]
    with contextlib.redirect_stdout(written):
        code = main(argv)
    assert code == 0
    target.write_text(written.getvalue(), encoding="utf-8")
    return target


def test_the_recall_curve_draws_one_line_per_backend(browser: Any, cost_page: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )
    page.goto(cost_page.as_uri())
    page.wait_for_load_state("load")
    curve = page.locator("svg.curve")
    assert curve.count() == 1
    box = curve.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    lines = curve.locator("polyline.series")
    assert lines.count() == 2
    for index in range(2):
        drawn = lines.nth(index).bounding_box()
        assert drawn is not None and drawn["width"] > 100
    assert curve.locator("text", has_text="grep").count() == 1
    # first-hit-tokens shows as whole tokens, not as a fraction.
    assert page.locator("#metrics, table").first.text_content() is not None
    output = os.environ.get("CCE_BROWSER_OUTPUT")
    if output:
        Path(output).mkdir(parents=True, exist_ok=True)
        curve.scroll_into_view_if_needed()
        page.screenshot(path=str(Path(output) / "cost.png"), full_page=True)
    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def suite_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-member suite's page from `cce relevance SUITE.toml --format html`."""
    repo = Path(__file__).resolve().parents[3]
    root = tmp_path_factory.mktemp("suite")
    lines = (repo / "eval" / "relevance" / "code.jsonl").read_text().splitlines()
    (root / "alpha.jsonl").write_text("\n".join(lines[:5]) + "\n")
    (root / "beta.jsonl").write_text("\n".join([lines[0], *lines[5:]]) + "\n")
    shutil.copytree(repo / "eval" / "corpus" / "sample", root / "corpus")
    manifest = root / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n'
        + "".join(
            f'\n[[members]]\nname = "{name}"\nfixtures = "{name}.jsonl"\ncorpus = "corpus"\n'
            f'groups = ["code"]\n'
            for name in ("alpha", "beta")
        )
    )
    written = io.StringIO()
    with contextlib.redirect_stdout(written):
        code = main(["relevance", str(manifest), "--format", "html", "--backend", "bm25"])
    assert code == 0
    target = root / "suite.html"
    target.write_text(written.getvalue(), encoding="utf-8")
    return target


def test_a_suite_page_shows_member_tables_and_each_members_code(
    browser: Any, suite_page: Path
) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(suite_page.as_uri())
    page.wait_for_load_state("load")
    labels = page.locator("table.members tbody th").all_text_contents()
    assert labels == ["alpha", "beta", "group code", "macro", "micro"]
    page.click("#queries tr.case[data-i='0'] button.open")
    detail = page.locator("#queries tr.detail")
    assert detail.count() == 1
    codes = detail.locator("pre.code").all_text_contents()
    assert codes and "(code not available)" not in codes
    assert "no results file given" not in (detail.text_content() or "")
    assert "where is the load_config function" in (page.text_content("#queries") or "")
    output = os.environ.get("CCE_BROWSER_OUTPUT")
    if output:
        Path(output).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(output) / "suite.png"), full_page=True)
    assert errors == []
    page.close()
