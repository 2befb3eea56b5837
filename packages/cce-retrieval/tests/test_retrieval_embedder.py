"""Anchor and property tests of FNV-1a-64, the hash embedder and cosine
(docs/retrieval.md#embedders)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cce_retrieval.embed.hashing import (
    EMBED_DIM,
    Embedder,
    EmbedError,
    HashEmbedder,
    cosine,
    fnv1a64,
)

# The base fixture's `hash_password` chunk (auth.py lines 3-4), used by the cosine anchor.
HASH_PASSWORD_CHUNK = (
    "def hash_password(password):\n    return hashlib.sha256(password.encode()).hexdigest()"
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0xCBF29CE484222325),
        (b"a", 0xAF63DC4C8601EC8C),
        (b"foobar", 0x85944171F73967E8),
        (b"hash", 0x2E3D9ECC741A7811),
        (b"password", 0x4B1A493507B3A318),
        (b"user", 0x7D6780E4032B48F2),
        (b"login", 0x03C75DB6E18F29D2),
        (b"def", 0xCA9A1A18F461E4CC),
        (b"hash_password", 0x5E5F27C42E654B67),
    ],
)
def test_fnv1a64_anchors(data: bytes, expected: int) -> None:
    assert fnv1a64(data) == expected


@pytest.mark.parametrize(
    ("token", "bucket", "sign"),
    [
        ("hash", 17, 1.0),
        ("password", 24, 1.0),
        ("user", 242, 1.0),
        ("login", 210, 1.0),
        ("def", 204, -1.0),
        ("hash_password", 103, 1.0),
    ],
)
def test_single_token_lands_in_its_bucket_with_its_sign(
    token: str, bucket: int, sign: float
) -> None:
    vector = HashEmbedder().embed(token)
    assert {index: value for index, value in enumerate(vector) if value} == {bucket: sign}


@given(st.binary(max_size=64))
def test_fnv1a64_stays_within_64_bits(data: bytes) -> None:
    assert 0 <= fnv1a64(data) < 2**64


def _nonzero(vector: list[float]) -> dict[int, float]:
    return {index: value for index, value in enumerate(vector) if value != 0.0}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hash password", {17: 0.7071067811865475, 24: 0.7071067811865475}),
        ("user login user", {210: 0.4472135954999579, 242: 0.8944271909999159}),
        ("Hash hash HASH", {17: 1.0}),
        ("def", {204: -1.0}),
        ("def hash_password", {103: 0.7071067811865475, 204: -0.7071067811865475}),
        ("", {}),
        ("-- ;; é", {}),
    ],
)
def test_embedding_anchors_are_exact(text: str, expected: dict[int, float]) -> None:
    embedder = HashEmbedder()
    vector = embedder.embed(text)
    assert len(vector) == EMBED_DIM
    assert _nonzero(vector) == expected
    assert all(type(value) is float for value in vector)
    assert embedder.try_embed_batch([text]) == [vector]


def test_empty_text_embeds_to_256_zeros() -> None:
    assert HashEmbedder().embed("") == [0.0] * 256


def test_hash_embedder_satisfies_the_embedder_protocol() -> None:
    embedder: Embedder = HashEmbedder()
    assert embedder.name == "hash"
    assert issubclass(EmbedError, Exception)


def test_cosine_anchors() -> None:
    assert cosine([0.6, 0.8] + [0.0] * 254, [1.0] + [0.0] * 255) == 0.6
    assert cosine([], [1.0, 2.0]) == 0.0
    assert cosine([1.0, 2.0, 3.0], [4.0]) == 4.0
    embedder = HashEmbedder()
    query = embedder.embed("hash password")
    chunk = embedder.embed(HASH_PASSWORD_CHUNK)
    assert cosine(query, chunk) == 0.42640143271122083


def test_cosine_accumulates_left_to_right() -> None:
    # (1e16 + 1.0) - 1e16 is 0.0 left to right but 1.0 with a compensated or reordered sum.
    assert cosine([1e16, 1.0, -1e16], [1.0, 1.0, 1.0]) == 0.0


_CODE_LIKE = st.lists(
    st.sampled_from([*"abcXYZ_019 \n\t(){}.,é你", "def", "HASH", "user"]), max_size=100
).map("".join)


@settings(max_examples=200)
@given(st.lists(st.one_of(_CODE_LIKE, st.text(max_size=80)), max_size=12))
def test_matrix_and_batch_equal_embed_bit_for_bit(texts: list[str]) -> None:
    embedder = HashEmbedder()
    expected = [HashEmbedder().embed(text) for text in texts]
    matrix = embedder.embed_matrix(texts)
    assert matrix.shape == (len(texts), EMBED_DIM)
    assert matrix.dtype == np.float64
    assert matrix.tolist() == expected
    assert embedder.try_embed_batch(texts) == expected


@given(_CODE_LIKE)
def test_non_empty_embeddings_have_unit_norm(text: str) -> None:
    vector = HashEmbedder().embed(text)
    squares = math.fsum(value * value for value in vector)
    if any(vector):
        assert abs(math.sqrt(squares) - 1.0) < 1e-12
    else:
        assert squares == 0.0


def test_embed_matrix_of_no_texts_is_empty() -> None:
    assert HashEmbedder().embed_matrix([]).shape == (0, EMBED_DIM)
