"""Strict secret protection: more file names skipped and more secret shapes redacted.

Why it exists: the default protection (`cce_retrieval.protect.sensitive` and
`cce_retrieval.protect.redactor`) is the reference's, byte for byte, because stores and reports
are compared across implementations. It misses common credentials: a keyword after `_`
(`DB_PASSWORD=`, `AWS_SECRET_ACCESS_KEY=`), JSON keys (`"client_secret": …`), URL
passwords, `Bearer` tokens, newer token formats (`sk-proj-…`, `github_pat_…`, `npm_…`),
`mysql -pPW`, PGP private key blocks and keys without a footer, and files such as
`.envrc`, `prod.env`, `.env_prod`, `aws/credentials`, `_netrc`, `terraform.tfvars`,
`.npmrc`. `--protection strict` adds this layer *after* the reference's, so everything
the reference redacts is redacted the same way and strict only ever removes more.

The shapes come from two sources: detect-secrets' detectors (a maintained catalogue of
token formats and keyword rules, run line by line; its entropy and IP detectors are left
out because they flag ordinary code), and a handful of patterns here for the shapes
detect-secrets does not report (checked by tests). See docs/hostile-input.md#secrets.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
import sys
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Protocol, cast

import attrs
import re2  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from detect_secrets.plugins.base import BasePlugin
from cce_retrieval.parity.text import ascii_lower
from cce_retrieval.protect.redactor import redact
from cce_retrieval.protect.sensitive import is_sensitive

REFERENCE: Final = "reference"
STRICT: Final = "strict"
DEFAULT_PROTECTION: Final = REFERENCE
PROTECTIONS: Final = (REFERENCE, STRICT)
"""`--protection` choices; `reference` (the default) is byte-identical to the reference."""

# --- file names ---------------------------------------------------------------------------

_STRICT_NAMES = frozenset(
    {
        ".envrc",
        "_netrc",
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        ".s3cfg",
        ".boto",
        ".terraformrc",
        "terraform.tfvars",
        "terraform.tfstate",
    }
)
_STRICT_SUFFIXES = (".env", ".tfvars", ".tfvars.json", ".tfstate", ".tfstate.backup")
_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist")
_CREDENTIAL_DIRS = frozenset({"aws", ".aws", "gcloud", ".gcloud", "docker", ".docker"})


def is_strict_sensitive(rel_path: str) -> bool:
    """True when strict protection never reads this file (the reference list included)."""
    parent, _, basename = rel_path.rpartition("/")
    if is_sensitive(basename):
        return True
    name = ascii_lower(basename)
    if name.endswith(_TEMPLATE_SUFFIXES):
        return False
    if name in _STRICT_NAMES or name.endswith(_STRICT_SUFFIXES):
        return True
    if name.startswith((".env_", ".env-")):
        return True
    directory = ascii_lower(parent.rpartition("/")[2])
    return directory in _CREDENTIAL_DIRS and name in ("credentials", "config", "config.json")


# --- content --------------------------------------------------------------------------------

_KEYWORD = (
    r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|auth)"
)
_IDENT = rf"[A-Za-z0-9_.-]*{_KEYWORD}[A-Za-z0-9_.-]*"
_KEYWORD_UPPER = (
    r"(?:PASSW(?:OR)?D|PWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CLIENT_?SECRET"
    r"|CREDENTIALS?|AUTH)"
)
_STAND_IN = re.compile(
    r"(?:\$\{.*\}|\$\(.*\)|\$[A-Za-z_][A-Za-z0-9_]*|<.*>|\{\{.*\}\}|%\(.*\)s|\[REDACTED:.*\]"
    r"|changeme|change_me|example|dummy|redacted|xxx+|\*+|null|none|true|false)",
    re.IGNORECASE,
)


def _label(name: str) -> str:
    return f"[REDACTED:{name}]"


class _GroupReplacer:
    """Replace only `group` of a match, unless it is a stand-in value or too short.

    `made` counts the replacements actually done, which `subn` cannot tell apart from
    matches that were kept.
    """

    def __init__(self, label: str, group: int = 1, minimum: int = 1) -> None:
        self.label = label
        self.group = group
        self.minimum = minimum
        self.made = 0

    def __call__(self, match: re.Match[str]) -> str:
        value = match.group(self.group)
        if value is None or len(value) < self.minimum or _STAND_IN.fullmatch(value):
            return match.group(0)
        # Quotes stay; only what is between them is the secret.
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            inner = value[1:-1]
            if len(inner) < max(self.minimum, 1) or _STAND_IN.fullmatch(inner):
                return match.group(0)
            replacement = f"{value[0]}{_label(self.label)}{value[0]}"
        else:
            replacement = _label(self.label)
        self.made += 1
        offset = match.start(0)
        whole = match.group(0)
        start, end = match.start(self.group) - offset, match.end(self.group) - offset
        return f"{whole[:start]}{replacement}{whole[end:]}"


_PATTERNS: tuple[tuple[re.Pattern[str], _GroupReplacer | str], ...] = (
    # Tokens whose formats the reference's list predates.
    (re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), _label("OPENAI_KEY")),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), _label("GITHUB_TOKEN")),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), _label("NPM_TOKEN")),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), _label("GITLAB_TOKEN")),
    # `Authorization: Bearer <token>` and friends.
    (
        re.compile(r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]+=*)"),
        _GroupReplacer("BEARER_TOKEN", minimum=8),
    ),
    # `scheme://user:password@host`.
    (
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@'\"]+:([^\s/@'\"]+)@"),
        _GroupReplacer("URL_PASSWORD"),
    ),
    # `mysql -pPW`, `mysqldump --password=PW`.
    (
        re.compile(r"\bmysql[a-z]*\b[^\n]*?[ \t]-p([^\s'\"]+|'[^'\n]*'|\"[^\"\n]*\")"),
        _GroupReplacer("MYSQL_PASSWORD"),
    ),
    # `KEY = "value"`, `"client_secret": "value"`, `DB_PASSWORD='value'` (quoted values).
    (
        re.compile(rf"(?i)[\"']?\b{_IDENT}[\"']?[ \t]*(?:=|:|:=|=>)[ \t]*(\"[^\"\n]*\"|'[^'\n]*')"),
        _GroupReplacer("SECRET"),
    ),
    # dotenv / shell bare values, upper-case names only: `export AWS_SECRET_ACCESS_KEY=wJal…`.
    (
        re.compile(
            rf"(?m)^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*{_KEYWORD_UPPER}[A-Z0-9_]*="
            r"([^\s'\"#;][^\s'\"#;]*)"
        ),
        _GroupReplacer("SECRET", minimum=4),
    ),
    # YAML / INI bare values that contain a digit: `password: hunter2` (not `token: str`).
    (
        re.compile(
            rf"(?im)^[ \t]*{_IDENT}[ \t]*[:=][ \t]*"
            r"((?=[^\s'\"#]*[0-9])[^\s'\"#,;()\[\]{}][^\s'\"#,;()\[\]{}]*)[ \t]*(?:#.*)?$"
        ),
        _GroupReplacer("SECRET", minimum=4),
    ),
)

_BLOCK_HEADER = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_BLOCK_FOOTER = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


def _redact_key_blocks(text: str) -> tuple[str, int]:
    """PGP `PRIVATE KEY BLOCK`s, and any private key header with no footer (to the end)."""
    pieces: list[str] = []
    cursor = 0
    count = 0
    while (header := _BLOCK_HEADER.search(text, cursor)) is not None:
        footer = _BLOCK_FOOTER.search(text, header.end())
        pieces.append(text[cursor : header.start()])
        pieces.append(_label("PRIVATE_KEY"))
        count += 1
        cursor = len(text) if footer is None else footer.end()
    pieces.append(text[cursor:])
    return "".join(pieces), count


@attrs.frozen(slots=True)
class _Detection:
    detectors: tuple[BasePlugin, ...]
    hint: _Hint
    """True for every line any detector could report, and for few others.

    Every regex-based detector reports only lines one of its `denylist` regexes matches,
    and the keyword detector only lines containing one of its keywords, so the detectors
    run only on lines this matches; that changes no result and skips most of a file. RE2
    evaluates the whole alternation in one linear pass."""


class _RequestsOnFirstUse(types.ModuleType):
    """What detect-secrets' modules get for `import requests` while they are imported
    here: `requests` itself is imported only when one of its attributes is first read.

    detect-secrets uses `requests` only to verify a found secret against its service,
    which cce never asks for, yet importing it (urllib3, charset detection, certificates)
    is about 0.3 s of every process that redacts: each build worker, and every small
    build done without workers.
    """

    def __getattr__(self, name: str) -> object:
        return getattr(importlib.import_module("requests"), name)


@contextlib.contextmanager
def _requests_on_first_use() -> Iterator[None]:
    """While open, `import requests` gives `_RequestsOnFirstUse` (unless `requests` is
    imported already); afterwards a plain `import requests` anywhere gets the real one."""
    if "requests" in sys.modules:
        yield
        return
    stand_in = _RequestsOnFirstUse("requests")
    sys.modules["requests"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("requests") is stand_in:
            del sys.modules["requests"]


@functools.cache
def _detection() -> _Detection:
    """detect-secrets' detectors and their line hint, loaded on first use.

    Importing detect-secrets costs a noticeable fraction of a second, which commands that
    never redact should not pay; the `requests` it imports is left until it is used
    (`_RequestsOnFirstUse`).
    """
    with _requests_on_first_use():
        return _load_detection()


def _load_detection() -> _Detection:
    from detect_secrets.plugins import keyword as keyword_plugin
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    detectors: tuple[BasePlugin, ...] = (
        ArtifactoryDetector(),
        AWSKeyDetector(),
        AzureStorageKeyDetector(),
        BasicAuthDetector(),
        DiscordBotTokenDetector(),
        GitHubTokenDetector(),
        GitLabTokenDetector(),
        JwtTokenDetector(),
        KeywordDetector(),
        MailchimpDetector(),
        NpmDetector(),
        OpenAIDetector(),
        PrivateKeyDetector(),
        PypiTokenDetector(),
        SendGridDetector(),
        SlackDetector(),
        SquareOAuthDetector(),
        StripeDetector(),
        TelegramBotTokenDetector(),
        TwilioKeyDetector(),
    )
    parts = [
        _hint_part(regex)
        for detector in detectors
        for regex in getattr(detector, "denylist", ())
        if isinstance(regex, re.Pattern)
    ]
    parts.append(f"(?i:{keyword_plugin.DENYLIST_REGEX})")
    return _Detection(detectors, _compile_hint(parts))


_MIN_DETECTED = 4  # a shorter "secret" would erase ordinary words wherever they occur


def _hint_part(pattern: re.Pattern[str]) -> str:
    """`pattern` for the RE2 line hint: flags scoped, look-arounds dropped (a superset)."""
    source = re.sub(r"\(\?<?[!=][^()]*\)", "", pattern.pattern)
    # RE2 caps counted repetition at 1000; an open upper bound only widens the hint.
    source = re.sub(
        r"\{(\d+),(\d+)\}",
        lambda m: m.group(0) if int(m.group(2)) <= 1000 else f"{{{m.group(1)},}}",
        source,
    )
    flags = "".join(
        letter
        for flag, letter in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
        if pattern.flags & flag
    )
    return f"(?{flags}:{source})" if flags else f"(?:{source})"


class _HintMatch(Protocol):
    def start(self) -> int: ...


class _Hint(Protocol):
    def search(self, data: bytes, pos: int) -> _HintMatch | None: ...


_HINT_MEMORY: Final = 64 << 20
"""RE2's budget for one hint's automaton. With the default 8 MB, the detectors' hint
(some fifty alternatives) keeps running out of cached DFA states and scans code at half
the speed; the memory is only taken as states are built."""


def _compile_hint(parts: list[str]) -> _Hint:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _HINT_MEMORY
    # Multi-line, so `^`/`$` mean what they mean when a detector sees one line.
    source = "(?m:" + "|".join(parts) + ")"
    return cast(_Hint, re2.compile(source.encode("utf-8"), options))


def _candidate_lines(hint: _Hint, data: bytes) -> list[int]:
    """Indexes of the lines of `data` (split at b"\\n") where `hint` can match.

    Each search starts at a line start and takes the leftmost match, so no line holding a
    match is skipped; one RE2 pass over the file instead of one call per line. A match's
    line is the number of newlines before it, counted on from the previous match, so the
    file is scanned for newlines once and only when something matched.
    """
    lines: list[int] = []
    pos = 0
    line = 0
    counted_to = 0
    while pos <= len(data):
        match = hint.search(data, pos)
        if match is None:
            break
        start = match.start()
        line += data.count(b"\n", counted_to, start)
        counted_to = start
        lines.append(line)
        end = data.find(b"\n", start)
        if end < 0:
            break
        pos = end + 1
    return lines


_PATTERN_HINT: Final = _compile_hint(
    [
        # The three keyword patterns each need the keyword, more name characters, at most
        # a quote, spaces or tabs, then `=` or `:`; code names a token far more often
        # than it assigns one, so the keyword alone made most candidate lines.
        f"(?i:{_KEYWORD})[A-Za-z0-9_.-]*[\"']?[ \t]*[:=]",
        "(?i:bearer)",
        "mysql",
        "://",
        "sk-",
        "github_pat_",
        "npm_",
        "glpat-",
    ]
)
"""True for every line one of `_PATTERNS` can match: each needs one of these. A line
where none matches first is left as it is, so later patterns need no hint of their own
for what an earlier replacement writes."""


def _detector_label(secret_type: str) -> str:
    return _label(re.sub(r"[^A-Z0-9]+", "_", secret_type.upper()).strip("_"))


def _redact_patterns(line: str) -> tuple[str, int]:
    count = 0
    for pattern, replacement in _PATTERNS:
        if isinstance(replacement, str):
            line, made = pattern.subn(replacement, line)
            count += made
        else:
            replacer = _GroupReplacer(replacement.label, replacement.group, replacement.minimum)
            line = pattern.sub(replacer, line)
            count += replacer.made
    return line, count


def _redact_detected(line: str, number: int, filename: str) -> tuple[str, int]:
    """Values detect-secrets reports on `line`, replaced where they occur on it."""
    count = 0
    found: dict[str, str] = {}
    for detector in _detection().detectors:
        for secret in detector.analyze_line(filename=filename, line=line, line_number=number):
            value = secret.secret_value
            if value and len(value) >= _MIN_DETECTED and "[REDACTED:" not in value:
                found.setdefault(value, secret.type)
    # Longest first, so a value containing another is replaced whole.
    for value in sorted(found, key=len, reverse=True):
        if value in line:
            count += line.count(value)
            line = line.replace(value, _detector_label(found[value]))
    return line, count


def strict_redact(text: str, filename: str = "") -> tuple[str, int]:
    """Redact what strict protection adds to already reference-redacted `text`.

    Returns the text and how many additional redactions were made (0 means strict and
    reference protection agree on this text). `filename` lets detect-secrets pick its
    per-language keyword rules.
    """
    text, count = _redact_key_blocks(text)
    data = text.encode("utf-8", "surrogatepass")
    # A newline is one byte in UTF-8 and never part of another character's bytes, so
    # line i of `data` is line i of `text`.
    pattern_lines = _candidate_lines(_PATTERN_HINT, data)
    detected_lines = _candidate_lines(_detection().hint, data)
    if not pattern_lines and not detected_lines:
        return text, count
    lines = text.split("\n")
    for index in pattern_lines:
        lines[index], made = _redact_patterns(lines[index])
        count += made
    for index in detected_lines:
        # The line may have changed above; detectors see the current text.
        lines[index], made = _redact_detected(lines[index], index + 1, filename)
        count += made
    return "\n".join(lines), count


def protect_text(text: str, protection: str = STRICT, filename: str = "") -> str:
    """`text` as a store built under `protection` would hold it: the reference redactor,
    then, for strict protection, the strict layer.

    For text that never passes through a build but may be shown or written beside its
    results (a judging file's snippets, queries mined from an event log).
    """
    redacted = redact(text)
    if protection == STRICT:
        redacted = strict_redact(redacted, filename)[0]
    return redacted
