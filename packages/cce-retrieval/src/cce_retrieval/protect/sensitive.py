"""Layer 1 of secret protection: file names that are never read
(docs/index-store.md#sensitive-file-names).

Why it exists: some files are secrets by their very name (private keys, `.env` files,
credential stores). The walker asks `is_sensitive` about every regular file before opening
it, so such files never reach the index, the redactor or any log. The rule compares the
ASCII-lowercased basename, exactly like the reference's `to_ascii_lowercase`.
"""

from __future__ import annotations

from cce_retrieval.parity.text import ascii_lower

_SENSITIVE_NAMES = frozenset(
    {
        "credentials.json",
        "credentials.yml",
        "credentials.yaml",
        "secrets.json",
        "secrets.yml",
        "secrets.yaml",
        ".netrc",
        ".pgpass",
        ".htpasswd",
        ".dockercfg",
        "kubeconfig",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
    }
)
_SENSITIVE_EXTENSIONS = frozenset(
    {"pem", "key", "p12", "pfx", "keystore", "jks", "ppk", "der", "asc"}
)
_ENV_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist")


def file_extension(basename: str) -> str | None:
    """Text after the last `.`, or None when there is no dot or it is the first character.

    This is Rust's `Path::extension` for a single file name. Python's `os.path.splitext`
    differs on names such as `..key` (Rust: extension `key`; splitext: none).
    """
    dot = basename.rfind(".")
    if dot <= 0:
        return None
    return basename[dot + 1 :]


def is_sensitive(basename: str) -> bool:
    """True when a file with this basename must never be read (protection on)."""
    name = ascii_lower(basename)
    if name in _SENSITIVE_NAMES:
        return True
    if file_extension(name) in _SENSITIVE_EXTENSIONS:
        return True
    is_env_file = name == ".env" or name.startswith(".env.")
    return is_env_file and not name.endswith(_ENV_TEMPLATE_SUFFIXES)
