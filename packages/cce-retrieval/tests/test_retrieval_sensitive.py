"""Layer-1 secret protection: the sensitive-basename rule and its documented anchors
(docs/index-store.md#sensitive-file-names)."""

from __future__ import annotations

import pytest

from cce_retrieval.protect.sensitive import file_extension, is_sensitive

SENSITIVE_ANCHORS = [
    "server.pem",
    "private.KEY",
    "cert.PFX",
    "CREDENTIALS.YML",
    "ID_DSA",
    ".ENV",
    ".env.local",
    ".env.local.secret",
]
NOT_SENSITIVE_ANCHORS = [
    ".env.example",
    ".env.local.example",
    ".env.EXAMPLE",
    "foo.env",
    "envfile",
    "keys.go",
    "monkey.js",
    ".key",
    ".pem",
]


@pytest.mark.parametrize("basename", SENSITIVE_ANCHORS)
def test_spec_anchor_is_sensitive(basename: str) -> None:
    assert is_sensitive(basename)


@pytest.mark.parametrize("basename", NOT_SENSITIVE_ANCHORS)
def test_spec_anchor_is_not_sensitive(basename: str) -> None:
    assert not is_sensitive(basename)


@pytest.mark.parametrize(
    "basename",
    [
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
    ],
)
def test_every_exact_name_is_sensitive(basename: str) -> None:
    assert is_sensitive(basename)


@pytest.mark.parametrize(
    "extension", ["pem", "key", "p12", "pfx", "keystore", "jks", "ppk", "der", "asc"]
)
def test_every_sensitive_extension(extension: str) -> None:
    assert is_sensitive(f"file.{extension}")
    assert is_sensitive(f"FILE.{extension.upper()}")


@pytest.mark.parametrize(
    "name", ["id_rsa.pub", "credentials.json.bak", "secrets.txt", "kubeconfig2"]
)
def test_near_misses_are_not_sensitive(name: str) -> None:
    assert not is_sensitive(name)


@pytest.mark.parametrize(
    "name",
    [".env.sample", ".env.template", ".env.dist", ".ENV.PROD.Sample"],
)
def test_env_templates_are_not_sensitive(name: str) -> None:
    assert not is_sensitive(name)


def test_env_prefix_needs_the_dot() -> None:
    assert is_sensitive(".env.production")
    assert not is_sensitive(".envrc")


def test_double_dot_extension_follows_rust_not_splitext() -> None:
    # Rust: `..key` has extension `key`; os.path.splitext would report none.
    assert file_extension("..key") == "key"
    assert is_sensitive("..key")


def test_lowercasing_is_ascii_only() -> None:
    # U+212A KELVIN SIGN lowercases to `k` under str.lower(), not under Rust's ASCII rule.
    assert not is_sensitive("file.\u212aey")


@pytest.mark.parametrize(
    ("name", "extension"),
    [("a.py", "py"), ("a.b.c", "c"), ("noext", None), (".hidden", None), ("trail.", "")],
)
def test_file_extension(name: str, extension: str | None) -> None:
    assert file_extension(name) == extension
