"""Credentials in git URLs: kept out of everything cce prints or writes.

Why it exists: a suite member's `git` URL may carry a token (`https://user:TOKEN@host/x`,
or a token alone as the user name). git needs it to fetch, but nothing else does: the
fetch progress, error lines, suite reports, provenance and imported manifests show the
URL with its user information replaced by `***` (`redact_git_url`), or, in a manifest
cce writes, without it (`strip_credentials`; git's credential helpers supply it then).
This module owns the rule for URLs and for free text (git's own error lines may quote
the URL) (docs/hostile-input.md#git-corpora).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["has_credentials", "redact_git_text", "redact_git_url", "strip_credentials"]

_AUTHORITY: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")
# Over HTTP a token is often the whole user name (`https://ghp_x@github.com/...`); over
# ssh and git the user name (`ssh://git@host/...`) is an account, not a secret.
_TOKEN_SCHEMES: Final = frozenset({"http://", "https://", "ftp://", "ftps://"})


def _is_secret(scheme: str, userinfo: str) -> bool:
    return ":" in userinfo or scheme.lower() in _TOKEN_SCHEMES


def has_credentials(url: str) -> bool:
    """Whether `url` holds a password or an HTTP user name (a likely token)."""
    match = _AUTHORITY.match(url)
    return match is not None and _is_secret(match["scheme"], match["userinfo"])


def redact_git_url(url: str) -> str:
    """`url` with secret user information replaced by `***`; anything else as written."""
    return redact_git_text(url)


def redact_git_text(text: str) -> str:
    """`text` (a git error line, say) with every URL's secret user information as `***`."""

    def replace(match: re.Match[str]) -> str:
        if _is_secret(match["scheme"], match["userinfo"]):
            return f"{match['scheme']}***@"
        return match.group(0)

    return _AUTHORITY.sub(replace, text)


def strip_credentials(url: str) -> str:
    """`url` without secret user information: what a manifest cce writes holds."""
    match = _AUTHORITY.match(url)
    if match is None or not _is_secret(match["scheme"], match["userinfo"]):
        return url
    return match["scheme"] + url[match.end() :]
