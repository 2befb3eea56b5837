"""Token-level span metrics and the line-weight table (docs/metrics.md#token-metrics, anchors of
docs/metrics.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cce_metrics import LineWeights, Span, TokenScore, estimate_tokens, rust_lines, score_tokens
from cce_metrics.tokens import line_token_estimates

UNIFORM = LineWeights.uniform()


def scores(expected: list[Span], retrieved: list[Span], k: int = 5) -> TokenScore | None:
    return score_tokens(expected, retrieved, k, UNIFORM)


# --- docs/metrics.md score_tokens anchors -------------------------------------------------------


def test_anchor_1_unranged_anchor_gives_no_token_score() -> None:
    # The only anchor is unranged, so the caller passes no expected span.
    assert scores([], [("auth.py", 1, 10)]) is None


def test_anchor_2_half_overlap() -> None:
    assert scores([("auth.py", 10, 19)], [("auth.py", 15, 24)]) == TokenScore(
        precision=0.5, recall=0.5, iou=1 / 3
    )


def test_anchor_3_overlapping_anchors_count_each_line_once() -> None:
    assert scores([("f.py", 1, 6), ("f.py", 4, 10)], [("f.py", 1, 10)]) == TokenScore(1.0, 1.0, 1.0)


def test_anchor_4_two_files_and_an_irrelevant_result() -> None:
    assert scores([("a.py", 1, 4), ("b.py", 1, 4)], [("a.py", 1, 4), ("c.py", 1, 8)]) == TokenScore(
        precision=1 / 3, recall=0.5, iou=0.25
    )


def test_anchor_5_no_overlap_scores_zero() -> None:
    assert scores([("f.py", 1, 5)], [("f.py", 6, 10), ("g.py", 1, 5)]) == TokenScore(0.0, 0.0, 0.0)


def test_anchor_6_no_results_scores_zero_not_nan() -> None:
    assert scores([("f.py", 1, 5)], []) == TokenScore(0.0, 0.0, 0.0)


def test_anchor_7_results_beyond_k_do_not_count() -> None:
    score = scores([("f.py", 1, 5)], [("g.py", 1, 5), ("f.py", 1, 5)], k=1)
    assert score is not None
    assert score.recall == 0.0
    assert score == TokenScore(0.0, 0.0, 0.0)


def test_anchor_8_unranged_anchor_is_ignored_next_to_a_ranged_one() -> None:
    # Anchors f.py@1-5 and other.py: only the ranged one becomes an expected span.
    assert scores([("f.py", 1, 5)], [("f.py", 1, 5)]) == TokenScore(1.0, 1.0, 1.0)


def test_anchor_9_weights_from_chunk_content() -> None:
    content = 'def read_config(path):\n    return os.path.join(path, "config.yml")'
    weights = LineWeights.from_chunks([("python.py", 3, content)])
    assert weights.weight("python.py", 3) == 5
    assert weights.weight("python.py", 4) == 10
    assert weights.weight("python.py", 1) == 1
    assert weights.weight("python.py", 999) == 1
    assert weights.weight("missing.py", 3) == 1


def test_anchor_10_uncovered_lines_weigh_one() -> None:
    weights = LineWeights.from_chunks([("f.py", 1, "abcdefgh\nabcd")])
    assert (weights.weight("f.py", 1), weights.weight("f.py", 2)) == (2, 1)
    assert score_tokens([("f.py", 2, 3)], [("f.py", 1, 2)], 5, weights) == TokenScore(
        precision=1 / 3, recall=0.5, iou=0.25
    )


def test_anchor_11_first_writer_in_index_order_wins() -> None:
    weights = LineWeights.from_chunks(
        [
            ("f.py", 1, "class A:\n    def m(self): pass"),
            ("f.py", 2, "def m(self): pass"),
        ]
    )
    assert weights.weight("f.py", 2) == 5
    # In the other order the partial method text (17 bytes) would give 4.
    reversed_order = LineWeights.from_chunks(
        [("f.py", 2, "def m(self): pass"), ("f.py", 1, "class A:\n    def m(self): pass")]
    )
    assert reversed_order.weight("f.py", 2) == 4


# --- line-weight table details ------------------------------------------------------


def test_trailing_newline_does_not_cover_an_extra_line() -> None:
    weights = LineWeights.from_chunks([("notes.md", 1, "# Notes here\nsome words\n")])
    assert weights.weight("notes.md", 1) == 3
    assert weights.weight("notes.md", 2) == 2
    assert weights.weight("notes.md", 3) == 1


def test_crlf_is_not_weighed_but_a_lone_cr_is() -> None:
    weights = LineWeights.from_chunks([("w.txt", 1, "abc\r\nabcdefg\r")])
    # "abc" (3 bytes) and "abcdefg\r" (8 bytes, the final \r is kept).
    assert (weights.weight("w.txt", 1), weights.weight("w.txt", 2)) == (1, 2)


def test_empty_content_covers_no_line() -> None:
    weights = LineWeights.from_chunks([("e.py", 1, ""), ("e.py", 1, "abcdefghijkl")])
    assert weights.weight("e.py", 1) == 3


def test_weights_compare_by_table_and_uniform_is_empty() -> None:
    assert LineWeights.uniform() == LineWeights.from_chunks([])
    assert LineWeights.from_chunks([("a", 1, "abcdefgh")]) == LineWeights({"a": {1: 2}})
    assert LineWeights.from_chunks([("a", 1, "abcdefgh")]) != LineWeights.uniform()
    assert repr(LineWeights({"a": {1: 2, 2: 3}})) == "LineWeights(files=1, lines=2)"


def test_weights_are_immutable_from_outside() -> None:
    table = {"a": {1: 5}}
    weights = LineWeights(table)
    table["a"][1] = 9
    assert weights.weight("a", 1) == 5
    with pytest.raises(AttributeError):
        weights.extra = 1  # type: ignore[attr-defined]


def test_weighted_masses_use_first_writer_weights() -> None:
    weights = LineWeights.from_chunks([("f.py", 2, "abcdefghijklmnop\nabcdefgh")])  # 4, 2
    # Expected 1-3 weighs 1 + 4 + 2 = 7; retrieved 3-6 weighs 2 + 1 + 1 + 1 = 5.
    assert score_tokens([("f.py", 1, 3)], [("f.py", 3, 6)], 5, weights) == TokenScore(
        precision=2 / 5, recall=2 / 7, iou=2 / 10
    )


def test_huge_spans_are_scored_exactly() -> None:
    weights = LineWeights.from_chunks([("big.py", 500_000, "x" * 400)])  # line weighs 100
    score = score_tokens(
        [("big.py", 1, 1_000_000)],
        [("big.py", 500_000, 2_000_000), ("o.py", 1, 10**6)],
        5,
        weights,
    )
    expected_mass = 1_000_000 + 99
    retrieved_mass = 1_500_001 + 99 + 1_000_000
    overlap_mass = 500_001 + 99
    assert score == TokenScore(
        precision=overlap_mass / retrieved_mass,
        recall=overlap_mass / expected_mass,
        iou=overlap_mass / (expected_mass + retrieved_mass - overlap_mass),
    )


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        scores([("f.py", 1, 5)], [], k=0)
    with pytest.raises(ValueError, match="ends before it starts"):
        scores([("f.py", 5, 4)], [])
    with pytest.raises(ValueError, match="ends before it starts"):
        scores([("f.py", 1, 4)], [("g.py", 9, 1)])


# --- properties against a literal transcription of docs/metrics.md#token-metrics -------


def oracle(
    expected: list[Span], retrieved: list[Span], k: int, weights: dict[str, dict[int, int]]
) -> TokenScore | None:
    relevant: dict[str, set[int]] = {}
    for path, first, last in expected:
        relevant.setdefault(path, set()).update(range(first, last + 1))
    if not relevant:
        return None
    returned: dict[str, set[int]] = {}
    for path, first, last in retrieved[:k]:
        returned.setdefault(path, set()).update(range(first, last + 1))
    overlap = {path: lines & returned.get(path, set()) for path, lines in relevant.items()}

    def mass(sets: dict[str, set[int]]) -> int:
        total = 0
        for path, lines in sets.items():
            for line in lines:
                total += weights.get(path, {}).get(line, 1)
        return total

    r, g, o = mass(relevant), mass(returned), mass(overlap)
    u = r + g - o

    def ratio(n: int, d: int) -> float:
        return 0.0 if d == 0 else n / d

    return TokenScore(ratio(o, g), ratio(o, r), ratio(o, u))


FILES = st.sampled_from(["a.py", "b.py", "c.py"])


@st.composite
def spans(draw: st.DrawFn) -> Span:
    first = draw(st.integers(min_value=1, max_value=30))
    return (draw(FILES), first, first + draw(st.integers(min_value=0, max_value=12)))


CHUNK_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "你", " ", "\n", "\r"]), max_size=60)
CHUNKS = st.lists(st.tuples(FILES, st.integers(min_value=1, max_value=30), CHUNK_TEXT), max_size=6)
SPAN_LISTS = st.lists(spans(), max_size=6)
KS = st.integers(min_value=1, max_value=8)
FULL_RESULT_LISTS = st.lists(spans(), min_size=8, max_size=10)  # at least max(KS) results


def oracle_weights(chunks: list[tuple[str, int, str]]) -> dict[str, dict[int, int]]:
    table: dict[str, dict[int, int]] = {}
    for path, start, content in chunks:
        for offset, line in enumerate(rust_lines(content)):
            table.setdefault(path, {}).setdefault(start + offset, estimate_tokens(line))
    return table


@given(CHUNKS, SPAN_LISTS, SPAN_LISTS, KS)
def test_matches_literal_spec_transcription(
    chunks: list[tuple[str, int, str]], expected: list[Span], retrieved: list[Span], k: int
) -> None:
    weights = LineWeights.from_chunks(chunks)
    table = oracle_weights(chunks)
    assert weights == LineWeights(table)
    assert score_tokens(expected, retrieved, k, weights) == oracle(expected, retrieved, k, table)


@given(CHUNKS, SPAN_LISTS, SPAN_LISTS, KS)
def test_scores_are_bounded_and_iou_is_the_smallest(
    chunks: list[tuple[str, int, str]], expected: list[Span], retrieved: list[Span], k: int
) -> None:
    score = score_tokens(expected, retrieved, k, LineWeights.from_chunks(chunks))
    if not expected:
        assert score is None
        return
    assert score is not None
    for value in (score.precision, score.recall, score.iou):
        assert 0.0 <= value <= 1.0
    assert score.iou <= min(score.precision, score.recall)


@given(CHUNKS, st.lists(spans(), min_size=1, max_size=6), SPAN_LISTS)
def test_retrieving_exactly_the_expected_lines_is_perfect(
    chunks: list[tuple[str, int, str]], expected: list[Span], beyond_k: list[Span]
) -> None:
    k = len(expected)
    for weights in (UNIFORM, LineWeights.from_chunks(chunks)):
        score = score_tokens(expected, list(reversed(expected)) + beyond_k, k, weights)
        assert score == TokenScore(1.0, 1.0, 1.0)


@given(CHUNKS, SPAN_LISTS, FULL_RESULT_LISTS, SPAN_LISTS, KS)
def test_results_beyond_k_never_change_the_score(
    chunks: list[tuple[str, int, str]],
    expected: list[Span],
    retrieved: list[Span],
    extra: list[Span],
    k: int,
) -> None:
    weights = LineWeights.from_chunks(chunks)
    top = retrieved[:k]
    assert score_tokens(expected, top + extra, k, weights) == score_tokens(
        expected, top, k, weights
    )


@given(SPAN_LISTS, SPAN_LISTS, KS)
def test_order_and_duplicates_of_expected_spans_do_not_matter(
    expected: list[Span], retrieved: list[Span], k: int
) -> None:
    shuffled = list(reversed(expected)) + expected
    assert scores(shuffled, retrieved, k) == scores(expected, retrieved, k)


def test_weights_are_computed_per_file_when_first_weighed_with_the_same_result() -> None:
    chunks = [
        ("a.py", 1, "def f():\n    return 1\n"),
        ("b.py", 4, "x = [\n  1,\n]"),
        ("a.py", 2, "    return 1 + 2 + 3"),  # a later writer of line 2: ignored
        ("c.py", 1, ""),
    ]
    lazy = LineWeights.from_chunks(chunks)
    assert lazy.weight("a.py", 2) == estimate_tokens("    return 1")
    assert set(lazy._by_file) == {"a.py"}  # b.py is not estimated until asked for
    eager = LineWeights(
        {
            "a.py": {1: estimate_tokens("def f():"), 2: estimate_tokens("    return 1")},
            "b.py": {
                4: estimate_tokens("x = ["),
                5: estimate_tokens("  1,"),
                6: estimate_tokens("]"),
            },
        }
    )
    assert lazy.mass("b.py", 4, 6) == eager.mass("b.py", 4, 6)
    assert lazy == eager and LineWeights.from_chunks(chunks) == eager
    assert lazy.weight("c.py", 1) == 1 and lazy.mass("missing.py", 1, 3) == 3


CHUNK_TEXT = st.text(alphabet="ab \r\n\u00e9", max_size=40)


@given(
    st.lists(st.tuples(FILES, st.integers(0, 30), CHUNK_TEXT), max_size=12),
    st.lists(st.tuples(FILES, st.integers(-3, 45), st.integers(0, 20)), max_size=10),
)
def test_mass_from_chunks_equals_a_line_by_line_first_writer_table(
    chunks: list[tuple[str, int, str]], queries: list[tuple[str, int, int]]
) -> None:
    weights: dict[str, dict[int, int]] = {}
    for path, start, content in chunks:
        file_weights = weights.setdefault(path, {})
        for offset, estimate in enumerate(line_token_estimates(content)):
            file_weights.setdefault(start + offset, estimate)
    table = LineWeights.from_chunks(chunks)
    for path, first, extra in queries:
        last = first + extra
        brute = sum(weights.get(path, {}).get(line, 1) for line in range(first, last + 1))
        assert table.mass(path, first, last) == brute


def test_a_chunk_claiming_a_huge_line_number_is_weighed_without_a_table_of_every_line() -> None:
    weights = LineWeights.from_chunks([("far.py", 10**15, "abcdefgh\nabcd")])
    assert weights.mass("far.py", 10**15, 10**15 + 1) == 2 + 1
    assert weights.mass("far.py", 1, 10) == 10
    assert weights._dense_tables == {"far.py": None}  # the per-line table served
