"""Every flag a message suggests is a flag of the command that prints the message.

A message such as `re-run with --protection strict` is only help when the command that
printed it takes `--protection`. The table names each suggestion with the commands that
can print it (the message's source is in the comment); the tests below it follow the
messages whose wording depends on the command."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cce_cli.main import build_parser

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]

SUGGESTIONS: tuple[tuple[str, str], ...] = (
    # evaluation/indexes.py: the strict protection notice of every building command.
    *(("--protection", command) for command in ("index", "conformance", "relevance", "pool")),
    # evaluation/run_checks.py and corpus_checks.py: refusing with --strict.
    *(("--strict", command) for command in ("relevance", "pool", "check")),
    # evaluation/run_checks.py: whole-file runs are judged with --granularity file.
    ("--granularity", "relevance"),
    # commands/relevance.py fixture_corpus, commands/check.py: "no corpus: pass --dir".
    *(("--dir", command) for command in ("relevance", "pool", "check")),
    # commands/relevance.py: store refusal "evaluate a corpus directory with --dir".
    ("--dir", "relevance"),
    # compare/saved_report.py: choosing a saved report's backends.
    *(("--backend", command) for command in ("diff",)),
    *(("--backends", command) for command in ("diff", "report")),
    # runs/plan.py: "name the pair to plan for with --compare A,B".
    ("--compare", "plan"),
    # evaluation/harness.py, commands/relevance.py: --compare, --metrics, --json.
    *(("--compare", command) for command in ("relevance",)),
    *(("--metrics", command) for command in ("relevance",)),
    *(("--json", command) for command in ("relevance",)),
    *(("--format", command) for command in ("relevance", "diff", "check", "plan")),
    # compare/gate.py: "gate with --test t or --test randomization".
    *(("--test", command) for command in ("relevance", "diff")),
    # evaluation/configurations.py: an explicit --config that is no file.
    *(("--config", command) for command in ("relevance", "pool", "search", "backends")),
    # formats/external_runs.py: "--run NAME=FILE#backend".
    *(("--run", command) for command in ("relevance", "pool")),
    # embed/registry.py: "pass --model NAME_OR_PATH", "re-index ... --embedder".
    ("--model", "index"),
    ("--embedder", "index"),
    # commands/search.py: "--top-k", "--dir".
    ("--top-k", "search"),
    ("--dir", "search"),
)


def _options(command: str) -> set[str]:
    parser, _ = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        option for action in commands.choices[command]._actions for option in action.option_strings
    }


@pytest.mark.parametrize(("flag", "command"), SUGGESTIONS)
def test_a_suggested_flag_is_a_flag_of_the_command(flag: str, command: str) -> None:
    assert flag in _options(command)


def _suggested(err: str) -> list[str]:
    return [word.strip("`'\",.;()") for word in err.split() if word.startswith(("--", "`--"))]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("def alpha():\n    return 1\n", encoding="utf-8")
    (tmp_path / "f.jsonl").write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"x","query":"alpha","expected":["a.py"]}\n',
        encoding="utf-8",
    )
    return tmp_path


def test_report_names_only_the_flag_it_has(workspace: Path, run_cce: RunCce) -> None:
    fixtures = str(workspace / "f.jsonl")
    code, out, err = run_cce("relevance", fixtures, "--json", "--no-cache")
    assert code == 0, err
    saved = workspace / "r.json"
    saved.write_text(out, encoding="utf-8")
    html = str(workspace / "r.html")
    code, _, err = run_cce("report", str(saved), "--backends", "bm25,nope", "-o", html)
    assert code == 1 and "no backend 'nope'" in err
    assert _suggested(err) == ["--backends"]


def test_relevance_names_the_configuration_key_for_a_missing_model(
    workspace: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CCE_MODEL2VEC_MODEL", raising=False)
    (workspace / "cce.toml").write_text(
        '[backends.m2v]\nuse = "vector"\nembedder = "model2vec"\n', encoding="utf-8"
    )
    fixtures = str(workspace / "f.jsonl")
    code, _, err = run_cce("relevance", fixtures, "--backend", "m2v", "--no-cache")
    assert code == 1
    assert 'model = "NAME_OR_PATH"' in err and "CCE_MODEL2VEC_MODEL" in err
    assert _suggested(err) == []


def test_a_store_without_its_model_names_the_index_flags(
    workspace: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_cli.evaluation import indexes
    from cce_retrieval import create_embedder

    monkeypatch.delenv("CCE_MODEL2VEC_MODEL", raising=False)
    assert run_cce("index", str(workspace / "corpus"), "--no-metrics")[0] == 0
    monkeypatch.setattr(indexes, "query_embedder", lambda index: create_embedder("model2vec"))
    store = str(workspace / "corpus" / ".cce" / "index.json")
    code, _, err = run_cce("search", "alpha", "--store", store, "--no-metrics")
    assert code == 1 and "records no model" in err
    suggested = _suggested(err)
    assert suggested == ["--embedder", "--model"]
    assert set(suggested) <= _options("index")


def test_the_protection_notice_names_a_flag_pool_takes(tmp_path: Path, run_cce: RunCce) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "deploy.sh").write_text('export DB_PASSWORD="hunter2-hunter2"\n', encoding="utf-8")
    fixtures = tmp_path / "f.jsonl"
    fixtures.write_text(
        '{"schema":"cce.relevance/v1","corpus":"corpus"}\n'
        '{"id":"x","query":"password","expected":[]}\n',
        encoding="utf-8",
    )
    code, _, err = run_cce("pool", str(fixtures), "--no-cache")
    assert code == 0 and "re-run with --protection strict" in err
    assert set(_suggested(err)) == {"--protection"} <= _options("pool")
    assert (
        json.loads(
            "["
            + ",".join(
                run_cce("pool", str(fixtures), "--no-cache", "--protection", "strict")[
                    1
                ].splitlines()
            )
            + "]"
        )[0]["id"]
        == "x"
    )
