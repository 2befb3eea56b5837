"""Findings beyond the contract: duplicate ids, near-miss keys, header corpus values,
anchor paths the index never records, and the byte-order mark (library and command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cce_fixtures import (
    Finding,
    find_problems,
    is_absolute_anchor_path,
    lint_fixtures,
    normalised_anchor_path,
    parse_fixtures,
)
from cce_fixtures.cli import main

_HEADER = '{"schema":"cce.relevance/v1","corpus":"src"}\n'


def _messages(text: str) -> list[tuple[int | None, str, str]]:
    return [(f.line, f.severity, f.message) for f in lint_fixtures(text)]


def test_a_clean_set_has_no_findings() -> None:
    text = _HEADER + '{"id":"a","query":"x","expected":["a.py#function_definition@1-2"]}\n'
    assert lint_fixtures(text) == []


def test_duplicate_ids_are_errors_on_the_later_line() -> None:
    text = (
        '{"id":"a","query":"x","expected":["a.py"]}\n'
        '{"id":"b","query":"x","expected":["a.py"]}\n'
        '{"id":"a","query":"y","expected":["b.py"]}\n'
    )
    assert lint_fixtures(text) == [
        Finding(
            3,
            "error",
            'duplicate case id "a" (first used on line 1); give every case its own id',
            "duplicate-id",
        )
    ]


def test_an_explicit_id_can_collide_with_a_default_one() -> None:
    text = '{"query":"x","expected":["a.py"]}\n{"id":"q1","query":"y","expected":["b.py"]}\n'
    assert [f.line for f in lint_fixtures(text)] == [2]


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("K", "k"),
        ("Query", "query"),
        ("expect", "expected"),
        ("querry", "query"),
        ("ID", "id"),
        ("tag", "tags"),
        ("Secondary", "secondary"),
    ],
)
def test_a_near_miss_case_key_warns_naming_the_field(key: str, field: str) -> None:
    fields = {"query": '"x"', "expected": '["a.py"]', key: "1"}
    fields.pop(field, None)
    body = ",".join(f'"{name}":{value}' for name, value in fields.items())
    findings = lint_fixtures("{" + body + "}\n")
    assert findings == [
        Finding(
            1,
            "warning",
            f'key "{key}" is ignored; did you mean "{field}"? (keys are case-sensitive)',
            "near-miss-key",
        )
    ]


@pytest.mark.parametrize("key", ["note", "kind", "title", "why", "schema", "comment"])
def test_annotations_do_not_warn(key: str) -> None:
    assert lint_fixtures(f'{{"query":"x","expected":["a.py"],"{key}":1}}') == []


def test_a_near_miss_key_beside_the_real_field_is_an_annotation() -> None:
    assert lint_fixtures('{"query":"x","Query":"X","expected":["a.py"]}') == []


def test_a_near_miss_header_key_warns() -> None:
    assert _messages('{"schema":"cce.relevance/v1","Corpus":"src"}\n') == [
        (1, "warning", 'key "Corpus" is ignored; did you mean "corpus"? (keys are case-sensitive)')
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [("5", "a number 5"), ('""', "an empty string"), ("null", "null"), ("[1]", "an array [1]")],
)
def test_a_header_corpus_of_the_wrong_value_is_an_error_saying_so(value: str, shown: str) -> None:
    text = f'{{"schema":"cce.relevance/v1","corpus":{value}}}\n{{"query":"x","expected":["a"]}}'
    # The contract itself accepts it (and then means "no corpus").
    assert parse_fixtures(text).corpus is None
    assert _messages(text) == [
        (
            1,
            "error",
            f'the header\'s "corpus" is {shown}, so it names no corpus; give the directory '
            'to index as a string relative to this file, e.g. "corpus":"../src"',
        )
    ]


@pytest.mark.parametrize(
    ("anchor", "message"),
    [
        (
            "./src/a.py#function_definition",
            "the index records normalised paths, without './', '.', '..' or empty parts; "
            'write "src/a.py#function_definition"',
        ),
        (
            "src//a.py@3-4",
            "the index records normalised paths, without './', '.', '..' or empty parts; "
            'write "src/a.py@3-4"',
        ),
        ("src\\\\a.py", "the index records paths with '/' separators; write \"src/a.py\""),
        (
            "/home/me/src/a.py",
            "an absolute path never matches; write it relative to the corpus directory, "
            "with '/' separators",
        ),
        (
            "C:\\\\src\\\\a.py",
            "an absolute path never matches; write it relative to the corpus directory, "
            "with '/' separators",
        ),
        ("../a.py", "a path outside the corpus never matches"),
    ],
)
def test_anchor_paths_the_index_never_records_warn(anchor: str, message: str) -> None:
    findings = lint_fixtures(f'{{"query":"x","expected":["ok.py"],"secondary":["{anchor}"]}}')
    assert len(findings) == 1
    assert findings[0].severity == "warning"
    assert findings[0].line == 1
    assert findings[0].message.endswith(message), findings[0].message


def test_path_helpers() -> None:
    assert normalised_anchor_path("src/a.py") is None
    assert normalised_anchor_path("./a.py") == "a.py"
    assert normalised_anchor_path("a\\b.py") == "a/b.py"
    assert normalised_anchor_path("a/../b.py") == "b.py"
    assert is_absolute_anchor_path("/a")
    assert is_absolute_anchor_path("c:/a")
    assert not is_absolute_anchor_path("a/b")


def test_a_bom_gets_an_actionable_message_in_the_contract_and_the_rest_is_still_checked() -> None:
    text = '\ufeff{"query":"x","expected":["a.py"]}\n{"query":"","expected":["a"]}\n'
    problems = [(p.line, p.detail) for p in find_problems(text)]
    assert problems == [
        (1, "invalid JSON: file starts with a UTF-8 byte-order mark; save it without BOM"),
        (2, '"query" must be a string that is not blank'),
    ]
    assert lint_fixtures(text) == []


def test_validate_prints_errors_and_warnings_in_line_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "set.jsonl"
    path.write_bytes(
        (
            '\ufeff{"schema":"cce.relevance/v1","corpus":5}\n'
            '{"id":"a","query":"x","expected":["./a.py"],"K":3}\n'
            '{"id":"a","query":"y","expected":["b.py"]}\n'
        ).encode()
    )
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}:1: invalid JSON: file starts with a UTF-8 byte-order mark; save it without BOM",
        f'{path}:1: the header\'s "corpus" is a number 5, so it names no corpus; give the '
        'directory to index as a string relative to this file, e.g. "corpus":"../src"',
        f'{path}:2: warning: key "K" is ignored; did you mean "k"? (keys are case-sensitive)',
        f'{path}:2: warning: anchor "./a.py": the index records normalised paths, without '
        "'./', '.', '..' or empty parts; write \"a.py\"",
        f'{path}:3: duplicate case id "a" (first used on line 2); give every case its own id',
    ]


def test_warnings_alone_pass_unless_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"query":"x","expected":["a.py"],"Query":"y","K":5}\n')
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == (
        f'{path}:1: warning: key "K" is ignored; did you mean "k"? (keys are case-sensitive)\n'
    )
    assert main(["validate", "--strict", str(path)]) == 1
