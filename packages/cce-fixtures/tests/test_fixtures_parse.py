"""Fixture parsing (docs/fixtures.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cce_fixtures import (
    DEFAULT_K,
    SCHEMA_ID,
    Anchor,
    Case,
    FixtureError,
    FixtureSet,
    decode_fixture_bytes,
    find_problems,
    fixture_converter,
    parse_fixtures,
)


def _error(text: str) -> FixtureError:
    with pytest.raises(FixtureError) as caught:
        parse_fixtures(text)
    return caught.value


def test_constants() -> None:
    assert SCHEMA_ID == "cce.relevance/v1"
    assert DEFAULT_K == 10


# --- docs/fixtures.md fixture parsing 1-3 ------------------------------------------------


def test_header_blank_line_and_two_cases() -> None:
    text = (
        '{"schema":"cce.relevance/v1","corpus":"../corpus"}\n'
        "\n"
        '{"query":"hash password","expected":["auth.py"]}\n'
        '{"id":"named","query":"refund","expected":["payments.py"],"k":3}\n'
    )
    fixtures = parse_fixtures(text)
    assert fixtures == FixtureSet(
        corpus="../corpus",
        cases=(
            Case("q3", "hash password", (Anchor("auth.py", None, None),), 10, 3),
            Case("named", "refund", (Anchor("payments.py", None, None),), 3, 4),
        ),
    )


def test_lone_case_without_header() -> None:
    fixtures = parse_fixtures('{"query":"a","expected":["auth.py"]}')
    assert fixtures.corpus is None
    assert len(fixtures.cases) == 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "line 1"),
        ('{"query":"a","expected":[]}', "non-empty array"),
        ('{"query":"","expected":["a.py"]}', "query"),
        ('{"query":"a","expected":["a.py"],"k":0}', "positive integer"),
        ("", "no query cases"),
        ('{"schema":"cce.relevance/v9"}', "unsupported schema"),
        (
            '{"query":"a","expected":["a.py"]}\n{"schema":"cce.relevance/v1"}',
            "first non-blank line",
        ),
    ],
)
def test_pinned_error_fragments(text: str, fragment: str) -> None:
    assert fragment in str(_error(text))


# --- exact messages and line numbers -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "fixture line 1: invalid JSON: Expecting value at column 1"),
        ("\n\n[1, 2]", "fixture line 3: must be a JSON object"),
        ('"text"', "fixture line 1: must be a JSON object"),
        (
            '{"schema":"cce.relevance/v1"}\n{"schema":"cce.relevance/v1"}',
            'fixture line 2: the "schema" header must be the first non-blank line',
        ),
        (
            '{"schema":"cce.relevance/v9"}',
            'fixture line 1: unsupported schema "cce.relevance/v9"; expected "cce.relevance/v1"',
        ),
        (
            '{"schema":1}',
            'fixture line 1: unsupported schema ""; expected "cce.relevance/v1"',
        ),
        ('{"expected":["a"]}', 'fixture line 1: "query" must be a string that is not blank'),
        (
            '{"query":7,"expected":["a"]}',
            'fixture line 1: "query" must be a string that is not blank',
        ),
        (
            '{"query":"a","expected":"a.py"}',
            'fixture line 1: "expected" must be a non-empty array of anchors',
        ),
        (
            '{"query":"a","expected":["a.py", 3]}',
            'fixture line 1: every anchor in "expected" must be a JSON string',
        ),
        (
            '{"query":"a","expected":["a.py", "f.py@42"]}',
            "fixture line 1: anchor \"f.py@42\" has an invalid line range after '@'; "
            "expected a-b with 1 <= a <= b",
        ),
        (
            '{"query":"a","expected":["x"],"k":"5"}',
            'fixture line 1: "k" must be a positive integer',
        ),
        ("  \n\t\n", "the fixture set contains no query cases"),
        ('{"schema":"cce.relevance/v1","corpus":"c"}', "the fixture set contains no query cases"),
    ],
)
def test_exact_messages(text: str, message: str) -> None:
    error = _error(text)
    assert str(error) == message
    assert error.message == message


def test_error_line_and_detail() -> None:
    error = _error('\n{"query":"a","expected":["#"]}')
    assert error.line == 2
    assert error.detail == "anchor \"#\" has an empty kind after '#'"
    assert str(error) == "fixture line 2: anchor \"#\" has an empty kind after '#'"
    assert isinstance(error, ValueError)


def test_no_cases_error_has_no_line() -> None:
    error = _error("")
    assert error.line is None
    assert str(error) == error.detail == "the fixture set contains no query cases"


# --- docs/fixtures.md#cases validation order ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"query":" ","expected":[],"k":0}', '"query"'),
        ('{"query":"q","expected":[],"k":0}', "non-empty array"),
        ('{"query":"q","expected":[1, "#"],"k":0}', "must be a JSON string"),
        ('{"query":"q","expected":["#", 1],"k":0}', "empty kind"),
        ('{"query":"q","expected":["a"],"k":0,"id":5}', "positive integer"),
    ],
)
def test_first_failing_check_wins(text: str, fragment: str) -> None:
    assert fragment in str(_error(text))


def test_header_not_first_is_checked_before_the_schema_value() -> None:
    text = '{"query":"a","expected":["x"]}\n{"schema":"nonsense"}'
    assert "first non-blank line" in str(_error(text))


def test_first_error_aborts_even_if_later_lines_are_bad_too() -> None:
    assert str(_error('{"query":"a","expected":[]}\nnot json')).startswith("fixture line 1:")


# --- header rules ------------------------------------------------------------------------


def test_blank_lines_before_header_are_fine_and_counted() -> None:
    text = ' \r\n\u3000\n{"schema":"cce.relevance/v1","corpus":"c"}\n{"query":"a","expected":["x"]}'
    fixtures = parse_fixtures(text)
    assert fixtures.corpus == "c"
    assert fixtures.cases[0].id == "q4"
    assert fixtures.cases[0].line == 4


@pytest.mark.parametrize("corpus_json", ['""', "7", "null", '["c"]', "{}"])
def test_non_string_or_empty_corpus_means_no_corpus(corpus_json: str) -> None:
    text = (
        '{"schema":"cce.relevance/v1","corpus":' + corpus_json + '}\n{"query":"a","expected":["x"]}'
    )
    assert parse_fixtures(text).corpus is None


def test_header_ignores_other_keys_including_expected() -> None:
    text = '{"schema":"cce.relevance/v1","expected":[],"note":1}\n{"query":"a","expected":["x"]}'
    assert len(parse_fixtures(text).cases) == 1


def test_schema_on_a_line_with_query_is_an_ignored_field_of_a_case() -> None:
    fixtures = parse_fixtures('{"schema":"other","query":"a","expected":["x"]}')
    assert fixtures.corpus is None
    assert [case.query for case in fixtures.cases] == ["a"]


# --- case defaults -----------------------------------------------------------------------


def test_query_is_trimmed_with_rust_semantics() -> None:
    case = parse_fixtures('{"query":"\\u3000 hash \\t","expected":["x"]}').cases[0]
    assert case.query == "hash"
    kept = parse_fixtures('{"query":"\\u001chash","expected":["x"]}').cases[0]
    assert kept.query == "\x1chash"


@pytest.mark.parametrize(
    ("id_json", "expected_id"),
    [('""', ""), ('" spaced "', " spaced "), ("7", "q1"), ("null", "q1"), ("[]", "q1")],
)
def test_id_is_verbatim_string_or_defaults_to_q_line(id_json: str, expected_id: str) -> None:
    text = '{"id":' + id_json + ',"query":"a","expected":["x"]}'
    assert parse_fixtures(text).cases[0].id == expected_id


def test_duplicate_ids_are_not_detected() -> None:
    text = '{"id":"d","query":"a","expected":["x"]}\n{"id":"d","query":"b","expected":["y"]}'
    assert [case.id for case in parse_fixtures(text).cases] == ["d", "d"]


@pytest.mark.parametrize(("k_json", "k"), [("1", 1), ("3", 3), ("18446744073709551615", 2**64 - 1)])
def test_k_accepts_integers_in_u64_range(k_json: str, k: int) -> None:
    text = '{"query":"a","expected":["x"],"k":' + k_json + "}"
    assert parse_fixtures(text).cases[0].k == k


@pytest.mark.parametrize(
    "k_json",
    ["0", "-1", "null", "true", "false", "5.0", "1e2", '"5"', "18446744073709551616", "[5]"],
)
def test_k_rejects_everything_else(k_json: str) -> None:
    text = '{"query":"a","expected":["x"],"k":' + k_json + "}"
    assert str(_error(text)) == 'fixture line 1: "k" must be a positive integer'


def test_unknown_keys_are_ignored() -> None:
    text = '{"query":"a","expected":["x"],"note":{"nested":[1,2.5,null]},"weight":-3}'
    assert parse_fixtures(text).cases[0].expected == (Anchor("x", None, None),)


def test_duplicate_keys_last_wins() -> None:
    text = '{"query":"first","query":"second","expected":[],"expected":["x"]}'
    assert parse_fixtures(text).cases[0].query == "second"


# --- line splitting and JSON strictness ---------------------------------------------------


def test_crlf_lines_and_final_terminator() -> None:
    text = '{"schema":"cce.relevance/v1"}\r\n{"query":"a","expected":["x"]}\r\n'
    assert parse_fixtures(text).cases[0].line == 2


def test_line_separator_u2028_does_not_split_lines() -> None:
    text = '{"query":"a\u2028b","expected":["x"]}'
    assert parse_fixtures(text).cases[0].query == "a\u2028b"


@pytest.mark.parametrize(
    "line",
    [
        '{"query":"a","expected":["x"],"w":NaN}',
        '{"query":"a","expected":["x"],"w":Infinity}',
        '{"query":"a","expected":["x"],"w":-Infinity}',
        '{"query":"a","expected":["x"],"w":1e400}',
        '{"query":"a","expected":["x"],"w":' + "9" * 400 + "}",
        '{"query":"a","expected":["x"]} trailing',
        '{"query":"a","expected":["x"]}{}',
        '{"query":"\\ud800","expected":["x"]}',
        '{"query":"a","expected":["x"],"\\udc00":1}',
        '{"query":"a\tb","expected":["x"]}',
        '\ufeff{"query":"a","expected":["x"]}',
        '{"query":"a","expected":["x"],}',
        "{'query':'a','expected':['x']}",
        '{"query":"a","expected":["x"],"w":' + "[" * 127 + "]" * 127 + "}",
        "[" * 100_000,
    ],
)
def test_json_that_serde_rejects_is_invalid(line: str) -> None:
    assert str(_error(line)).startswith("fixture line 1: invalid JSON: ")


def test_json_that_serde_accepts() -> None:
    text = (
        ' \t{"query":"a","expected":["x"],'
        '"deep":' + "[" * 126 + "]" * 126 + ","
        '"big":' + "9" * 30 + ","
        '"tiny":1e-400,"pair":"\\ud83e\\udd80"} \r'
    )
    assert parse_fixtures(text).cases[0].query == "a"


def test_decode_fixture_bytes_is_strict_utf8_without_bom_stripping() -> None:
    assert decode_fixture_bytes("é\r\n".encode()) == "é\r\n"
    assert decode_fixture_bytes(b"\xef\xbb\xbfx") == "\ufeffx"
    with pytest.raises(UnicodeDecodeError):
        decode_fixture_bytes(b"\xff")
    with pytest.raises(UnicodeDecodeError):
        decode_fixture_bytes(b"\xed\xa0\x80")  # an encoded surrogate is not UTF-8


# --- find_problems -----------------------------------------------------------------------


def test_find_problems_reports_every_line() -> None:
    text = (
        '{"schema":"cce.relevance/v1"}\n'
        '{"query":"a","expected":["x"]}\n'
        '{"query":"b","expected":["f.py@0-4"]}\n'
        "\n"
        "{not json\n"
        '{"schema":"cce.relevance/v1"}\n'
    )
    problems = find_problems(text)
    assert [(problem.line, problem.detail) for problem in problems] == [
        (
            3,
            "anchor \"f.py@0-4\" has an invalid line range after '@'; "
            "expected a-b with 1 <= a <= b",
        ),
        (5, "invalid JSON: Expecting property name enclosed in double quotes at column 2"),
        (6, 'the "schema" header must be the first non-blank line'),
    ]


def test_find_problems_is_empty_for_a_valid_set() -> None:
    assert find_problems('{"query":"a","expected":["x"]}') == []


def test_find_problems_counts_a_bad_case_line_as_a_case() -> None:
    problems = find_problems('{"query":"","expected":["x"]}\n{"schema":"cce.relevance/v1"}')
    assert [problem.line for problem in problems] == [1, 2]


def test_find_problems_reports_no_cases_after_line_problems() -> None:
    problems = find_problems('{"schema":"cce.relevance/v2"}\n')
    assert [str(problem) for problem in problems] == [
        'fixture line 1: unsupported schema "cce.relevance/v2"; expected "cce.relevance/v1"',
        "the fixture set contains no query cases",
    ]


# --- the converter -----------------------------------------------------------------------


def test_converter_unstructures_a_case_to_its_contract_object() -> None:
    case = parse_fixtures('{"k":4,"query":" q ","expected":[" a.py # k @ 01-2 ","#kind"]}').cases[0]
    assert fixture_converter.unstructure(case) == {
        "id": "q1",
        "query": "q",
        "expected": ["a.py#k@1-2", "#kind"],
        "k": 4,
    }


# --- reference data ----------------------------------------------------------------------


def test_reference_code_set(reference_relevance_dir: Path) -> None:
    data = (reference_relevance_dir / "code.jsonl").read_bytes()
    fixtures = parse_fixtures(decode_fixture_bytes(data))
    assert fixtures.corpus == "../../test/fixture/samples"
    assert [case.id for case in fixtures.cases] == [
        "code-read-config",
        "code-parse-json",
        "code-build-index",
        "code-loader-class",
        "code-sum-node",
        "code-interface-kind",
        "code-read-config-span",
    ]
    assert {case.k for case in fixtures.cases} == {5}
    assert fixtures.cases[3].expected == tuple(
        Anchor(path, None, None)
        for path in ["python.py", "ruby.rb", "javascript.js", "typescript.ts"]
    )
    assert fixtures.cases[5].expected == (Anchor("typescript.ts", "interface_declaration", None),)
    assert fixtures.cases[6].expected == (Anchor("python.py", None, (3, 4)),)
    assert fixtures.cases[6].line == 8


def test_reference_docs_set(reference_relevance_dir: Path) -> None:
    data = (reference_relevance_dir / "docs.jsonl").read_bytes()
    fixtures = parse_fixtures(decode_fixture_bytes(data))
    assert fixtures.corpus == "docs-corpus"
    assert [(case.id, case.k) for case in fixtures.cases] == [
        ("docs-rate-limit", 3),
        ("docs-deploy", 3),
        ("docs-retry", 3),
        ("docs-fusion", 3),
    ]
