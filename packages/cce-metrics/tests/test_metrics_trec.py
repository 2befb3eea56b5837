"""TREC run and qrels files (docs/metrics.md#trec-files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import (
    TrecFormatError,
    evaluate,
    format_qrels,
    format_run,
    parse_qrels,
    parse_run,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)

RUN = """\
q1 Q0 doc-a 1 12.5 bm25
q1 Q0 doc-b 2 3 bm25

q2\tQ0\tdoc-c\t1\t-0.25\tbm25\r
"""

QRELS = """\
q1 0 doc-a 1
q1 0 doc-z 0
q2 0 doc-c 2
q2 0 doc-d -1
"""


def test_parse_run() -> None:
    assert parse_run(RUN) == {"q1": {"doc-a": 12.5, "doc-b": 3.0}, "q2": {"doc-c": -0.25}}


def test_parse_qrels() -> None:
    assert parse_qrels(QRELS) == {
        "q1": {"doc-a": 1, "doc-z": 0},
        "q2": {"doc-c": 2, "doc-d": -1},
    }


def test_the_rank_column_is_not_the_order() -> None:
    # trec_eval ranks by score; a rank column that disagrees changes nothing.
    run = parse_run("q Q0 a 1 0.1 t\nq Q0 b 2 0.9 t\n")
    assert evaluate({"q": {"b": 1}}, run, ["mrr"]).aggregate == {"mrr": 1.0}


@pytest.mark.parametrize(
    ("text", "line", "cause"),
    [
        ("q1 Q0 a 1 0.5\n", 1, "expected 6 fields, found 5"),
        ("\n\nq1 Q0 a one 0.5 t\n", 3, "rank 'one' is not an integer"),
        ("q1 Q0 a 1 high t\n", 1, "score 'high' is not a finite number"),
        ("q1 Q0 a 1 nan t\n", 1, "score 'nan' is not a finite number"),
        ("q1 Q0 a 1 inf t\n", 1, "score 'inf' is not a finite number"),
        ("q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n", 3, "ranked twice"),
    ],
)
def test_bad_run_lines(text: str, line: int, cause: str) -> None:
    with pytest.raises(TrecFormatError) as caught:
        parse_run(text, "run.txt")
    assert caught.value.line == line
    assert cause in caught.value.cause
    assert str(caught.value).startswith(f"run.txt line {line}: {caught.value.cause}; ")


def test_duplicate_names_the_first_line() -> None:
    with pytest.raises(TrecFormatError, match=r"first on line 1"):
        parse_run("q1 Q0 a 1 1 t\nq1 Q0 a 2 0 t\n")


@pytest.mark.parametrize(
    ("text", "line", "cause"),
    [
        ("q1 0 a\n", 1, "expected 4 fields, found 3"),
        ("q1 0 a 1\nq1 0 b yes\n", 2, "relevance 'yes' is not an integer"),
        ("q1 0 a 1.5\n", 1, "relevance '1.5' is not an integer"),
        ("q1 0 a 1\nq1 0 a 0\n", 2, "judged twice"),
    ],
)
def test_bad_qrels_lines(text: str, line: int, cause: str) -> None:
    with pytest.raises(TrecFormatError) as caught:
        parse_qrels(text, "qrels.txt")
    assert caught.value.line == line
    assert cause in caught.value.cause
    assert caught.value.fix


def test_invalid_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 a 1 1 t\nq1 Q0 \xff 2 0 t\n")
    with pytest.raises(TrecFormatError) as caught:
        read_run(path)
    assert caught.value.line == 2
    assert "UTF-8" in caught.value.cause


def test_format_run_in_rank_order_with_ranks_rewritten() -> None:
    run = {"q2": {"x": 1.0}, "q1": {"a": 0.5, "b": 0.5, "c": 2.0}}
    assert format_run(run, "mine") == (
        "q1 Q0 c 1 2.0 mine\nq1 Q0 b 2 0.5 mine\nq1 Q0 a 3 0.5 mine\nq2 Q0 x 1 1.0 mine\n"
    )


def test_format_qrels_sorted() -> None:
    assert format_qrels({"q2": {"b": 0}, "q1": {"z": 2, "a": 1}}) == (
        "q1 0 a 1\nq1 0 z 2\nq2 0 b 0\n"
    )


@pytest.mark.parametrize("bad", ["", "two words", "tab\there"])
def test_writers_refuse_ids_that_would_break_the_format(bad: str) -> None:
    with pytest.raises(ValueError, match="whitespace"):
        format_run({bad: {"a": 1.0}})
    with pytest.raises(ValueError, match="whitespace"):
        format_qrels({"q": {bad: 1}})
    with pytest.raises(ValueError, match="whitespace"):
        format_run({"q": {"a": 1.0}}, tag=bad)


def test_write_and_read_back(tmp_path: Path) -> None:
    run = {"q1": {"a": 0.1 + 0.2, "b": 1e-300}, "q2": {"c": -5.0}}
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 3}}
    write_run(tmp_path / "run.txt", run)
    write_qrels(tmp_path / "qrels.txt", qrels)
    assert read_run(tmp_path / "run.txt") == run
    assert read_qrels(tmp_path / "qrels.txt") == qrels
    assert sorted(os.listdir(tmp_path)) == ["qrels.txt", "run.txt"]


def test_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(ValueError):
        write_run(path, {"q": {"a": float("nan")}})
    assert path.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["run.txt"]


ids = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="\x85\xa0"),
    min_size=1,
    max_size=6,
)
scores = st.floats(allow_nan=False, allow_infinity=False)


@given(st.dictionaries(ids, st.dictionaries(ids, scores, max_size=5), max_size=4))
def test_run_round_trip(run: dict[str, dict[str, float]]) -> None:
    assert parse_run(format_run(run)) == {query: docs for query, docs in run.items() if docs}


@given(st.dictionaries(ids, st.dictionaries(ids, st.integers(-3, 5), max_size=5), max_size=4))
def test_qrels_round_trip(qrels: dict[str, dict[str, int]]) -> None:
    assert parse_qrels(format_qrels(qrels)) == {
        query: docs for query, docs in qrels.items() if docs
    }
