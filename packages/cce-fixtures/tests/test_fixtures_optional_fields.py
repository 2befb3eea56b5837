"""The optional case fields beyond the reference contract: `tags` and `secondary`."""

from __future__ import annotations

import pytest

from cce_fixtures import (
    Anchor,
    Case,
    FixtureError,
    find_problems,
    fixture_converter,
    parse_fixtures,
)


def _case(line: str) -> Case:
    return parse_fixtures(line).cases[0]


def _error(text: str) -> str:
    with pytest.raises(FixtureError) as caught:
        parse_fixtures(text)
    return str(caught.value)


def test_absent_fields_default_to_empty_tuples() -> None:
    case = _case('{"query":"a","expected":["a.py"]}')
    assert case.tags == ()
    assert case.secondary == ()
    assert case == Case("q1", "a", (Anchor("a.py", None, None),), 10, 1)


def test_tags_and_secondary_are_parsed_in_order() -> None:
    case = _case(
        '{"query":"a","expected":["a.py"],"tags":["symbol","py"],'
        '"secondary":["b.py#function_definition@3-4","#class_definition"]}'
    )
    assert case.tags == ("symbol", "py")
    assert case.secondary == (
        Anchor("b.py", "function_definition", (3, 4)),
        Anchor(None, "class_definition", None),
    )


def test_empty_arrays_are_allowed() -> None:
    case = _case('{"query":"a","expected":["a.py"],"tags":[],"secondary":[]}')
    assert (case.tags, case.secondary) == ((), ())


@pytest.mark.parametrize("value", ['"symbol"', "5", "null", "{}", '["a", 1]', "[null]"])
def test_tags_of_the_wrong_type_are_line_numbered_errors(value: str) -> None:
    text = '{"schema":"cce.relevance/v1"}\n' + f'{{"query":"a","expected":["a.py"],"tags":{value}}}'
    assert _error(text) == 'fixture line 2: "tags" must be an array of strings'


@pytest.mark.parametrize("value", ['"a.py"', "5", "null", "{}", '["a.py", 1]', "[[]]"])
def test_secondary_of_the_wrong_type_is_a_line_numbered_error(value: str) -> None:
    text = f'{{"query":"a","expected":["a.py"],"secondary":{value}}}'
    assert _error(text) == 'fixture line 1: "secondary" must be an array of anchor strings'


def test_a_bad_secondary_anchor_names_the_field_and_the_anchor_error() -> None:
    text = '{"query":"a","expected":["a.py"],"secondary":["b.py","x.py#"]}'
    assert _error(text) == (
        'fixture line 1: "secondary": anchor "x.py#" has an empty kind after \'#\''
    )


def test_contract_errors_come_before_the_optional_fields() -> None:
    # A line the reference rejects keeps the reference's message.
    text = '{"query":"a","expected":["a.py"],"k":0,"tags":5,"secondary":5}'
    assert _error(text) == 'fixture line 1: "k" must be a positive integer'
    text = '{"query":"a","expected":["a.py"],"tags":5,"secondary":5}'
    assert _error(text) == 'fixture line 1: "tags" must be an array of strings'


def test_validator_reports_every_bad_optional_field() -> None:
    text = (
        '{"query":"a","expected":["a.py"],"tags":5}\n'
        '{"query":"b","expected":["b.py"],"secondary":["@1-2"]}\n'
    )
    problems = [(problem.line, problem.detail) for problem in find_problems(text)]
    assert [line for line, _ in problems] == [1, 2]
    assert problems[1][1].startswith('"secondary": anchor is empty')


def test_unknown_fields_stay_allowed() -> None:
    case = _case('{"query":"a","expected":["a.py"],"note":"why","tag":5}')
    assert case.tags == ()


def test_unstructure_adds_optional_fields_only_when_set() -> None:
    plain = _case('{"id":"x","query":"a","expected":["a.py"]}')
    assert sorted(fixture_converter.unstructure(plain)) == ["expected", "id", "k", "query"]
    rich = _case('{"id":"x","query":"a","expected":["a.py"],"tags":["t"],"secondary":["b.py@1-2"]}')
    assert fixture_converter.unstructure(rich) == {
        "id": "x",
        "query": "a",
        "expected": ["a.py"],
        "k": 10,
        "tags": ["t"],
        "secondary": ["b.py@1-2"],
    }
