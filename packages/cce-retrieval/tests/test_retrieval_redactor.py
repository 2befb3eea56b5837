"""Content redaction (docs/index-store.md#content-redaction): the documented anchor pairs, each
pattern, each scanner branch."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.parity.text import RUST_WHITESPACE, ascii_lower
from cce_retrieval.protect import redactor
from cce_retrieval.protect.redactor import _case_fold, _redact_private_keys, _scan_value, redact

SPEC_ANCHORS = [
    ('password = "hunter2secret"', 'password = "[REDACTED:SECRET]"'),
    ("api_key: s3cr3tvalue", "api_key: [REDACTED:SECRET]"),
    ('token = "abc"', 'token = "abc"'),
    (
        'password = "changeme", token = "realsecrettail123"',
        'password = "changeme", token = "[REDACTED:SECRET]"',
    ),
    ('password="changeme"token="ZmaskH-mergesecret42"', 'password="[REDACTED:SECRET]"'),
    ('password = "abcdefghij".freeze', 'password = "[REDACTED:SECRET]".freeze'),
    (
        'password = "abcdefghij\ntoken = "klmnopqrst"',
        'password = "[REDACTED:SECRET]\ntoken = "[REDACTED:SECRET]"',
    ),
    (
        "DATABASE_URL=postgres://user:password@localhost/app",
        "DATABASE_URL=postgres://user:password@localhost/app",
    ),
]


@pytest.mark.parametrize(("text", "expected"), SPEC_ANCHORS)
def test_spec_anchor_pairs(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(("text", "expected"), SPEC_ANCHORS)
def test_spec_anchor_outputs_are_fixed_points(text: str, expected: str) -> None:
    assert redact(expected) == expected


# --- Step A: the nine specific patterns ---------------------------------------------------


def test_private_key_block_collapses_to_one_line() -> None:
    text = (
        "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n"
        "-----END RSA PRIVATE KEY-----\nafter\n"
    )
    assert redact(text) == "before\n[REDACTED:PRIVATE_KEY]\nafter\n"


def test_private_key_without_end_marker_is_left_alone() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIE\n"
    assert redact(text) == text


def test_two_private_key_blocks_are_matched_lazily() -> None:
    block = "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----"
    assert redact(f"{block}\nmid\n{block}") == "[REDACTED:PRIVATE_KEY]\nmid\n[REDACTED:PRIVATE_KEY]"


@pytest.mark.parametrize(
    ("secret", "label"),
    [
        ("sk-ant-" + "a" * 20, "ANTHROPIC_KEY"),
        ("sk-ant-api03_" + "Zz9-" * 6, "ANTHROPIC_KEY"),
        ("sk-" + "A1" * 16, "OPENAI_KEY"),
        ("sk_live_" + "b" * 16, "STRIPE_KEY"),
        ("ghp_" + "c" * 36, "GITHUB_TOKEN"),
        ("ghs_" + "D" * 40, "GITHUB_TOKEN"),
        ("xoxb-" + "1234-abcde", "SLACK_TOKEN"),
        ("AKIA" + "ABCDEFGHIJ123456", "AWS_ACCESS_KEY"),
        ("AIza" + "x" * 35, "GOOGLE_API_KEY"),
        ("eyJ" + "a" * 10 + ".eyJ" + "b" * 10 + "." + "c" * 10, "JWT"),
    ],
)
def test_specific_patterns(secret: str, label: str) -> None:
    assert redact(f"use {secret} here") == f"use [REDACTED:{label}] here"


@pytest.mark.parametrize(
    "text",
    [
        "sk-ant-" + "a" * 19,
        "sk-" + "a" * 31,
        "sk_live_" + "b" * 15,
        "ghx_" + "c" * 36,
        "ghp_" + "c" * 35,
        "xoxz-" + "1" * 10,
        "xoxb-" + "1" * 9,
        "AKIA" + "abcdefghij123456",
        "eyJ" + "a" * 9 + ".eyJ" + "b" * 10 + "." + "c" * 10,
    ],
)
def test_specific_pattern_near_misses(text: str) -> None:
    assert redact(text) == text


def test_aws_key_takes_exactly_sixteen_characters() -> None:
    assert redact("AKIA" + "A" * 20) == "[REDACTED:AWS_ACCESS_KEY]AAAA"


def test_anthropic_key_wins_over_openai_pattern() -> None:
    assert redact("sk-ant-" + "a" * 40) == "[REDACTED:ANTHROPIC_KEY]"


def test_specific_label_inside_an_assignment_is_then_generic() -> None:
    # Step A runs first; the remaining value is not a lone stand-in value, so Step B redacts it.
    text = 'api_key = "sk-' + "a" * 32 + '-tail"'
    assert redact(text) == 'api_key = "[REDACTED:SECRET]"'
    assert redact("api_key = sk-" + "a" * 32) == "api_key = [REDACTED:OPENAI_KEY]"


# --- Step B: prefix ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "passwd",
        "secret",
        "secret_key",
        "secret-key",
        "secretkey",
        "api_key",
        "api-key",
        "apikey",
        "access_key",
        "auth_token",
        "private_key",
        "token",
        "PASSWORD",
        "Api_Key",
    ],
)
def test_every_keyword_is_recognised(key: str) -> None:
    assert redact(f"{key}=abcdefgh123") == f"{key}=[REDACTED:SECRET]"


def test_keyword_needs_word_boundaries() -> None:
    assert redact("mytoken=abcdefgh123") == "mytoken=abcdefgh123"
    assert redact("tokens=abcdefgh123") == "tokens=abcdefgh123"
    assert redact("x.token=abcdefgh123") == "x.token=[REDACTED:SECRET]"


def test_keyword_after_underscore_is_not_at_a_boundary() -> None:
    assert redact("github_token=abcdefgh123") == "github_token=abcdefgh123"


def test_operator_whitespace_may_cross_newlines() -> None:
    assert redact("password\n=\n  hunter2hunter2") == "password\n=\n  [REDACTED:SECRET]"


def test_kelvin_sign_folds_to_k_like_rust() -> None:
    assert redact("api_\u212aey=abcdefgh123") == "api_\u212aey=[REDACTED:SECRET]"


def test_dotless_i_does_not_fold_to_i_unlike_python_ignorecase() -> None:
    assert redact("apı_key=abcdefgh123") == "apı_key=abcdefgh123"


def test_combining_mark_before_keyword_blocks_the_boundary() -> None:
    # Rust's \w includes marks; Python's `\b` would see a boundary here.
    text = "e\u0301token=abcdefgh123"
    assert redact(text) == text


def test_no_value_leaves_text_untouched() -> None:
    assert redact("password =") == "password ="
    assert redact("password:") == "password:"


def test_vertical_tab_is_operator_whitespace_not_a_value() -> None:
    # \x0b is Rust `\s` (consumed by the prefix), so the value starts after it.
    assert redact("password=\x0bhunter2hunter2") == "password=\x0b[REDACTED:SECRET]"


# --- Step B: value scanner --------------------------------------------------------------------


def test_unquoted_value_runs_to_whitespace() -> None:
    assert redact("token=abcdefghij rest") == "token=[REDACTED:SECRET] rest"


def test_unquoted_value_does_not_stop_at_unicode_whitespace() -> None:
    assert redact("token=abc\u00a0defghij rest") == "token=[REDACTED:SECRET] rest"


def test_short_values_are_kept() -> None:
    assert redact("password = 1234567") == "password = 1234567"
    assert redact("password = 12345678") == "password = [REDACTED:SECRET]"


def test_short_value_length_is_in_utf8_bytes() -> None:
    # Five characters, eight bytes: not short.
    assert redact("password = éxéxé") == "password = [REDACTED:SECRET]"


@pytest.mark.parametrize("quote", ['"', "'", "`"])
def test_each_quote_character(quote: str) -> None:
    text = f"secret = {quote}abcdefghij{quote};"
    assert redact(text) == f"secret = {quote}[REDACTED:SECRET]{quote};"


def test_unterminated_quote_stops_at_newline_without_closing_quote() -> None:
    assert redact('token = "abcdefghij\nnext') == 'token = "[REDACTED:SECRET]\nnext'


def test_unterminated_quote_at_end_of_text() -> None:
    assert redact("token = 'abcdefghij") == "token = '[REDACTED:SECRET]"


def test_backslash_escapes_the_quote() -> None:
    assert redact('token = "abc\\"defghij" tail') == 'token = "[REDACTED:SECRET]" tail'


def test_backslash_before_newline_does_not_escape_it() -> None:
    assert redact('token = "abcdefgh\\\nx"') == 'token = "[REDACTED:SECRET]\nx"'


def test_doubled_quote_is_an_escaped_quote() -> None:
    assert redact("token = 'abc''defghij' tail") == "token = '[REDACTED:SECRET]' tail"


def test_quote_followed_by_glue_is_inner() -> None:
    assert redact('token = "ab"cdefghij" x') == 'token = "[REDACTED:SECRET]" x'
    assert redact('token = "ab"écdefghij" x') == 'token = "[REDACTED:SECRET]" x'


def test_quote_then_punctuation_with_later_quote_continues() -> None:
    assert redact('token = "ab",cd"efghij" x') == 'token = "[REDACTED:SECRET]" x'


def test_quote_then_punctuation_without_later_quote_closes() -> None:
    assert redact('token = "abcdefghij"); x') == 'token = "[REDACTED:SECRET]"); x'


def test_lookahead_stops_at_whitespace() -> None:
    assert redact('token = "abcdefghij", other = "x"') == 'token = "[REDACTED:SECRET]", other = "x"'


def test_empty_quoted_value_is_kept() -> None:
    assert redact('password = ""') == 'password = ""'


# --- stand-in values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "your-password-here",
        "YOUR_API_KEY_HERE",
        "my-secret-value",
        "the-secret-value",
        "example-value-1",
        "changeme123",
        "place" + "holder-x",
        "dummy-value-1",
        "testing-value",
        "sample-value-1",
        "xxxxxxxxxxxx",
        "<your-secret>",
        "${SECRET_FROM_ENV}",
        "{{ vault.secret }}",
        "[REDACTED:SECRET]",
        "**********",
        "éééééééé",
    ],
)
def test_stand_in_values_are_kept(value: str) -> None:
    text = f'password = "{value}"'
    assert redact(text) == text


@pytest.mark.parametrize("value", ["[REDACTED:A]B]", "[REDACTED:A]tail", "aaaaaaab", "<abcdefgh"])
def test_values_that_are_no_stand_in_are_redacted(value: str) -> None:
    assert redact(f"password = {value}") == "password = [REDACTED:SECRET]"


def test_stand_in_containing_another_assignment_is_redacted() -> None:
    assert redact("password=token=x") == "password=[REDACTED:SECRET]"


def test_later_prefix_inside_redacted_value_is_skipped() -> None:
    assert redact('secret = "abcdefgh token = zzzzzzzzzz"') == 'secret = "[REDACTED:SECRET]"'


def test_multiple_assignments_on_separate_lines() -> None:
    text = "password: hunter2hunter2\napi_key = 'abcdefghijkl'\ntoken = abc\n"
    expected = "password: [REDACTED:SECRET]\napi_key = '[REDACTED:SECRET]'\ntoken = abc\n"
    assert redact(text) == expected


# --- properties -------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "password",
        "token",
        "api_key",
        "SECRET",
        "=",
        ":",
        " ",
        "\n",
        "\t",
        '"',
        "'",
        "`",
        "\\",
        ",",
        ".",
        ")",
        "changeme",
        "abcdefghij",
        "[REDACTED:SECRET]",
        "sk-" + "a" * 32,
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "é",
        "\u212a",
        "\x0b",
        "\u00a0",
    ]
)
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_redaction_never_raises_and_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = redact(text)
    assert isinstance(once, str)
    assert redact(once) == once


# Pieces that come close to a step's patterns without always making one: keywords in odd
# case and with the case-folding signs, every Rust space, token prefixes a character
# short. (No lone surrogates: files are decoded strictly before they are redacted.)
_NEAR_PIECES = st.sampled_from(
    [
        "PassWord",
        "pas\u017fwd",
        "auth-token",
        "\u212aey",
        "private_",
        "key",
        "sk-ant-",
        "sk_live_",
        "ghp_",
        "xoxb-",
        "AKIA",
        "AIza",
        "eyJ",
        "A1b2C3d4E5f6G7h8",
        ".",
        *sorted(RUST_WHITESPACE),
        "\x1c",
    ]
)


_SPACES = st.lists(st.sampled_from([*sorted(RUST_WHITESPACE), "\x1c"]), max_size=3).map("".join)
_ASSIGNMENTS = st.tuples(
    st.sampled_from(["password", "PASSWD", "secret_key", "api-key", "auth_token", "to\u212aen"]),
    _SPACES,
    st.sampled_from(["=", ":", "=>", ""]),
    _SPACES,
    st.sampled_from(["'abcdefghij'", '"xyzzy12345"', "`q1w2e3r4t5`", "hunter2hunter2", "x"]),
).map("".join)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.one_of(_PIECES, _NEAR_PIECES, _ASSIGNMENTS, st.text(max_size=3)), max_size=40).map(
        "".join
    )
)
def test_the_prefilters_skip_only_steps_that_would_change_nothing(text: str) -> None:
    # Each step runs only when an RE2 search says its patterns may match; the result must
    # be the unfiltered steps' to the character.
    unfiltered = redactor._rewrite_assignments(
        redactor._substitute_tokens(_redact_private_keys(text))
    )
    assert redact(text) == unfiltered


def test_the_prefilters_pass_what_each_step_redacts() -> None:
    token = "x = AKIA" + "B" * 16
    assert redactor._ANY_TOKEN.search(token.encode()) is not None
    assert redact(token) == "x = [REDACTED:AWS_ACCESS_KEY]"
    # The keyword spelled with LONG S, Rust spaces around the `=`.
    assignment = "Pa\u017f\u017fword\u2003=\u3000'hunter2hunter2'"
    folded = _case_fold(assignment).encode("utf-8", "surrogatepass")
    assert redactor._ANY_ASSIGNMENT_PREFIX.search(folded) is not None
    assert redact(assignment) == "Pa\u017f\u017fword\u2003=\u3000'[REDACTED:SECRET]'"


# --- oracles for the two places where the port departs from a literal transcription ----------

_PRIVATE_KEY_ONE_REGEX = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
)
_KEY_PIECES = st.sampled_from(
    [
        "-----BEGIN ",
        "-----END ",
        "RSA ",
        "PRIVATE KEY",
        "-----",
        "-",
        "\n",
        "A",
        "x",
        " ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_KEY_PIECES, max_size=25).map("".join))
def test_private_key_pass_equals_the_single_regex(text: str) -> None:
    expected = _PRIVATE_KEY_ONE_REGEX.sub("[REDACTED:PRIVATE_KEY]", text)
    assert _redact_private_keys(text) == expected


def test_private_key_pass_is_linear_on_headers_without_footer() -> None:
    text = "-----BEGIN PRIVATE KEY-----\n" * 20_000
    assert redact(text) == text


def _scan_value_bytes(data: bytes, start: int) -> tuple[int, bytes, bool] | None:
    """The spec's byte-level value scanner, transcribed literally (end, inner, closed)."""
    whitespace = b" \t\n\x0c\r"
    if start >= len(data) or data[start] in whitespace:
        return None
    quote = data[start]
    if quote not in b"\"'`":
        end = start
        while end < len(data) and data[end] not in whitespace:
            end += 1
        return end, data[start:end], False
    i = start + 1
    while i < len(data):
        byte = data[i]
        if byte == 0x0A:
            break
        if byte == 0x5C:
            i += 2 if i + 1 < len(data) and data[i + 1] != 0x0A else 1
            continue
        if byte == quote:
            if i + 1 < len(data) and data[i + 1] == quote:
                i += 2
                continue
            if i + 1 >= len(data) or data[i + 1] in whitespace:
                return i + 1, data[start + 1 : i], True
            nxt = data[i + 1]
            if nxt >= 0x80 or chr(nxt).isalnum() or nxt in b"_-":
                i += 1
                continue
            j = i + 1
            while j < len(data) and data[j] != quote and data[j] not in whitespace:
                j += 1
            if j < len(data) and data[j] == quote:
                i += 1
                continue
            return i + 1, data[start + 1 : i], True
        i += 1
    return i, data[start + 1 : i], False


_SCANNER_PIECES = st.sampled_from(
    ['"', "'", "`", "\\", "\n", " ", "\t", "\x0b", ",", ".", ")", "a", "_", "-", "é", "€", "😀"]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_SCANNER_PIECES, max_size=20).map("".join))
def test_str_scanner_equals_byte_scanner(text: str) -> None:
    by_bytes = _scan_value_bytes(text.encode("utf-8"), 0)
    by_str = _scan_value(text, 0)
    if by_bytes is None or by_str is None:
        assert by_bytes is None and by_str is None
        return
    end, inner, _quote, closed = by_str
    assert (len(text[:end].encode("utf-8")), inner.encode("utf-8"), closed) == by_bytes


FOLD_TEXT = st.lists(
    st.characters(codec="utf-8") | st.sampled_from(["K", "S", "\u212a", "\u017f", "\ud800", "É"]),
    max_size=40,
).map("".join)


@given(FOLD_TEXT)
def test_case_fold_and_ascii_lower_equal_their_per_character_tables(text: str) -> None:
    """The byte-level fast paths against the plain per-character definitions."""
    ascii_table = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
    fold_table: dict[int, int | str] = {**ascii_table, ord("\u212a"): "k", ord("\u017f"): "s"}
    assert ascii_lower(text) == text.translate(ascii_table)
    assert _case_fold(text) == text.translate(fold_table)
    assert len(_case_fold(text)) == len(text)
