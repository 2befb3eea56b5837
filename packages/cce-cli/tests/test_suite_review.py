"""Suite comparisons as a reviewer reads them: per-member tables in the pull-request
comment (within GitHub's limit however many members), text columns sized to long ids.

The rows are checked against a computation by hand over the same per-query scores.
"""

from __future__ import annotations

import random

from cce_cli.compare.pairing import SavedBackend, SavedCase, SavedReport, diff_reports
from cce_cli.render.comment import COMMENT_LIMIT, render_comment
from cce_cli.render.member_table import aggregate_rows, member_rows


def _suite_reports(members: int, queries: int, seed: int = 7) -> tuple[SavedReport, SavedReport]:
    rng = random.Random(seed)
    names = tuple(f"member-{index:04d}-with-a-rather-long-name" for index in range(members))
    sides = []
    for side in ("base", "head"):
        cases = []
        for name in names:
            for query in range(queries):
                mrr = rng.choice([0.0, 0.25, 0.5, 1.0])
                ndcg = rng.random()
                cases.append(SavedCase(f"{name}/q{query}", {"mrr": mrr, "ndcg_at_k": ndcg}))
        backend = SavedBackend(side, tuple(cases), {})
        sides.append(SavedReport(f"{side}.json", None, None, (backend,), members=names))
    return sides[0], sides[1]


def _diff(members: int, queries: int):  # type: ignore[no-untyped-def]
    base, head = _suite_reports(members, queries)
    return diff_reports(base, head, base.backends[0], head.backends[0])


def test_member_rows_are_each_members_means_and_the_macro_row_their_mean() -> None:
    report = _diff(3, 4)
    item = report.overall.metric("mrr")
    assert item is not None
    rows = member_rows(report, item)
    assert [row.label for row in rows] == list(report.members or ())
    by_hand_deltas = []
    for row, member in zip(rows, report.members or (), strict=True):
        mine = [r for r in item.rows if r.id.startswith(member + "/")]
        base = sum(r.base for r in mine) / len(mine)
        head = sum(r.head for r in mine) / len(mine)
        assert row.queries == 4
        assert abs((row.base or 0.0) - base) < 1e-12 and abs((row.head or 0.0) - head) < 1e-12
        assert (row.wins, row.ties, row.losses) == (
            sum(r.delta > 0 for r in mine),
            sum(r.delta == 0 for r in mine),
            sum(r.delta < 0 for r in mine),
        )
        by_hand_deltas.append(head - base)
    macro, micro = aggregate_rows(report, item)
    assert macro.label == "macro" and micro.label == "micro"
    assert abs((macro.delta or 0.0) - sum(by_hand_deltas) / 3) < 1e-12
    assert macro.wins + macro.ties + macro.losses == 3
    assert micro.queries == 12
    assert abs((micro.delta or 0.0) - item.result.mean_delta) < 1e-12


def test_the_suite_comment_has_a_member_table_with_macro_and_micro_rows() -> None:
    report = _diff(3, 4)
    text = render_comment(report)
    assert "**Per member: " in text
    assert "| member | queries | base | head | delta | wins / ties / losses |" in text
    for member in report.members or ():
        assert f"| {member.replace('-', '-')} | 4 |" in text
    assert "| **macro** | 12 |" in text and "| **micro** | 12 |" in text
    assert "Per member, every metric (3 members)" in text


def test_a_suite_of_many_members_still_fits_one_comment_with_its_aggregate_rows() -> None:
    report = _diff(1000, 2)
    text = render_comment(report)
    assert len(text) <= COMMENT_LIMIT
    assert "| **macro** | 2000 |" in text and "| **micro** | 2000 |" in text
    assert "member rows were left out" in text
    assert "| member-0000-with-a-rather-long-name |" in text


def test_a_single_run_comment_has_no_member_table() -> None:
    base, head = _suite_reports(2, 3)
    single = [SavedReport(r.path, None, None, r.backends, members=None) for r in (base, head)]
    report = diff_reports(single[0], single[1], single[0].backends[0], single[1].backends[0])
    assert "Per member" not in render_comment(report)


def test_long_ids_get_their_own_column_in_the_text_diff() -> None:
    from cce_cli.render.diff import render_diff_text

    report = _diff(2, 3)
    lines = render_diff_text(report).splitlines()
    rows = [line for line in lines if line.startswith("  member-0000-with-a-rather-long-name/q")]
    assert rows
    longest = max(len(member) for member in report.members or ()) + len("/q0")
    for row in rows:
        # The id, at least one space, then the metric label: never run together.
        assert row[2 + longest] == " "
    header = next(line for line in lines if line.startswith("  query "))
    assert header.index("metric") == 2 + longest + 1


def test_short_ids_keep_the_reference_column_of_24() -> None:
    from cce_cli.output import label_width

    assert label_width(["code-read-config-span"], 24) == 24
    assert label_width(["x" * 23], 24) == 24
    assert label_width(["sinatra/indifferent-hash"], 24) == 25
