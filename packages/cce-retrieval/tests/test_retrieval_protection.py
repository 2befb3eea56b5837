"""Strict protection: every listed name skipped, every listed shape redacted, defaults kept."""

from __future__ import annotations

import bisect
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval import build_index
from cce_retrieval.embed.hashing import HashEmbedder
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.strict import (
    _PATTERN_HINT,
    _PATTERNS,
    _candidate_lines,
    _detection,
    is_strict_sensitive,
    strict_redact,
)
from cce_retrieval.walk.walker import walk

SECRET_LINES = {
    'export DB_PASSWORD="hunter2-hunter2"': "hunter2-hunter2",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "wJalrXUtnFEMI",
    "OPENAI_API_KEY=sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789": "Abcdefghijklmnop",
    "SECRET_TOKEN=q8w7e6r5t4y3": "q8w7e6r5t4y3",
    '{"password": "s3cr3t-value"}': "s3cr3t-value",
    '{"client_secret": "cl13nt-s3cr3t"}': "cl13nt-s3cr3t",
    "DATABASE_URL=postgresql://app:Pg-Pa55word@db.internal:5432/app": "Pg-Pa55word",
    'curl -H "Authorization: Bearer abc123def456ghi789"': "abc123def456ghi789",
    'key = "sk-proj-Zyxwvutsrqponmlkjihgfedcba9876543210"': "Zyxwvutsrqponmlkjihg",
    'gh = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzAB"': "11ABCDEFG01234",
    "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789": (
        "npm_abcdefghijklmnopqrstuvwxyz0123456789"
    ),
    "mysql -u root -pMyPa55w0rd shop": "MyPa55w0rd",
}


@pytest.mark.parametrize("line", sorted(SECRET_LINES))
def test_each_listed_shape_is_redacted_by_strict(line: str) -> None:
    secret = SECRET_LINES[line]
    text = f"{line}\n"
    reference = redact(text)
    stricter, added = strict_redact(reference, "deploy.sh")
    assert secret not in stricter
    assert "[REDACTED:" in stricter
    assert added >= 1


def test_the_reference_misses_these_shapes() -> None:
    # Why strict exists: the default protection keeps most of them verbatim.
    kept = [line for line, secret in SECRET_LINES.items() if secret in redact(line)]
    assert len(kept) >= 10


def test_pgp_block_and_footerless_key_are_redacted() -> None:
    pgp = "a\n-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\nb"
    text, added = strict_redact(redact(pgp))
    assert text == "a\n[REDACTED:PRIVATE_KEY]\nb" and added == 1
    footerless = "x = 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nmore\n"
    text, added = strict_redact(redact(footerless))
    assert text == "x = 1\n[REDACTED:PRIVATE_KEY]" and added == 1


@pytest.mark.parametrize(
    "code",
    [
        "def login(password: str) -> bool:\n    return check(password)\n",
        "token: str = get_token()\n",
        "if not token:\n    raise ValueError('missing token')\n",
        "PASSWORD_FIELD = FORM.fields\n",
        'password = os.environ["DB_PASSWORD"]\n',
        'API_KEY = "${API_KEY}"\n',
        "url = 'https://example.com/path'\n",
    ],
)
def test_ordinary_code_is_left_alone(code: str) -> None:
    assert strict_redact(redact(code), "app.py") == (redact(code), 0)


def _lines_by_line_table(hint: object, data: bytes) -> list[int]:
    """The candidate lines found with a table of every line start (the plain way)."""
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10]
    lines: list[int] = []
    pos = 0
    while pos <= len(data):
        match = hint.search(data, pos)  # type: ignore[attr-defined]
        if match is None:
            break
        line = bisect.bisect_right(starts, match.start()) - 1
        lines.append(line)
        pos = starts[line + 1] if line + 1 < len(starts) else len(data) + 1
    return lines


_LINE_PIECES = [
    *SECRET_LINES,
    "",
    "x = 1",
    "token: str",
    "AKC0123456789abc",  # a hint that may start at the previous line's newline
    "-----BEGIN RSA PRIVATE KEY-----",
    "caf\u00e9 = 'd\u00e9j\u00e0 vu'",
]


@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=12), st.booleans())
def test_candidate_lines_are_the_lines_a_table_of_line_starts_finds(
    pieces: list[str], trailing_newline: bool
) -> None:
    data = ("\n".join(pieces) + ("\n" if trailing_newline else "")).encode()
    for hint in (_PATTERN_HINT, _detection().hint):
        found = _candidate_lines(hint, data)
        assert found == _lines_by_line_table(hint, data)
        # A superset of the lines the hint matches on their own.
        alone = [i for i, line in enumerate(data.split(b"\n")) if hint.search(line, 0)]
        assert set(alone) <= set(found)


_SHAPE_PIECES = st.sampled_from(
    [
        "DB_",
        "password",
        "PASSWD",
        "client-secret",
        "api.key",
        "\u212aey",  # KELVIN SIGN: a `k` to a case-insensitive pattern
        "to\u212aen",
        "auth",
        "export ",
        "'",
        '"',
        " ",
        "\t",
        "=",
        ":",
        ":=",
        "=>",
        "'hunter2hunter2'",
        "h4x0r-123",
        "Bearer ",
        "mysql -p",
        "https://u:",
        "@host",
        "sk-proj-",
        "A" * 24,
        "github_pat_",
        "npm_",
        "glpat-",
        "# note",
        "x",
    ]
)


_ASSIGNMENT_SHAPES = st.tuples(
    st.sampled_from(["", " ", "export ", '"', "'"]),
    st.sampled_from(["DB_", "my.", "", "x-"]),
    st.sampled_from(["password", "SECRET", "Api_Key", "to\u212aen", "credentials", "AUTH"]),
    st.sampled_from(["", "_URL", "2", ".v"]),
    st.sampled_from(["", '"', "'"]),
    st.sampled_from(["", " ", "\t ", "  "]),
    st.sampled_from(["=", ":", ":=", "=>"]),
    st.sampled_from(["", " ", "\t"]),
    st.sampled_from(["'hunter2hunter2'", '"s3cr3t-value"', "h4x0r-123", "wJalrXUtnFEMI", "x"]),
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_SHAPE_PIECES, _ASSIGNMENT_SHAPES), max_size=8).map("".join))
def test_the_pattern_hint_finds_every_line_a_pattern_matches(line: str) -> None:
    # Lines the hint does not find are never given to the patterns, so it must find
    # every line where any of them matches.
    if any(pattern.search(line) for pattern, _ in _PATTERNS):
        assert _PATTERN_HINT.search(line.encode("utf-8"), 0) is not None


def test_naming_a_token_without_assigning_it_is_no_candidate() -> None:
    code = "def tokenize(source: str) -> list[Token]:\n    return token_list(source)\n"
    assert _candidate_lines(_PATTERN_HINT, code.encode()) == []


def test_text_without_a_candidate_line_comes_back_unchanged() -> None:
    text = "def add(a, b):\n    return a + b\n"
    assert _candidate_lines(_PATTERN_HINT, text.encode()) == []
    assert strict_redact(text, "add.py") == (text, 0)


def test_strict_is_idempotent() -> None:
    text = "\n".join(SECRET_LINES) + "\n"
    once, _ = strict_redact(redact(text), "x.sh")
    assert strict_redact(once, "x.sh") == (once, 0)


@pytest.mark.parametrize(
    "path",
    [
        ".envrc",
        "prod.env",
        "docker.env",
        ".env_prod",
        "aws/credentials",
        "_netrc",
        "terraform.tfvars",
        ".npmrc",
        "deploy/prod.tfvars.json",
        "id_rsa",  # the reference list is included
    ],
)
def test_listed_names_are_strict_sensitive(path: str) -> None:
    assert is_strict_sensitive(path)


@pytest.mark.parametrize(
    "path", ["app.py", "env.py", ".env.example", "prod.env.sample", "credentials", "docs/aws.md"]
)
def test_other_names_are_not(path: str) -> None:
    assert not is_strict_sensitive(path)


def _corpus(root: Path) -> Path:
    (root / "aws").mkdir(parents=True)
    (root / "aws" / "credentials").write_text("[default]\naws_secret_access_key = abc\n")
    (root / ".envrc").write_text("export TOKEN=abc\n")
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "deploy.sh").write_text('export DB_PASSWORD="hunter2-hunter2"\nrun\n')
    return root


def test_walk_counts_strict_only_names_in_both_modes(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    reference = walk(str(root))
    assert [f.rel_path for f in reference.files] == [
        ".envrc",
        "app.py",
        "aws/credentials",
        "deploy.sh",
    ]
    assert (reference.sensitive_skipped, reference.strict_only_skipped) == (0, 2)
    strict = walk(str(root), protection="strict")
    assert [f.rel_path for f in strict.files] == ["app.py", "deploy.sh"]
    assert (strict.sensitive_skipped, strict.strict_only_skipped) == (2, 2)


def test_default_build_is_unchanged_and_counts_what_strict_would_do(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    default = build_index(str(root), HashEmbedder())
    assert default.protection == "reference"
    assert any("hunter2-hunter2" in chunk.content for chunk in default.index.chunks)
    assert (default.strict_redactions, default.strict_skips) == (1, 2)
    strict = build_index(str(root), HashEmbedder(), protection="strict")
    assert not any("hunter2" in chunk.content for chunk in strict.index.chunks)
    assert {chunk.file_path for chunk in strict.index.chunks} == {"app.py", "deploy.sh"}
    assert (strict.strict_redactions, strict.strict_skips) == (1, 2)


def test_allow_secrets_counts_nothing(tmp_path: Path) -> None:
    result = build_index(str(_corpus(tmp_path)), HashEmbedder(), protect=False)
    assert (result.strict_redactions, result.strict_skips) == (0, 0)


_DETECTION_IMPORTS = """
import sys
from cce_retrieval.protect.strict import strict_redact
text = 'password = "hunter2abc"\\nkey = AKIAIOSFODNN7EXAMPLE\\n'
redacted, count = strict_redact(text, "settings.py")
print(count, "urllib3" in sys.modules, "requests" in sys.modules)
import requests
print(type(requests).__name__, callable(requests.get))
from detect_secrets.plugins import base
print(base.requests.exceptions.RequestException is requests.exceptions.RequestException)
"""


def test_detect_secrets_does_not_import_requests_until_it_is_used() -> None:
    # A fresh interpreter: whether `requests` was imported depends on the whole process.
    done = subprocess.run(
        [sys.executable, "-c", _DETECTION_IMPORTS], capture_output=True, text=True, check=True
    )
    detected, real, shared = done.stdout.splitlines()
    assert detected == "2 False False"  # both secrets found; urllib3 never loaded
    assert real == "module True"  # a later `import requests` is the real module
    assert shared == "True"  # and detect-secrets reaches the same one on first use
