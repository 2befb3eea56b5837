r"""`cce relevance` end to end: arguments, error precedence, paths, outputs, goldens.

Covers docs/harness.md (the command) and the process-level cases of
docs/harness.md#output-and-exit-status. Most cases run
`cce_cli.main.main` in-process (fast); a few run the real `python -m cce_cli` in a
subprocess to prove that a user error never surfaces as a traceback.

Reference-parity tests run from the reference data directory named by `CCE_REFERENCE_DIR`
and skip when it is unset.

The project's own golden `tests/golden/code.report.json` pins the `--json` report of
`eval/relevance/code.jsonl`. After an intended change, regenerate it from the repo root
with exactly this command and review the diff:

    uv run cce relevance eval/relevance/code.jsonl --json \
        > packages/cce-cli/tests/golden/code.report.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from cce_cli.evaluation.corpus_paths import corpus_path, rust_join, rust_parent
from cce_retrieval import build_index, save_index
from cce_retrieval.embed.hashing import HashEmbedder

REPO = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden" / "code.report.json"

Outcome = tuple[int, str, str]
# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def _subprocess(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Outcome:
    completed = subprocess.run(
        [sys.executable, "-m", "cce_cli", "relevance", *argv],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )
    return (
        completed.returncode,
        completed.stdout.decode("utf-8"),
        completed.stderr.decode("utf-8"),
    )


def _assert_user_error(outcome: Outcome, code: int, fragment: str) -> None:
    status, out, err = outcome
    assert status == code, err
    assert out == ""
    assert fragment in err
    assert "Traceback" not in err
    if code == 1:
        assert err.startswith("error: ") and err.endswith("\n")


@pytest.fixture
def reference(monkeypatch: pytest.MonkeyPatch, reference_path: Callable[..., Path]) -> Path:
    reference_path("eval", "relevance", "code.jsonl")
    root = reference_path()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def repo_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(REPO)
    return REPO


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A tiny corpus and a header-less fixture file beside it."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "auth.py").write_text(
        "def hash_password(password):\n    return password[::-1]\n", encoding="utf-8"
    )
    (root / "payments.py").write_text("def refund(amount):\n    return -amount\n", encoding="utf-8")
    (tmp_path / "plain.jsonl").write_text(
        '{"id":"hash","query":"hash password","expected":["auth.py"],"k":2}\n', encoding="utf-8"
    )
    return tmp_path


# --- docs/harness.md#corpus-path: Rust Path::parent / join ---------------------------


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("code.jsonl", ""),
        ("./code.jsonl", "."),
        ("eval//code.jsonl", "eval"),
        ("eval/./code.jsonl", "eval"),
        ("/code.jsonl", "/"),
        ("eval/../code.jsonl", "eval/.."),
        ("eval/relevance/code.jsonl", "eval/relevance"),
        ("eval/relevance/", "eval"),
        ("a/./.", ""),
        (".", ""),
        ("", None),
        ("/", None),
        ("/.", None),
    ],
)
def test_rust_parent(path: str, parent: str | None) -> None:
    assert rust_parent(path) == parent


@pytest.mark.parametrize(
    ("base", "tail", "joined"),
    [
        ("", "corpus", "corpus"),
        ("eval", "corpus", "eval/corpus"),
        ("eval/", "corpus", "eval/corpus"),
        ("/", "corpus", "/corpus"),
        ("eval", "/abs/corpus", "/abs/corpus"),
        (".", "../x", "./../x"),
    ],
)
def test_rust_join(base: str, tail: str, joined: str) -> None:
    assert rust_join(base, tail) == joined


@pytest.mark.parametrize(
    ("fixtures", "corpus_header", "display"),
    [
        (
            "eval/relevance/code.jsonl",
            "../../test/fixture/samples",
            "eval/relevance/../../test/fixture/samples",
        ),
        ("code.jsonl", "docs-corpus", "docs-corpus"),
        ("./code.jsonl", "docs-corpus", "./docs-corpus"),
        ("eval/./code.jsonl", "docs-corpus", "eval/docs-corpus"),
        ("eval//code.jsonl", "c/", "eval/c/"),
        ("/code.jsonl", "c", "/c"),
        ("eval/code.jsonl", "/abs", "/abs"),
    ],
)
def test_corpus_display_is_joined_but_not_normalised(
    fixtures: str, corpus_header: str, display: str
) -> None:
    assert corpus_path(fixtures, corpus_header) == display


# --- docs/harness.md#arguments usage errors (exit 2) -----------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["f.jsonl", "--dir", "a", "--store", "b"],
        ["f.jsonl", "--backend", "bm25", "--compare", "bm25,hybrid"],
        ["f.jsonl", "--dir", "a", "--dir", "b"],
        ["f.jsonl", "--bogus"],
    ],
)
def test_usage_errors_exit_2_before_reading_anything(argv: list[str], run_cce: RunCce) -> None:
    status, out, err = run_cce("relevance", *argv)
    assert status == 2
    assert out == ""
    assert "usage:" in err


def test_dir_with_store_is_a_usage_error_in_a_real_process(tmp_path: Path) -> None:
    _assert_user_error(
        _subprocess(["missing.jsonl", "--dir", "a", "--store", "b"], tmp_path), 2, "--store"
    )


# --- docs/harness.md#processing-order processing order and runtime errors (exit 1) -----


def test_missing_fixture_file(tmp_path: Path) -> None:
    outcome = _subprocess(["nope.jsonl", "--backend", "bm42"], tmp_path)
    _assert_user_error(outcome, 1, "could not read fixtures nope.jsonl: ")
    assert "No such file or directory (os error 2)" in outcome[2]


def test_fixture_that_is_not_utf8(tmp_path: Path, run_cce: RunCce) -> None:
    (tmp_path / "bad.jsonl").write_bytes(b'{"query":"\xff","expected":["a"]}\n')
    _assert_user_error(
        run_cce("relevance", str(tmp_path / "bad.jsonl"), "--dir", str(tmp_path)),
        1,
        "could not read fixtures",
    )


def test_invalid_fixture_line_beats_bad_backend(corpus: Path, run_cce: RunCce) -> None:
    (corpus / "bad.jsonl").write_text('{"query":"a","expected":[]}\n', encoding="utf-8")
    outcome = run_cce(
        "relevance", str(corpus / "bad.jsonl"), "--dir", str(corpus / "corpus"), "--backend", "bm42"
    )
    _assert_user_error(outcome, 1, "fixture line 1: ")
    assert "non-empty array" in outcome[2]


def test_invalid_fixture_line_names_its_line(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(corpus)
    (corpus / "bad.jsonl").write_text("\nnot json\n", encoding="utf-8")
    _assert_user_error(run_cce("relevance", "bad.jsonl", "--dir", "corpus"), 1, "fixture line 2: ")


def test_no_corpus_beats_bad_backend(corpus: Path, run_cce: RunCce) -> None:
    outcome = run_cce("relevance", str(corpus / "plain.jsonl"), "--backend", "bm42")
    _assert_user_error(outcome, 1, "no corpus")


def test_corpus_that_is_not_a_directory(corpus: Path, run_cce: RunCce) -> None:
    (corpus / "header.jsonl").write_text(
        '{"schema":"cce.relevance/v1","corpus":"plain.jsonl"}\n'
        '{"query":"hash","expected":["auth.py"]}\n',
        encoding="utf-8",
    )
    outcome = run_cce("relevance", str(corpus / "header.jsonl"))
    _assert_user_error(outcome, 1, f"corpus {corpus}/plain.jsonl is not a directory")
    outcome = run_cce("relevance", str(corpus / "plain.jsonl"), "--dir", str(corpus / "nowhere"))
    _assert_user_error(outcome, 1, "is not a directory")


@pytest.mark.parametrize(
    ("flags", "status", "fragment"),
    [
        (["--backend", "bm42"], 2, "unknown backend"),
        (["--backend", ","], 2, "--backend needs at least one"),
        (["--compare", "bm25"], 2, "exactly two"),
        (["--compare", "bm25,bm25"], 2, "exactly two"),
        (["--compare", "bm25,hybrid,vector"], 2, "exactly two"),
        (["--compare", ","], 2, "--compare requires exactly two"),
    ],
)
def test_backend_errors(
    corpus: Path,
    flags: list[str],
    status: int,
    fragment: str,
    run_cce: RunCce,
) -> None:
    argv = [str(corpus / "plain.jsonl"), "--dir", str(corpus / "corpus"), *flags]
    _assert_user_error(run_cce("relevance", *argv), status, fragment)


@pytest.mark.parametrize(
    ("flags", "near"),
    [
        (["--backend", "bm25,hybird"], "'hybrid'"),
        (["--compare", "BM25,vector"], "'bm25'"),
        (["--backend", "vectr"], "'vector'"),
    ],
)
def test_a_misspelt_backend_is_a_usage_error_before_indexing(
    corpus: Path,
    flags: list[str],
    near: str,
    run_cce: RunCce,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was indexed before the backend names were checked")

    monkeypatch.setattr("cce_cli.runs.single.build_or_fail", no_build)
    argv = [str(corpus / "plain.jsonl"), "--dir", str(corpus / "corpus"), *flags]
    status, out, err = run_cce("relevance", *argv)
    assert (status, out) == (2, "")
    assert err.startswith("error: unknown backend ")
    assert err.rstrip("\n").endswith(f"; did you mean {near}?")


def test_store_that_cannot_be_loaded(corpus: Path, run_cce: RunCce) -> None:
    outcome = run_cce("relevance", str(corpus / "plain.jsonl"), "--store", "missing/index.json")
    _assert_user_error(outcome, 1, "could not load store missing/index.json")


def _store(corpus: Path, embedder_name: str) -> Path:
    index = build_index(str(corpus / "corpus"), HashEmbedder()).index
    index.embedder = embedder_name
    path = corpus / "store" / "index.json"
    path.parent.mkdir()
    save_index(index, str(path))
    return path


def test_ollama_store_with_ollama_unreachable_is_refused(corpus: Path) -> None:
    _store(corpus, "ollama")
    outcome = _subprocess(
        ["plain.jsonl", "--store", "store/index.json"],
        corpus,
        env={"CCE_OLLAMA_URL": "http://127.0.0.1:1"},
    )
    _assert_user_error(outcome, 1, "built with the ollama embedder")
    assert "http://127.0.0.1:1" in outcome[2]
    assert "--dir" in outcome[2]


def test_store_mode_reports_store_path_and_recorded_embedder(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store(corpus, "mystery")
    monkeypatch.chdir(corpus)
    status, out, err = run_cce("relevance", "plain.jsonl", "--store", "store/index.json", "--json")
    assert status == 0, err
    body = json.loads(out)
    assert body["corpus"] == "store/index.json"
    assert body["embedder"] == "mystery"
    assert body["backends"][0]["per_query"][0]["first_relevant_rank"] == 1


def test_dir_display_is_verbatim_and_overrides_the_header(
    corpus: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(corpus)
    (corpus / "header.jsonl").write_text(
        '{"schema":"cce.relevance/v1","corpus":"elsewhere"}\n'
        '{"query":"hash password","expected":["auth.py"],"k":2}\n',
        encoding="utf-8",
    )
    status, out, _ = run_cce(
        "relevance", "header.jsonl", "--dir", "./corpus/", "--backend", "vector,bm25"
    )
    assert status == 0
    assert "  corpus  : ./corpus/\n" in out
    assert out.index("  vector ") < out.index("  bm25 ")
    assert "hybrid" not in out


def test_low_scores_are_not_an_error(corpus: Path, run_cce: RunCce) -> None:
    (corpus / "miss.jsonl").write_text(
        '{"query":"zebra","expected":["nowhere.py"],"k":1}\n', encoding="utf-8"
    )
    status, out, _ = run_cce(
        "relevance", str(corpus / "miss.jsonl"), "--dir", str(corpus / "corpus")
    )
    assert status == 0
    assert "  bm25          0.000000    0.000000    0.000000    0.000000\n" in out


# --- docs/harness.md#output-and-exit-status against the reference data -----------------


def test_reference_code_set_human_output(reference: Path, run_cce: RunCce) -> None:
    status, out, err = run_cce("relevance", "eval/relevance/code.jsonl")
    assert status == 0, err
    assert out == (reference / "expected" / "relevance-code.txt").read_text(encoding="utf-8")
    assert "queries : 7" in out
    assert "token-level span metrics (1 of 7 queries carry ranged anchors)" in out


def test_reference_code_set_json_is_the_golden(reference: Path) -> None:
    status, out, err = _subprocess(["eval/relevance/code.jsonl", "--json"], reference)
    assert status == 0, err
    golden = reference / "test" / "fixture" / "relevance" / "code.golden.json"
    assert out == golden.read_text(encoding="utf-8")


def test_reference_code_set_json_tokens(reference: Path, run_cce: RunCce) -> None:
    body = json.loads(run_cce("relevance", "eval/relevance/code.jsonl", "--json")[1])
    for backend in body["backends"]:
        assert backend["tokens"]["queries"] == 1
        assert isinstance(backend["tokens"]["iou"], str)
        ranged = [row["id"] for row in backend["per_query"] if "tokens" in row]
        assert ranged == ["code-read-config-span"]
    assert "compare" not in body


REFERENCE_COMPARE_TAIL = """
  per-query deltas (bm25 → hybrid; positive = hybrid wins)
  query                           dP@k     drecall        dMRR         dF1
  code-read-config           +0.000000   +0.000000   +0.166667   +0.000000
  code-parse-json            +0.000000   +0.000000   +0.000000   +0.000000
  code-build-index           +0.000000   +0.000000   +0.000000   +0.000000
  code-loader-class          +0.000000   +0.000000   +0.000000   +0.000000
  code-sum-node              +0.000000   +0.000000   +0.000000   +0.000000
  code-interface-kind        +0.000000   +0.000000   +0.000000   +0.000000
  code-read-config-span      +0.000000   +0.000000   +0.000000   +0.000000
  mean                       +0.000000   +0.000000   +0.023810   +0.000000

  paired t-test on the per-query deltas (two-sided, n=7, df=6)
  metric        mean-delta           t           p                    95% CI
  P@k            +0.000000         n/a    1.000000    [+0.000000, +0.000000]
  recall         +0.000000         n/a    1.000000    [+0.000000, +0.000000]
  MRR            +0.023810   +1.000000    0.355918    [-0.034450, +0.082069]
  F1             +0.000000         n/a    1.000000    [+0.000000, +0.000000]
"""


def test_reference_compare_block(reference: Path, run_cce: RunCce) -> None:
    status, out, _ = run_cce("relevance", "eval/relevance/code.jsonl", "--compare", "bm25,hybrid")
    assert status == 0
    summary = (reference / "expected" / "relevance-code.txt").read_text(encoding="utf-8")
    summary_lines = [line for line in summary.split("\n") if not line.startswith("  vector ")]
    assert out == "\n".join(summary_lines) + REFERENCE_COMPARE_TAIL


def test_reference_compare_json(reference: Path, run_cce: RunCce) -> None:
    argv = ["eval/relevance/code.jsonl", "--compare", "bm25,hybrid", "--json"]
    body = json.loads(run_cce("relevance", *argv)[1])
    assert body["schema"] == "cce.relevance.report/v2"
    assert [b["backend"] for b in body["backends"]] == ["bm25", "hybrid"]
    assert (body["compare"]["a"], body["compare"]["b"]) == ("bm25", "hybrid")
    for key in ("precision_at_k", "recall", "mrr", "f1"):
        metric = body["compare"]["metrics"][key]
        assert metric["n"] == 7
        assert metric["mean_delta"][0] in "+-"
        assert all(isinstance(metric[f], str) for f in ("p", "ci95_low", "ci95_high"))
    assert body["compare"]["metrics"]["mrr"] == {
        "ci95_high": "+0.082069",
        "ci95_low": "-0.034450",
        "mean_delta": "+0.023810",
        "n": 7,
        "p": "0.355918",
        "t": "+1.000000",
    }


def test_reference_other_pairs_stats_rows(reference: Path, run_cce: RunCce) -> None:
    out = run_cce("relevance", "eval/relevance/code.jsonl", "--compare", "bm25,vector")[1]
    assert "  P@k            +0.028571   +1.000000    0.355918    [-0.041340, +0.098483]\n" in out
    assert "  MRR            +0.095238   +1.000000    0.355918    [-0.137801, +0.328277]\n" in out
    assert "  F1             +0.019841   +1.000000    0.355918    [-0.028709, +0.068391]\n" in out
    out = run_cce("relevance", "eval/relevance/code.jsonl", "--compare", "hybrid,bm25")[1]
    assert "  MRR            -0.023810   -1.000000    0.355918    [-0.082069, +0.034450]\n" in out


def test_reference_docs_set(reference: Path, run_cce: RunCce) -> None:
    status, out, _ = run_cce("relevance", "eval/relevance/docs.jsonl")
    assert status == 0
    assert "queries : 4" in out
    assert "  corpus  : eval/relevance/docs-corpus\n" in out
    assert "token-level" not in out
    first = run_cce("relevance", "eval/relevance/docs.jsonl", "--json")[1]
    second = run_cce("relevance", "eval/relevance/docs.jsonl", "--json")[1]
    assert first == second and first.endswith("}\n")


def test_reference_single_backend_and_foreign_corpus(reference: Path, run_cce: RunCce) -> None:
    body = json.loads(
        run_cce("relevance", "eval/relevance/code.jsonl", "--backend", "bm25", "--json")[1]
    )
    assert [b["backend"] for b in body["backends"]] == ["bm25"]
    status, out, _ = run_cce(
        "relevance", "eval/relevance/code.jsonl", "--dir", "eval/relevance/docs-corpus"
    )
    assert status == 0
    assert "docs-corpus" in out


# --- the project's own starter sets ----------------------------------------------------


def test_own_code_set_json_is_the_pinned_golden(repo_root: Path, run_cce: RunCce) -> None:
    status, out, err = run_cce("relevance", "eval/relevance/code.jsonl", "--json")
    assert status == 0, err
    assert out == GOLDEN.read_text(encoding="utf-8")


def test_own_code_set_human_and_compare(repo_root: Path, run_cce: RunCce) -> None:
    status, out, _ = run_cce("relevance", "eval/relevance/code.jsonl", "--compare", "bm25,hybrid")
    assert status == 0
    assert "  corpus  : eval/relevance/../corpus/sample\n" in out
    assert "token-level span metrics (" in out
    assert "per-query deltas (bm25 → hybrid; positive = hybrid wins)" in out
    assert "-0.000000" not in out


def test_own_docs_set_is_deterministic(repo_root: Path, run_cce: RunCce) -> None:
    first = run_cce("relevance", "eval/relevance/docs.jsonl", "--json")
    second = run_cce("relevance", "eval/relevance/docs.jsonl", "--json")
    assert first[0] == 0, first[2]
    assert first == second
    body = json.loads(first[1])
    assert body["corpus"] == "eval/relevance/docs-corpus"
    assert body["queries"] == 5
    assert "tokens" not in body["backends"][0]
    assert "token-level" not in run_cce("relevance", "eval/relevance/docs.jsonl")[1]


def test_format_json_is_the_json_alias_and_text_is_the_default(
    repo_root: Path, run_cce: RunCce
) -> None:
    golden = GOLDEN.read_text(encoding="utf-8")
    assert run_cce("relevance", "eval/relevance/code.jsonl", "--format", "json")[1] == golden
    text = run_cce("relevance", "eval/relevance/code.jsonl")[1]
    assert run_cce("relevance", "eval/relevance/code.jsonl", "--format", "text")[1] == text
    _assert_user_error(
        run_cce("relevance", "eval/relevance/code.jsonl", "--format", "yaml"), 2, "invalid choice"
    )
    _assert_user_error(
        run_cce("relevance", "eval/relevance/code.jsonl", "--format", "text", "--json"),
        2,
        "not allowed with",
    )
