"""BM25 over posting arrays: documented anchors (docs/retrieval.md#bm25,
docs/retrieval.md#rounding-and-score-keys, docs/retrieval.md#bm25) and rank-bm25 as an oracle."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from cce_retrieval.parity.numeric import format6, round_half_away, score_key
from cce_retrieval.parity.tokenizer import tokenize, unique_tokens
from cce_retrieval.rank.bm25 import Bm25Index, _stable_order
from cce_retrieval.rank.order import id_order_ranks, score_keys, top_order


def _index(contents: Sequence[str], ids: Sequence[str] | None = None) -> Bm25Index:
    chunk_ids = list(ids) if ids is not None else [f"{i:016x}" for i in range(len(contents))]
    return Bm25Index.build(list(contents), chunk_ids)


@pytest.fixture(scope="module")
def fixture_contents(reference_path: Callable[..., Path]) -> list[str]:
    """The 7 chunk contents of test/fixture/base (docs/retrieval.md#hybrid-search table), store
    order."""
    base = reference_path("test", "fixture", "base")
    auth = (base / "auth.py").read_text(encoding="utf-8").split("\n")
    payments = (base / "payments.py").read_text(encoding="utf-8").split("\n")
    readme = (base / "README.md").read_text(encoding="utf-8")

    def span(lines: list[str], start: int, end: int) -> str:
        return "\n".join(lines[start - 1 : end])

    return [
        readme,
        span(auth, 3, 4),
        span(auth, 6, 7),
        span(auth, 9, 11),
        span(auth, 10, 11).lstrip(" "),
        span(payments, 3, 4),
        span(payments, 6, 7),
    ]


# --- docs/retrieval.md#rounding-and-score-keys rounding (the keys BM25 and every ranking sort on)

FORMAT6_ANCHORS = [
    (0.1234567, "0.123457"),
    (0.1234564, "0.123456"),
    (-0.1234567, "-0.123457"),
    (1.0, "1.000000"),
    (0.0, "0.000000"),
    (2.5, "2.500000"),
    (0.1234565, "0.123457"),
    (5e-7, "0.000001"),
    (4.999999999999999e-7, "0.000000"),
    (-5e-7, "-0.000001"),
    (-1e-7, "0.000000"),
    (-0.0, "0.000000"),
    (2.5e-7, "0.000000"),
    (0.9999995, "1.000000"),
    (1.0000005, "1.000001"),
    (-1.5e-6, "-0.000002"),
    (123.4567895, "123.456790"),
]


@pytest.mark.parametrize(("value", "text"), FORMAT6_ANCHORS)
def test_format6_anchor(value: float, text: str) -> None:
    assert format6(value) == text


def test_score_key_and_round_half_away_anchors() -> None:
    assert score_key(0.1234564) == score_key(0.1234561)
    assert score_key(-1.5e-6) == -2
    assert (round_half_away(0.5), round_half_away(2.5), round_half_away(-2.5)) == (1.0, 3.0, -3.0)


@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), max_size=50))
def test_vectorised_score_keys_equal_scalar_score_key(values: list[float]) -> None:
    anchors = [v for v, _ in FORMAT6_ANCHORS]
    data = values + anchors
    got = score_keys(np.asarray(data, dtype=np.float64)).tolist()
    assert got == [score_key(v) for v in data]


# --- docs/retrieval.md#bm25 anchors ------------------------------------------------------


def test_worked_example_pins_the_true_value() -> None:
    bm25 = _index(["user login user", "payment process"])
    assert bm25.avgdl == 2.5
    assert bm25.idf("user") == math.log(2.0) == 0.6931471805599453
    ranked = bm25.score(["user"])
    assert ranked == [(0, 0.902321773509988)]
    assert format6(ranked[0][1]) == "0.902322"


def test_unknown_term_ranks_nothing() -> None:
    assert _index(["alpha beta", "gamma delta"]).score(["nonexistent"]) == []


def test_empty_corpus_and_empty_query() -> None:
    empty = _index([])
    assert empty.n_docs == 0 and empty.avgdl == 0.0
    assert empty.score(["x"]) == []
    assert _index(["a b"]).score([]) == []


def test_fixture_statistics(fixture_contents: list[str]) -> None:
    bm25 = _index(fixture_contents)
    assert bm25.n_docs == 7
    assert bm25.avgdl == 8.142857142857142
    assert bm25.df("password") == 2
    assert bm25.idf("password") == 1.1631508098056809
    assert bm25.df("hash") == 0


def test_fixture_hash_password_scores(fixture_contents: list[str]) -> None:
    ids = [
        "6ab3d42cf9cebf0a",
        "e3539a6cc87df405",
        "1eb146037ad13f91",
        "fcc7617773d8f44d",
        "1f7fa885bdd90499",
        "eb1b9a4f766376e6",
        "0246f0f6eead83ee",
    ]
    bm25 = _index(fixture_contents, ids)
    assert bm25.score(["hash", "password"]) == [(2, 1.6072629371860319), (1, 1.5533451709226027)]


def test_documents_rounding_to_zero_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    # With f = 1 and dl = avgdl the contribution is idf * 2.2 / 2.2: pin idf just below
    # and just above the 6-decimal half, so the key filter, not `s > 0`, decides.
    bm25 = _index(["common", "common"])
    monkeypatch.setattr(bm25, "idf", lambda term: 4.9e-7)
    docs, scores = bm25.raw_scores(["common"])
    assert docs.tolist() == [0, 1] and all(s > 0.0 for s in scores.tolist())
    assert bm25.score(["common"]) == []
    bm25 = _index(["common", "common"])  # a fresh index: contributions are cached per term
    monkeypatch.setattr(bm25, "idf", lambda term: 5.1e-7)
    assert [doc for doc, _ in bm25.score(["common"])] == [0, 1]


def test_ties_break_on_chunk_id_then_store_order() -> None:
    bm25 = Bm25Index.build(["x y", "x y", "x y"], ["b", "a", "a"])
    assert [doc for doc, _ in bm25.score(["x"])] == [1, 2, 0]
    assert id_order_ranks(["b", "a", "a"]).tolist() == [2, 0, 1]


def test_summation_follows_query_term_order() -> None:
    bm25 = _index(["a b c", "a a b", "c c c b"])
    for terms in (["a", "b", "c"], ["c", "b", "a"]):
        docs, scores = bm25.raw_scores(terms)
        for doc, score in zip(docs.tolist(), scores.tolist(), strict=True):
            assert score == _scalar_score(bm25, ["a b c", "a a b", "c c c b"][doc], terms)


def _scalar_score(bm25: Bm25Index, content: str, terms: Sequence[str]) -> float:
    """The reference's per-document loop of docs/retrieval.md#bm25, written out scalar by scalar."""
    tokens = tokenize(content)
    dl = float(len(tokens))
    s = 0.0
    for q in terms:
        if bm25.df(q) == 0:
            continue
        f = float(tokens.count(q))
        if f == 0.0:
            continue
        idf = bm25.idf(q)
        denom = f + 1.2 * (1.0 - 0.75 + 0.75 * dl / bm25.avgdl)
        s += idf * (f * (1.2 + 1.0)) / denom
    return s


# --- Oracles: the scalar reference loop (bit-exact) and rank-bm25 (to 1e-9) -------------


class LuceneBM25(BM25Okapi):  # type: ignore[misc]
    """rank-bm25's Okapi scorer with the contract's non-negative Lucene idf."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


WORDS = ["auth", "user", "login", "pass", "token", "x", "y_1", "Hash", "PAY"]
document = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(document, min_size=1, max_size=25),
    st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5).map(" ".join),
)
def test_scores_match_scalar_loop_and_rank_bm25(contents: list[str], query: str) -> None:
    bm25 = _index(contents)
    terms = unique_tokens(query)
    docs, scores = bm25.raw_scores(terms)
    ours = dict(zip(docs.tolist(), scores.tolist(), strict=True))
    oracle = LuceneBM25([tokenize(c) for c in contents], k1=1.2, b=0.75)
    expected = oracle.get_scores(terms)  # unique terms: rank-bm25 counts duplicates
    for doc, content in enumerate(contents):
        mine = ours.get(doc, 0.0)
        assert mine == _scalar_score(bm25, content, terms)
        assert mine == pytest.approx(float(expected[doc]), abs=1e-9, rel=1e-12)


def test_ranking_matches_oracle_on_seeded_random_corpora() -> None:
    rng = random.Random(20240611)
    vocabulary = [f"w{i}" for i in range(40)]
    for _ in range(30):
        contents = [
            " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 30)))
            for _ in range(rng.randint(1, 60))
        ]
        ids = [f"{rng.getrandbits(64):016x}" for _ in contents]
        terms = list(dict.fromkeys(rng.choice(vocabulary) for _ in range(rng.randint(1, 6))))
        bm25 = _index(contents, ids)
        oracle = LuceneBM25([tokenize(c) for c in contents], k1=1.2, b=0.75).get_scores(terms)
        expected = sorted(
            (
                (-score_key(_scalar_score(bm25, c, terms)), ids[d], d)
                for d, c in enumerate(contents)
                if score_key(_scalar_score(bm25, c, terms)) > 0
            ),
        )
        ranked = bm25.score(terms)
        assert [doc for doc, _ in ranked] == [d for _, _, d in expected]
        for doc, score in ranked:
            assert score == pytest.approx(float(oracle[doc]), abs=1e-9)


@given(
    st.lists(st.integers(min_value=-3, max_value=3), max_size=40),
    st.one_of(st.none(), st.integers(min_value=-1, max_value=45)),
)
def test_top_order_is_the_prefix_of_the_full_sort(keys: list[int], limit: int | None) -> None:
    key_array = np.asarray(keys, dtype=np.int64)
    id_ranks = np.asarray(list(reversed(range(len(keys)))), dtype=np.int64)
    full = sorted(range(len(keys)), key=lambda i: (-keys[i], int(id_ranks[i])))
    expected = full if limit is None else full[: max(limit, 0)]
    assert top_order(key_array, id_ranks, limit).tolist() == expected


@given(st.lists(st.integers(0, 1 << 40), max_size=300), st.integers(0, 4))
def test_postings_order_is_numpys_stable_argsort(values: list[int], narrow: int) -> None:
    # Bounds of 8 to 40 bits: one 16-bit pass, then 8- and 16-bit digits after it.
    # Repeated ids, so the order among equal ids (stability) is checked too.
    ids = np.asarray(values + values[::2], dtype=np.int64) >> (narrow * 8)
    bound = int(ids.max()) + 1 if len(ids) else 0
    expected = np.argsort(ids, kind="stable")
    assert _stable_order(ids, bound).tolist() == expected.tolist()


@pytest.mark.parametrize("bits", [8, 16, 17, 23, 24, 25, 32, 40])
def test_postings_order_is_stable_for_every_digit_layout(bits: int) -> None:
    # Ids spread over the whole range (each digit's every value occurs), with repeats.
    ids = np.random.default_rng(bits).integers(0, 1 << bits, 4000)
    ids = np.concatenate([ids, ids[::3], [0, (1 << bits) - 1]])
    expected = np.argsort(ids, kind="stable")
    assert _stable_order(ids, 1 << bits).tolist() == expected.tolist()
