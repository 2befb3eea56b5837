"""nDCG@10 of cce's backends beside semble's lexical engine, on one suite, in one run.

Why it exists: a claim that a cce backend matches or beats semble (the open code-search
engine whose public benchmark the `cce import semble` suites come from) is only worth
something when both systems run on the same checkouts, the same queries, and are scored
by the same code. This script owns that comparison:

1. `cce suite fetch SUITE` says where each member's corpus is (a git member is checked
   out at its pinned commit, the same checkout `cce relevance` indexes);
2. in a separate Python environment that holds semble (never cce's: semble is no
   dependency of any cce package), semble indexes each corpus and answers each case's
   query twice: its BM25 alone (`semble-bm25`) and its BM25 followed by its ranking step
   (`semble-ranked`: multi-chunk file boost, identifier and file-stem boosts, path
   penalties, same-file saturation). Neither path uses an embedding model: the index is
   built with a stand-in that embeds nothing, the semantic candidates are empty, and
   the ranking step runs with the semantic weight at 0, which is what semble's own
   benchmark calls "BM25 + ranking" (with weight 0 the semantic side contributes
   nothing to any score). The script checks afterwards that no model was loaded;
3. each semble system's rankings become a TREC run (`member/case-id Q0 path:start-end
   rank score tag`), and `cce relevance SUITE --metrics ndcg --run ...` scores them
   beside cce's own backends with cce's metric code and the suite's fixtures;
4. the table prints nDCG@k per member and macro (the mean of the members' means, as
   semble averages per repository), and every system's rankings (cce's too, from
   `--results`) are scored a second time the way semble's benchmark scores them
   (relevant and secondary targets alike, each at the rank of the first chunk that
   overlaps it, binary gains, an ideal of min(k, targets) ones), once with semble's
   path rule (either path may end with the other) and once with exact
   repository-relative paths. The exact scoring must equal cce's on every query (to
   1e-9 against cce's own scoring code at full precision, and to the report's six
   decimals); queries where semble's path rule scores otherwise are listed.

The second scoring reads semble's original annotation files when they are beside the
manifest (`annotations/<member>.json` and `repos.json`, as in the semble-dev suite) or
given with `--annotations DIR --repos FILE`; without them it rebuilds the targets from
the fixtures' anchors, which checks the metric code but not the import.

Usage (the `peer` nox session does all of it, installing semble==0.7.0 first):

    uv run python bench/peer_semble.py [SUITE.toml] --semble-python PATH [--out DIR]
        [--backends bm25[,code,...]]

Exit status: 0 when the scorings agree, 1 when they do not or a step fails, 2 on usage.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEV_SUITE = ROOT.parent / "shared" / "bench" / "semble-dev" / "suite.toml"
DEFAULT_OUT = ROOT / ".nox" / "peer" / "results"
SEMBLE_SYSTEMS = ("semble-bm25", "semble-ranked")
SYSTEM_LABELS = {
    "semble-bm25": "semble BM25",
    "semble-ranked": "semble BM25+ranking",
}
# The report carries six decimals: a per-query value agrees when it rounds to the same
# string, which holds when the two are within half a unit of the last digit.
REPORT_TOLERANCE = 5e-7
EXACT_TOLERANCE = 1e-9
_RANGE = re.compile(r"^(?P<path>.+)@(?P<start>[0-9]+)-(?P<end>[0-9]+)$")


class PeerError(Exception):
    """A step failed; the message is the one line the user sees."""


# ---------------------------------------------------------------------------
# The semble side: runs in semble's environment, imports nothing of cce.
# ---------------------------------------------------------------------------


class _NoEmbedding:
    """Stands in for semble's embedding model while its index is built: one zero
    dimension per chunk, so no model is downloaded or loaded. The vectors are never
    searched (the semantic candidates are empty and weigh 0)."""

    dim = 1

    def encode(self, texts: Sequence[str], **_: Any) -> Any:
        numpy = importlib.import_module("numpy")
        return numpy.zeros((len(texts), 1), dtype=numpy.float32)


def _no_semantic_candidates(*_: Any, **__: Any) -> list[Any]:
    return []


def semble_side(plan_path: str, out_path: str) -> None:
    """Index every member's corpus with semble and write both systems' rankings."""
    metadata = importlib.import_module("importlib.metadata")
    create = importlib.import_module("semble.index.create")
    search = importlib.import_module("semble.search")
    dense = importlib.import_module("semble.index.dense")
    types = importlib.import_module("semble.types")
    # The ranking step calls the semantic search first; with no model there is nothing
    # to find, and at semantic weight 0 what it would find scores 0 and is dropped.
    setattr(search, "_search_semantic", _no_semantic_candidates)  # noqa: B010
    plan = json.loads(pathlib.Path(plan_path).read_text(encoding="utf-8"))
    members: dict[str, Any] = {}
    for member in plan["members"]:
        corpus = pathlib.Path(member["corpus"]).resolve()
        bm25, _, chunks, _ = create.create_index_from_path(
            corpus, model=_NoEmbedding(), content=(types.ContentType.CODE,), display_root=corpus
        )
        runs: dict[str, dict[str, list[list[Any]]]] = {name: {} for name in SEMBLE_SYSTEMS}
        for case_id, query, k in member["cases"]:
            lexical = search._search_bm25(query, bm25, chunks, k, None)
            ranked = search.search(
                query, None, None, bm25, chunks, k, alpha=0.0, selector=None, rerank=True
            )
            runs["semble-bm25"][case_id] = _rows(lexical)
            runs["semble-ranked"][case_id] = _rows(ranked)
        files = len({chunk.file_path for chunk in chunks})
        members[member["name"]] = {"chunks": len(chunks), "files": files, "runs": runs}
        print(f"semble: {member['name']}: {len(chunks)} chunks in {files} files", file=sys.stderr)
    if dense._load_cached.cache_info().currsize != 0:
        raise PeerError("semble loaded an embedding model; the lexical comparison must not")
    document = {"semble_version": metadata.version("semble"), "members": members}
    _write_atomic(pathlib.Path(out_path), json.dumps(document, sort_keys=True) + "\n")


def _rows(results: Iterable[Any]) -> list[list[Any]]:
    return [
        [hit.chunk.file_path, hit.chunk.start_line, hit.chunk.end_line, float(hit.score)]
        for hit in results
    ]


# ---------------------------------------------------------------------------
# The cce side: the suite, the runs, cce's scoring, semble's scoring, the table.
# ---------------------------------------------------------------------------


def _write_atomic(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _cce(*args: str, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cce_cli", *args]
    done = subprocess.run(command, stdout=stdout, text=True, check=False)
    if done.returncode != 0:
        raise PeerError(f"`cce {' '.join(args)}` exited {done.returncode} (its stderr is above)")
    return done


class Member:
    """One suite member as the comparison needs it."""

    def __init__(self, name: str, fixtures: pathlib.Path, corpus: str) -> None:
        self.name = name
        self.fixtures = fixtures
        self.corpus = corpus
        self.cases: list[dict[str, Any]] = []
        for number, line in enumerate(fixtures.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise PeerError(f"{fixtures} line {number}: not JSON ({error.msg})") from None
            if "id" in record:
                self.cases.append(record)


def read_members(suite: pathlib.Path) -> list[Member]:
    """Every member of the suite, its fixtures and the corpus `cce suite fetch` names."""
    import tomllib

    try:
        manifest = tomllib.loads(suite.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise PeerError(f"{suite}: cannot read the suite manifest ({error})") from None
    fetched = _cce("suite", "fetch", str(suite)).stdout
    corpora = dict(line.split("\t")[:2] for line in fetched.splitlines() if line)
    members = []
    for entry in manifest.get("members", []):
        fixtures = (suite.parent / entry["fixtures"]).resolve()
        members.append(Member(entry["name"], fixtures, corpora[entry["name"]]))
    return members


def trec_run(system: str, rankings: dict[str, dict[str, list[list[Any]]]]) -> str:
    """The TREC run of one semble system: qualified case ids, `path:start-end` docnos."""
    lines = []
    for member, cases in rankings.items():
        for case_id, rows in cases.items():
            for rank, (path, start, end, score) in enumerate(rows, 1):
                if any(ch.isspace() for ch in path):
                    raise PeerError(f"{member}: path {path!r} has white space; TREC cannot hold it")
                lines.append(
                    f"{member}/{case_id} Q0 {path}:{start}-{end} {rank} {score!r} {system}"
                )
    return "".join(line + "\n" for line in lines)


def read_trec(path: pathlib.Path) -> dict[str, dict[str, list[tuple[str, int, int]]]]:
    """A TREC run with qualified ids, by tag then id: (path, start, end) in rank order."""
    rows: dict[str, dict[str, list[tuple[int, int, str, int, int]]]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        qid, _, docno, rank, _, tag = line.split()
        ranged = re.match(r"^(.+):([0-9]+)-([0-9]+)$", docno)
        span = (ranged[1], int(ranged[2]), int(ranged[3])) if ranged else (docno, 0, 0)
        rows.setdefault(tag, {}).setdefault(qid, []).append((int(rank), number, *span))
    return {
        tag: {qid: [(p, s, e) for _, _, p, s, e in sorted(hits)] for qid, hits in by_id.items()}
        for tag, by_id in rows.items()
    }


# Semble's benchmark scoring, rewritten from its description: every target (relevant and
# secondary alike) is found at the rank of the first result in its file whose lines
# overlap the target's (any line when the target has none); a rank where some target is
# first found has gain 1; the ideal is min(k, number of targets) ones.


def target_found(
    path: str,
    start: int,
    end: int,
    target: tuple[str, int | None, int | None],
    *,
    exact_paths: bool = False,
) -> bool:
    target_path, first, last = target
    # semble lets either path be a suffix of the other: its results are relative to the
    # benchmark root, its targets to the repository.
    suffix = path.endswith("/" + target_path) or target_path.endswith("/" + path)
    if not (path == target_path or (suffix and not exact_paths)):
        return False
    if first is None or last is None or start == 0:
        return True
    return not (end < first or start > last)


def semble_ndcg(
    ranking: Sequence[tuple[str, int, int]],
    targets: Sequence[tuple[str, int | None, int | None]],
    k: int,
    *,
    exact_paths: bool = False,
) -> float:
    if not targets:
        return 0.0
    gains = [0] * k
    for target in targets:
        for rank, (path, start, end) in enumerate(ranking[:k], 1):
            if target_found(path, start, end, target, exact_paths=exact_paths):
                gains[rank - 1] = 1
                break
    dcg = sum(gain / _log2(rank + 1) for rank, gain in enumerate(gains, 1))
    ideal = sum(1 / _log2(rank + 1) for rank in range(1, min(k, len(targets)) + 1))
    return dcg / ideal


def _log2(value: int) -> float:
    import math

    return math.log2(value)


def semble_targets(
    suite: pathlib.Path, members: Sequence[Member], annotations: str | None, repos: str | None
) -> tuple[dict[str, dict[str, Any]], str]:
    """Per member, per case id: (path prefix, targets). From semble's annotation files
    when they are found (their paths are relative to the repository; a result's path is
    prefixed with the member's benchmark root before matching), else from the anchors."""
    annotation_dir = pathlib.Path(annotations) if annotations else suite.parent / "annotations"
    repos_file = pathlib.Path(repos) if repos else suite.parent / "repos.json"
    if annotation_dir.is_dir() and repos_file.is_file():
        roots = {
            repo["name"]: repo.get("benchmark_root")
            for repo in json.loads(repos_file.read_text(encoding="utf-8"))
        }
        by_member: dict[str, dict[str, Any]] = {}
        for member in members:
            annotation_file = annotation_dir / f"{member.name}.json"
            if not annotation_file.is_file() or member.name not in roots:
                raise PeerError(
                    f"{annotation_dir}: member {member.name} needs {annotation_file.name} "
                    f"there and an entry in {repos_file}; give the semble files the suite "
                    "was imported from with --annotations DIR --repos FILE"
                )
            tasks = json.loads(annotation_file.read_text("utf-8"))
            if len(tasks) != len(member.cases):
                raise PeerError(
                    f"{annotation_dir / member.name}.json: {len(tasks)} tasks for "
                    f"{len(member.cases)} cases in {member.fixtures}"
                )
            root = roots.get(member.name)
            prefix = f"{root.strip('/')}/" if root else ""
            cases: dict[str, Any] = {}
            for case, task in zip(member.cases, tasks, strict=True):
                if task["query"] != case["query"]:
                    raise PeerError(f"{member.name}: case {case['id']} is not the task in order")
                raw = [*task.get("relevant", []), *task.get("secondary", [])]
                cases[case["id"]] = (prefix, [_annotation_target(t) for t in raw])
            by_member[member.name] = cases
        return by_member, f"semble's annotations ({annotation_dir})"
    by_member = {}
    for member in members:
        cases = {}
        for case in member.cases:
            anchors = [*case.get("expected", []), *case.get("secondary", [])]
            if any("#" in anchor for anchor in anchors):
                continue  # a kind cannot be a semble target
            cases[case["id"]] = ("", [_anchor_target(anchor) for anchor in anchors])
        by_member[member.name] = cases
    return by_member, "the fixtures' anchors (no semble annotations found)"


def _annotation_target(raw: Any) -> tuple[str, int | None, int | None]:
    if isinstance(raw, str):
        return raw, None, None
    return str(raw["path"]), int(raw["start_line"]), int(raw["end_line"])


def _anchor_target(anchor: str) -> tuple[str, int | None, int | None]:
    ranged = _RANGE.match(anchor)
    if ranged:
        return ranged["path"], int(ranged["start"]), int(ranged["end"])
    return anchor, None, None


def compare(args: argparse.Namespace) -> int:
    suite = pathlib.Path(args.suite).resolve()
    out = pathlib.Path(args.out).resolve()
    members = read_members(suite)
    backends = [name for name in args.backends.split(",") if name]
    plan = {
        "members": [
            {
                "name": m.name,
                "corpus": m.corpus,
                "cases": [[c["id"], c["query"], int(c.get("k", 10))] for c in m.cases],
            }
            for m in members
        ]
    }
    _write_atomic(out / "plan.json", json.dumps(plan, sort_keys=True, indent=1) + "\n")
    # semble's ranking step breaks some ties by set order, which follows string hashes:
    # a fixed seed makes its rankings the same on every run. The Hub is told to stay
    # offline so that a model load, if one ever happened, would fail instead of download.
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    semble_rankings = out / "semble-rankings.json"
    command = [args.semble_python, __file__, "--semble-side", str(out / "plan.json")]
    done = subprocess.run([*command, str(semble_rankings)], env=env, check=False)
    if done.returncode != 0:
        raise PeerError(f"semble's side exited {done.returncode} (its stderr is above)")
    produced = json.loads(semble_rankings.read_text(encoding="utf-8"))
    run_flags: list[str] = []
    for system in SEMBLE_SYSTEMS:
        rankings = {name: m["runs"][system] for name, m in produced["members"].items()}
        _write_atomic(out / f"{system}.trec", trec_run(system, rankings))
        run_flags += ["--run", f"{system}={out / (system + '.trec')}"]
    systems = [*backends, *SEMBLE_SYSTEMS]
    report_path = out / "suite.report.json"
    cce_results = out / "results.trec"
    with tempfile.NamedTemporaryFile("w", dir=out, delete=False, suffix=".json") as report:
        _cce(
            "relevance",
            str(suite),
            "--backend",
            ",".join(systems),
            *run_flags,
            "--metrics",
            "ndcg",
            "--json",
            "--results",
            str(cce_results),
            "--results-format",
            "trec",
            "--no-progress",
            stdout=report,
        )
    os.replace(report.name, report_path)
    document = json.loads(report_path.read_text(encoding="utf-8"))

    cce_scores: dict[str, dict[str, dict[str, str]]] = {s: {} for s in systems}
    member_means: dict[str, dict[str, str]] = {s: {} for s in systems}
    for member in document["members"]:
        for backend in member["report"]["backends"]:
            name = backend["backend"]
            member_means[name][member["name"]] = backend["ndcg_at_k"]
            cce_scores[name][member["name"]] = {
                q["id"]: q["ndcg_at_k"] for q in backend["per_query"]
            }
    macro = {s: document["aggregates"][s]["overall"]["ndcg_at_k"]["macro"] for s in systems}

    targets, source = semble_targets(suite, members, args.annotations, args.repos)
    rankings_by_system = read_trec(cce_results)
    cce_exact = cce_full_precision(members, cce_results)
    check_lines, mismatches, own_macro = cross_check(
        members, systems, rankings_by_system, targets, cce_scores, cce_exact, macro
    )

    table = render_table(members, systems, member_means, macro, produced, suite)
    summary = {
        "suite": str(suite),
        "semble_version": produced["semble_version"],
        "systems": systems,
        "macro_ndcg": macro,
        "member_ndcg": member_means,
        "semble_scoring": {"targets_from": source, "macro_ndcg": own_macro},
        "mismatches": mismatches,
    }
    _write_atomic(out / "peer.json", json.dumps(summary, sort_keys=True, indent=1) + "\n")
    print(table)
    print(f"semble's scoring of every ranking, targets from {source}:")
    print("\n".join(check_lines))
    print(f"written: {out}/ (peer.json, suite.report.json, *.trec)")
    return 1 if mismatches else 0


def cce_full_precision(
    members: Sequence[Member], results: pathlib.Path
) -> dict[str, dict[str, float]]:
    """Every ranking cce scored (its `--results` TREC run, in rank order) scored again
    with cce's own judging and metric code (`score_case`, the function behind
    `cce relevance`) at full precision: system -> `member/case-id` -> nDCG@k. The
    report's six decimals cannot show agreement to 1e-9; this can."""
    from cce_cli.evaluation.harness import score_case
    from cce_cli.formats.trec import read_trec_results
    from cce_fixtures import parse_fixtures
    from cce_metrics import LineWeights

    text = results.read_text(encoding="utf-8")
    by_system: dict[str, list[str]] = {}
    for line in text.splitlines():
        by_system.setdefault(line.split()[5], []).append(line)
    no_weights = LineWeights.from_chunks(())  # token metrics only; nDCG never reads them
    scores: dict[str, dict[str, float]] = {}
    for system, lines in by_system.items():
        ranked = read_trec_results(str(results), "\n".join(lines))
        scores[system] = {}
        for member in members:
            fixture_set = parse_fixtures(member.fixtures.read_text(encoding="utf-8"))
            for case in fixture_set.cases:
                qid = f"{member.name}/{case.id}"
                score = score_case(case, ranked.get(qid, ()), no_weights)
                scores[system][qid] = score.values["ndcg_at_k"]
    return scores


def cross_check(
    members: Sequence[Member],
    systems: Sequence[str],
    rankings: dict[str, dict[str, list[tuple[str, int, int]]]],
    targets: dict[str, dict[str, Any]],
    cce_scores: dict[str, dict[str, dict[str, str]]],
    cce_exact: dict[str, dict[str, float]],
    macro: dict[str, str],
) -> tuple[list[str], list[str], dict[str, dict[str, float]]]:
    """Score every system's rankings the way semble's benchmark does and compare each
    query with cce's value (six decimals, as the report carries) and the macro.

    Each query is scored twice. With semble's path rule, either path may be a suffix of
    the other (its results are relative to the benchmark root, its targets to the
    repository), so a result `app.py` also matches a target `src/flask/sansio/app.py`.
    With exact paths, each result's path gets the benchmark root in front and must equal
    the target's, which is what cce's anchors say. The exact scoring must agree with cce
    on every query, within 1e-9 of cce's own scoring at full precision and to the six
    decimals of cce's report; where semble's rule differs, the query is listed as
    explained."""
    lines = [f"  {'system':<14} {'semble rule':>12} {'exact paths':>12} {'cce':>9}"]
    mismatches: list[str] = []
    explained: list[str] = []
    own_macro: dict[str, dict[str, float]] = {}
    for system in systems:
        worst = 0.0
        rule_means, exact_means, cce_means = [], [], []
        for member in members:
            rule_values, exact_values, cce_values = [], [], []
            for case in member.cases:
                if case["id"] not in targets[member.name]:
                    continue
                prefix, case_targets = targets[member.name][case["id"]]
                hits = rankings.get(system, {}).get(f"{member.name}/{case['id']}", [])
                k = int(case.get("k", 10))
                by_rule = semble_ndcg(hits, case_targets, k)
                exact_hits = [(prefix + path, start, end) for path, start, end in hits]
                exact = semble_ndcg(exact_hits, case_targets, k, exact_paths=True)
                rule_values.append(by_rule)
                exact_values.append(exact)
                reported = cce_scores[system][member.name][case["id"]]
                full = cce_exact[system][f"{member.name}/{case['id']}"]
                cce_values.append(full)
                where = f"{system} {member.name}/{case['id']}"
                if not _agrees(exact, reported) or abs(exact - full) > EXACT_TOLERANCE:
                    mismatches.append(
                        f"{where}: semble (exact paths) {exact:.12f}, cce {full:.12f} "
                        f"(report {reported})"
                    )
                    continue
                worst = max(worst, abs(exact - full))
                if by_rule != exact:
                    explained.append(f"{where}: {by_rule:.6f} by semble's rule, {reported} exact")
            rule_means.append(_mean(rule_values))
            exact_means.append(_mean(exact_values))
            cce_means.append(_mean(cce_values))
        own_macro[system] = {"semble_rule": _mean(rule_means), "exact_paths": _mean(exact_means)}
        lines.append(
            f"  {system:<14} {_mean(rule_means):>12.6f} {_mean(exact_means):>12.6f} "
            f"{macro[system]:>9}   (exact vs cce: largest |diff| per query {worst:.1e}, "
            f"macro {abs(_mean(exact_means) - _mean(cce_means)):.1e})"
        )
    if explained:
        lines.append(
            f"  {len(explained)} queries score otherwise by semble's path rule (either path "
            "may end with the other, so `x.py` and `sub/x.py` match each other's targets, and "
            "two targets first found at one rank earn one gain):"
        )
        lines += [f"    {line}" for line in explained[:10]]
    if mismatches:
        lines.append(f"  DISAGREE on {len(mismatches)} queries:")
        lines += [f"    {line}" for line in mismatches[:10]]
    else:
        lines.append(
            "  agree: with exact paths every query's value is cce's to "
            f"{EXACT_TOLERANCE:g} (full precision) and to the report's six decimals"
        )
    return lines, mismatches, own_macro


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _agrees(value: float, reported: str) -> bool:
    return f"{value:.6f}" == reported and abs(value - float(reported)) <= REPORT_TOLERANCE


def render_table(
    members: Sequence[Member],
    systems: Sequence[str],
    member_means: dict[str, dict[str, str]],
    macro: dict[str, str],
    produced: dict[str, Any],
    suite: pathlib.Path,
) -> str:
    labels = [SYSTEM_LABELS.get(s, f"cce {s}") for s in systems]
    widths = [max(len(label), 8) for label in labels]
    head = f"{'member':<10} {'queries':>7}  " + "  ".join(
        f"{label:>{w}}" for label, w in zip(labels, widths, strict=True)
    )
    rows = [
        f"nDCG@10 (secondary targets count like primary) on {suite}, "
        f"semble {produced['semble_version']} without a model",
        head,
        "-" * len(head),
    ]
    for member in members:
        cells = "  ".join(
            f"{float(member_means[s][member.name]):>{w}.3f}"
            for s, w in zip(systems, widths, strict=True)
        )
        rows.append(f"{member.name:<10} {len(member.cases):>7}  {cells}")
    rows.append("-" * len(head))
    total = sum(len(m.cases) for m in members)
    cells = "  ".join(f"{float(macro[s]):>{w}.3f}" for s, w in zip(systems, widths, strict=True))
    rows.append(f"{'macro':<10} {total:>7}  {cells}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["--semble-side"]:
        if len(arguments) != 3:
            print("usage: peer_semble.py --semble-side PLAN.json OUT.json", file=sys.stderr)
            return 2
        try:
            semble_side(arguments[1], arguments[2])
        except PeerError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("suite", nargs="?", default=str(DEV_SUITE), help="a cce.suite/v1 manifest")
    parser.add_argument(
        "--semble-python", required=True, help="the Python of an environment holding semble"
    )
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where runs and reports go")
    parser.add_argument("--backends", default="bm25", help="cce backends to score (comma list)")
    parser.add_argument("--annotations", help="semble's annotation directory (for its scoring)")
    parser.add_argument("--repos", help="semble's repos.json (for its scoring)")
    args = parser.parse_args(arguments)
    try:
        return compare(args)
    except PeerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
