"""Suites: many repositories scored as one benchmark (`cce.suite/v1` manifests).

Each member's block must be the report `cce relevance` prints for that member alone; the
aggregates must equal a computation by hand; the bytes must not depend on where members
ran (`--jobs 1`, `--jobs 2`, a Dask cluster on 127.0.0.1); git members are pinned to a
commit of a repository the test makes; suite reports diff and plan over every query.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "eval" / "corpus" / "sample"
DOCS_CORPUS = REPO / "eval" / "relevance" / "docs-corpus"
CODE = (REPO / "eval" / "relevance" / "code.jsonl").read_text(encoding="utf-8").splitlines()
DOCS = (REPO / "eval" / "relevance" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
HEADER = '{"schema":"cce.relevance/v1"}'

# The `run_cce` fixture (conftest.py): cce ARGV... -> (exit status, stdout, stderr).
RunCce = Callable[..., tuple[int, str, str]]


def write_fixtures(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Three members over two local corpora, in two groups."""
    write_fixtures(tmp_path / "fixtures" / "alpha.jsonl", CODE[1:5])
    write_fixtures(tmp_path / "fixtures" / "beta.jsonl", CODE[5:])
    write_fixtures(tmp_path / "fixtures" / "docs.jsonl", DOCS[1:])
    shutil.copytree(SAMPLE, tmp_path / "corpora" / "sample")
    shutil.copytree(DOCS_CORPUS, tmp_path / "corpora" / "docs")
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n'
        '[[members]]\nname = "alpha"\nfixtures = "fixtures/alpha.jsonl"\n'
        'corpus = "corpora/sample"\ngroups = ["code"]\n\n'
        '[[members]]\nname = "beta"\nfixtures = "fixtures/beta.jsonl"\n'
        'corpus = "corpora/sample"\ngroups = ["code"]\n\n'
        '[[members]]\nname = "docs"\nfixtures = "fixtures/docs.jsonl"\n'
        'corpus = "corpora/docs"\ngroups = ["docs"]\n',
        encoding="utf-8",
    )
    return manifest


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_each_member_block_is_its_single_run_report(suite: Path, run_cce: RunCce) -> None:
    code, out, err = run_cce("relevance", str(suite), "--json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["schema"] == "cce.suite.report/v1"
    assert [member["name"] for member in document["members"]] == ["alpha", "beta", "docs"]
    for member in document["members"]:
        fixtures = suite.parent / "fixtures" / f"{member['name']}.jsonl"
        corpus = suite.parent / member["corpus"]["path"]
        alone = run_cce("relevance", str(fixtures), "--dir", str(corpus), "--json")
        assert alone[0] == 0
        assert member["report"] == json.loads(alone[1])
    assert out.endswith("}\n") and not out.endswith("\n\n")


def test_macro_and_micro_equal_a_hand_computation(suite: Path, run_cce: RunCce) -> None:
    document = json.loads(run_cce("relevance", str(suite), "--json")[1])
    for backend in ("bm25", "vector", "hybrid"):
        for key in ("precision_at_k", "recall", "mrr", "f1"):
            per_member: dict[str, list[float]] = {}
            for member in document["members"]:
                entry = next(b for b in member["report"]["backends"] if b["backend"] == backend)
                per_member[member["name"]] = [float(row[key]) for row in entry["per_query"]]
            block = document["aggregates"][backend]
            every = [value for values in per_member.values() for value in values]
            macro = _mean([_mean(values) for values in per_member.values()])
            assert float(block["overall"][key]["macro"]) == pytest.approx(macro, abs=2e-6)
            assert float(block["overall"][key]["micro"]) == pytest.approx(_mean(every), abs=2e-6)
            assert block["overall"]["members"] == 3
            assert block["overall"]["queries"] == len(every) == 16
            code_macro = _mean([_mean(per_member["alpha"]), _mean(per_member["beta"])])
            assert float(block["groups"]["code"][key]["macro"]) == pytest.approx(
                code_macro, abs=2e-6
            )
            assert block["groups"]["docs"][key]["micro"] == block["groups"]["docs"][key]["macro"]


def test_the_bytes_do_not_depend_on_how_many_workers(suite: Path, run_cce: RunCce) -> None:
    one = run_cce("relevance", str(suite), "--json", "--jobs", "1")
    two = run_cce("relevance", str(suite), "--json", "--jobs", "2")
    assert one[0] == two[0] == 0
    assert one[1] == two[1]
    text = run_cce("relevance", str(suite), "--jobs", "2")[1]
    assert "3 members, 16 queries" in text
    assert "  macro " in text and "  micro (all queries) " in text


def test_a_dask_cluster_gives_the_same_bytes(suite: Path, run_cce: RunCce) -> None:
    distributed = pytest.importorskip("distributed")
    local = run_cce("relevance", str(suite), "--json")[1]
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        code, out, err = run_cce("relevance", str(suite), "--json", "--executor", address)
    assert (code, err) == (0, "")
    assert out == local


def test_compare_pairs_every_query_of_the_suite(suite: Path, run_cce: RunCce) -> None:
    code, out, _ = run_cce("relevance", str(suite), "--json", "--compare", "bm25,hybrid")
    assert code == 0
    compare = json.loads(out)["compare"]
    assert compare["paired"] == 16
    assert compare["base"]["backend"] == "bm25" and compare["head"]["backend"] == "hybrid"
    assert set(compare["members"]) == {"alpha", "beta", "docs"}
    assert compare["members"]["alpha"]["mrr"]["n"] == 4


def test_compare_tests_the_macro_mean_by_default_and_micro_on_request(
    suite: Path, run_cce: RunCce
) -> None:
    """The delta of the suite's comparison is the mean of the members' mean deltas (what
    the table's macro row moves by), unless --mean micro pools every query."""
    code, out, _ = run_cce("relevance", str(suite), "--json", "--compare", "bm25,hybrid")
    assert code == 0
    compare = json.loads(out)["compare"]
    assert (compare["mean"], compare["unit"]) == ("macro", "query")
    member_means = [float(row["mrr"]["mean_delta"]) for row in compare["members"].values()]
    macro = sum(member_means) / len(member_means)
    assert abs(float(compare["metrics"]["mrr"]["mean_delta"]) - macro) < 2e-6
    code, out, _ = run_cce(
        "relevance", str(suite), "--json", "--compare", "bm25,hybrid", "--mean", "micro"
    )
    compare = json.loads(out)["compare"]
    pooled = [float(row["delta"]) for row in compare["metrics"]["mrr"]["per_query"]]
    assert compare["mean"] == "micro"
    assert abs(float(compare["metrics"]["mrr"]["mean_delta"]) - sum(pooled) / len(pooled)) < 2e-6
    code, _, err = run_cce(
        "relevance", str(suite), "--compare", "bm25,hybrid", "--test", "signed-rank"
    )
    assert code == 2 and "--unit member" in err


def test_gated_suite_compare_appends_the_job_summary(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cce: RunCce
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run_cce("relevance", str(suite), "--compare", "bm25,hybrid")[0] == 0
    assert not summary.exists()
    code, _, _ = run_cce(
        "relevance", "--fail-on-query-regression", str(suite), "--compare", "bm25,hybrid"
    )
    assert code in (0, 3)
    text = summary.read_text(encoding="utf-8")
    assert "### cce diff: bm25 → hybrid" in text
    assert ("Gate failed" in text) == (code == 3)


@pytest.fixture
def git_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git: Callable[..., str]
) -> tuple[Path, str, Path]:
    """A suite whose one member is a file:// git repository: the sample corpus under
    `src/`, committed, then changed in a later commit that the manifest does not pin."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    origin = tmp_path / "origin"
    shutil.copytree(SAMPLE, origin / "src")
    git(origin, "init", "--quiet")
    git(origin, "add", "-A")
    git(origin, "commit", "--quiet", "-m", "sample")
    pinned = git(origin, "rev-parse", "HEAD")
    (origin / "src" / "config.py").unlink()
    git(origin, "commit", "--quiet", "-am", "drop config.py")
    write_fixtures(tmp_path / "fixtures" / "sample.jsonl", CODE[1:])
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n[[members]]\nname = "sample"\n'
        'fixtures = "fixtures/sample.jsonl"\n'
        f'git = "file://{origin}"\nrev = "{pinned}"\nroot = "src"\ngroups = ["mixed"]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("CCE_CACHE_DIR", str(tmp_path / "cache"))
    return manifest, pinned, tmp_path


def test_a_git_member_is_scored_at_its_pinned_commit(
    git_suite: tuple[Path, str, Path], run_cce: RunCce
) -> None:
    manifest, pinned, root = git_suite
    code, out, err = run_cce("relevance", str(manifest), "--json", "--backend", "bm25")
    assert (code, err) == (0, "")
    document = json.loads(out)
    member = document["members"][0]
    assert member["corpus"]["rev"] == pinned and member["corpus"]["root"] == "src"
    alone = run_cce(
        "relevance",
        str(root / "fixtures" / "sample.jsonl"),
        "--dir",
        str(SAMPLE),
        "--json",
        "--backend",
        "bm25",
    )[1]
    # Scored at the pinned commit, where config.py still exists: the scores are the
    # sample corpus's own (only the displayed corpus path differs).
    expected = json.loads(alone)
    assert member["report"]["backends"] == expected["backends"]
    checkouts = list((root / "cache" / "corpora").iterdir())
    assert len(checkouts) == 1 and checkouts[0].name.endswith(pinned)
    again = run_cce("relevance", str(manifest), "--json", "--backend", "bm25")
    assert again[1] == out  # reused, unchanged


def test_a_commit_the_repository_lacks_is_an_error_naming_the_member(
    git_suite: tuple[Path, str, Path], run_cce: RunCce
) -> None:
    manifest, pinned, _ = git_suite
    manifest.write_text(manifest.read_text().replace(pinned, "0" * 40), encoding="utf-8")
    code, out, err = run_cce("relevance", str(manifest))
    assert (code, out) == (1, "")
    assert err.startswith("error: member 'sample': commit 0000000000000000000000000000000000000000")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ('name = "a"\nfixtures = "f.jsonl"\n', "give exactly one of corpus"),
        ('name = "a"\nfixtures = "f.jsonl"\ncorpus = "c"\ngit = "g"\n', "exactly one of corpus"),
        ('name = "a b"\nfixtures = "f.jsonl"\ncorpus = "c"\n', "name must be letters"),
        ('name = "a"\nfixtures = "f.jsonl"\ngit = "g"\nrev = "main"\n', "full commit id"),
        ('name = "a"\nfixtures = "f.jsonl"\ncorpus = "c"\nrev = "x"\n', "rev goes with git"),
        (
            'name = "a"\nfixtures = "f.jsonl"\ngit = "g"\nrev = "'
            + "a" * 40
            + '"\nroot = "../x"\n',
            "root must be a relative path",
        ),
    ],
)
def test_manifest_errors_name_the_manifest_member_and_fix(
    tmp_path: Path, run_cce: RunCce, members: str, message: str
) -> None:
    manifest = tmp_path / "suite.toml"
    manifest.write_text(f'schema = "cce.suite/v1"\n\n[[members]]\n{members}', encoding="utf-8")
    code, out, err = run_cce("relevance", str(manifest))
    assert (code, out) == (1, "")
    assert err.startswith(f"error: suite manifest {manifest}, member ")
    assert message in err


def test_duplicate_member_names_are_refused(suite: Path, run_cce: RunCce) -> None:
    suite.write_text(suite.read_text().replace('name = "beta"', 'name = "alpha"'))
    code, _, err = run_cce("relevance", str(suite))
    assert code == 1
    assert "member 'alpha' appears twice" in err


def test_diff_of_two_suite_reports_pairs_by_member_and_gates(
    suite: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    base = tmp_path / "base.json"
    head = tmp_path / "head.json"
    base.write_text(run_cce("relevance", str(suite), "--json", "--backend", "bm25")[1])
    head.write_text(run_cce("relevance", str(suite), "--json", "--backend", "vector")[1])
    code, out, _ = run_cce("diff", str(base), str(head), "--backends", "bm25,vector")
    assert code == 0
    assert "  paired queries: 16" in out
    assert "per member: mean delta (wins/ties/losses)" in out
    body = json.loads(
        run_cce("diff", str(base), str(head), "--backends", "bm25,vector", "--format", "json")[1]
    )
    assert body["paired"] == 16
    assert body["members"]["alpha"]["mrr"]["n"] == 4
    # vector's macro MRR is well below bm25's: a floor between them fails the gate.
    head_macro = float(
        json.loads(head.read_text())["aggregates"]["vector"]["overall"]["mrr"]["macro"]
    )
    floor = f"mrr={head_macro + 0.01:.6f}"
    code, _, err = run_cce(
        "diff", str(base), str(head), "--backends", "bm25,vector", "--min", floor
    )
    assert code == 3
    assert "gate failed: MRR of vector" in err


def test_plan_counts_queries_over_the_whole_suite(
    suite: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    report = tmp_path / "suite.json"
    report.write_text(run_cce("relevance", str(suite), "--json")[1])
    code, out, _ = run_cce("plan", str(report), "--compare", "bm25,hybrid")
    assert code == 0
    assert "16 paired queries" in out.splitlines()[0]


def test_suite_flags_that_do_not_apply_are_usage_errors(suite: Path, run_cce: RunCce) -> None:
    code, _, err = run_cce("relevance", str(suite), "--dir", "x")
    assert code == 2
    assert "--dir does not apply to a suite" in err
    code, _, err = run_cce("relevance", str(suite), "--fail-on-significant")
    assert code == 2
    code, _, err = run_cce("relevance", str(suite), "--provenance")
    assert code == 2
    assert "--provenance adds to the JSON report" in err


def _processes_whose(file: str, holds: bytes) -> list[int]:
    """The processes whose /proc/PID/`file` holds `holds` (one that ends meanwhile is skipped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / file).read_bytes()
            except OSError:
                continue
            if holds in text:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find workers")
def test_ctrl_c_cancels_the_members_and_exits_130(tmp_path: Path) -> None:
    import os
    import signal
    import sys
    import time

    shutil.copytree(SAMPLE, tmp_path / "corpus")
    members = []
    # Enough members, each building its own index, that the run is still going when
    # the interrupt comes.
    for n in range(1000):
        write_fixtures(tmp_path / "fixtures" / f"m{n}.jsonl", CODE[1:])
        members.append(
            f'[[members]]\nname = "m{n}"\nfixtures = "fixtures/m{n}.jsonl"\ncorpus = "corpus"\n'
        )
    manifest = tmp_path / "suite.toml"
    manifest.write_text('schema = "cce.suite/v1"\n\n' + "\n".join(members), encoding="utf-8")
    env = {**os.environ, "CCE_CACHE_DIR": str(tmp_path / "cache")}
    command = [
        *(sys.executable, "-m", "cce_cli", "relevance", str(manifest)),
        *("--jobs", "2", "--no-cache"),
    ]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # The interrupt comes once the members are being scored, known by the worker
    # processes having started: a fixed delay raced a fast machine to the end of the run.
    deadline = time.monotonic() + 60
    while not _processes_whose("status", f"\nPPid:\t{child.pid}\n".encode()):
        assert child.poll() is None, "the suite ended before any worker started"
        assert time.monotonic() < deadline, "no worker started within 60 s"
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert (child.returncode, out, err) == (130, b"", b"error: interrupted\n")
    time.sleep(0.5)
    assert _processes_whose("cmdline", str(manifest).encode()) == []


def test_check_takes_a_suite_and_checks_each_member_against_its_corpus(
    suite: Path, run_cce: RunCce
) -> None:
    assert run_cce("check", str(suite))[0] == 0
    docs = suite.parent / "fixtures" / "docs.jsonl"
    # config.py is in the code corpus but not in the docs member's corpus.
    docs.write_text(
        docs.read_text() + '{"id":"dead","query":"load config","expected":["config.py"]}\n'
    )
    code, out, err = run_cce("check", str(suite))
    assert code == 1
    assert out.startswith(f"{docs}:")
    assert 'case dead: anchor "config.py"' in out
    assert "1 error(s)" in err


def test_suite_fetch_checks_out_every_git_member_once(
    git_suite: tuple[Path, str, Path], run_cce: RunCce
) -> None:
    manifest, pinned, root = git_suite
    code, out, err = run_cce("suite", "fetch", str(manifest))
    assert code == 0
    checkout = next((root / "cache" / "corpora").iterdir())
    assert out == f"sample\t{checkout / 'src'}\tfile://{root / 'origin'} @ {pinned}\n"
    assert err == f"[1/1] sample: {checkout / 'src'}\n"
    assert (checkout / "src" / "config.py").is_file()  # the pinned commit, not the tip
    inode = checkout.stat().st_ino
    assert run_cce("suite", "fetch", str(manifest))[0] == 0
    assert checkout.stat().st_ino == inode  # reused, not cloned again


def test_macro_weighs_members_and_micro_weighs_queries() -> None:
    """The example of docs/suites.md: 4 queries at 1.0 and 12 at 0.5."""
    from cce_cli.evaluation.suite import MemberResult, aggregate
    from cce_metrics import METRICS

    mrr = next(item for item in METRICS if item.key == "mrr")

    def member(name: str, value: float, count: int) -> MemberResult:
        rows = tuple((f"q{n}", {"mrr": value}) for n in range(count))
        return MemberResult(name, "{}", (("bm25", rows),), {}, ("mrr",))

    found = aggregate([member("small", 1.0, 4), member("large", 0.5, 12)], "bm25", mrr)
    assert (found.macro, found.micro, found.members, found.queries) == (0.75, 0.625, 2, 16)


def test_results_of_a_suite_replay_as_a_run_over_the_suite(
    suite: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    results = tmp_path / "results.jsonl"
    code, _, _ = run_cce("relevance", str(suite), "--backend", "bm25", "--results", str(results))
    assert code == 0
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert lines[0] == {"corpus": str(suite), "embedder": "hash", "schema": "cce.run/v1"}
    assert [line["member"] for line in lines[1:]].count("alpha") == 4
    assert all(line["id"].startswith(line["member"] + "/") for line in lines[1:])
    assert len(lines) == 1 + 16
    code, out, err = run_cce(
        "relevance", str(suite), "--json", "--run", f"replay={results}",
        "--backend", "bm25,replay",
    )  # fmt: skip
    assert (code, err) == (0, "")
    for member in json.loads(out)["members"]:
        bm25, replay = member["report"]["backends"]
        assert (bm25["backend"], replay["backend"]) == ("bm25", "replay")
        assert [row["mrr"] for row in replay["per_query"]] == [
            row["mrr"] for row in bm25["per_query"]
        ]


def test_members_on_workers_build_on_one_core(suite: Path) -> None:
    """A Dask worker is a daemonic process, which may not start a build's worker pool:
    members sent to a cluster or to local workers build on one core."""
    from cce_cli.formats.suite_manifest import read_manifest
    from cce_cli.runs.request import RunRequest
    from cce_cli.runs.suite import member_tasks

    manifest = read_manifest(str(suite))
    request = RunRequest(str(suite))
    spread = member_tasks(manifest, request, str(suite.parent / "cache"), single_core=True)
    assert [task.request.build.jobs for task in spread] == [1, 1, 1]
    here = member_tasks(manifest, request, str(suite.parent / "cache"), single_core=False)
    assert [task.request.build.jobs for task in here] == [None, None, None]
    # Each member is the suite's request with its own fixtures and corpus.
    assert [task.request.fixtures for task in here] == [m.fixtures for m in manifest.members]
    assert all(task.request.corpus and task.request.format == "json" for task in here)
    assert [task.request.member_prefix for task in here] == [
        f"{member.name}/" for member in manifest.members
    ]


def test_a_member_task_survives_a_pickle_round_trip(suite: Path) -> None:
    """The process pool and Dask send a member's task pickled: it must come back equal,
    gate, metrics and build options included."""
    import pickle

    from cce_cli.commands.gate_options import minimum
    from cce_cli.compare.gate import GateSpec
    from cce_cli.evaluation.building import BuildOptions
    from cce_cli.formats.suite_manifest import read_manifest
    from cce_cli.runs.request import RunRequest
    from cce_cli.runs.suite import member_tasks

    manifest = read_manifest(str(suite))
    request = RunRequest(
        str(suite),
        compare="bm25,hybrid",
        metrics="ndcg",
        gate=GateSpec(fail_on_significant=True, minimums=(minimum("mrr=0.5"),)),
        runs=("extra=run.jsonl",),
        build=BuildOptions(jobs=2, no_cache=True, protection="strict"),
        results="out.jsonl",
    )
    assert pickle.loads(pickle.dumps(request)) == request
    tasks = member_tasks(manifest, request, str(suite.parent / "cache"), single_core=True)
    for task in tasks:
        again = pickle.loads(pickle.dumps(task))
        assert again == task
        assert again.request.build == BuildOptions(
            jobs=1, no_cache=True, progress=False, protection="strict"
        )
        assert again.wants_results and again.request.results is None


def test_a_suite_renders_as_an_html_page_and_cce_report_reads_its_report(
    suite: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    code, page, _ = run_cce("relevance", str(suite), "--format", "html")
    assert code == 0
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "alpha/code-load-config" in page and "docs/" in page
    report = tmp_path / "suite.json"
    report.write_text(run_cce("relevance", str(suite), "--json")[1])
    code, again, err = run_cce("report", str(report), "--fixtures", str(suite))
    assert (code, err) == (0, "")
    # The same tables and rows from the saved report (the manifest gives the query
    # text), which it names instead of the manifest; only the run's page carries what
    # each member retrieved, with its code, in the drill-down data.
    data = '<script type="application/json"'
    assert again.split(data)[0] == page.replace(str(suite), str(report)).split(data)[0]
    assert "where is the load_config function" in page
    assert "<h2>bm25: per member</h2>" in page and "group code" in page
    compared = run_cce("relevance", str(suite), "--compare", "bm25,hybrid", "--format", "html")
    assert compared[0] == 0 and "beta/code-ring-push" in compared[1]


def test_pool_takes_a_suite_and_applies_judgments_member_by_member(
    suite: Path, tmp_path: Path, run_cce: RunCce
) -> None:
    judging = tmp_path / "judging.jsonl"
    code, _, err = run_cce(
        "pool", str(suite), "--backends", "bm25", "--depth", "2", "-o", str(judging)
    )
    assert code == 0, err
    lines = [json.loads(line) for line in judging.read_text().splitlines()]
    assert len(lines) == 16
    assert [line["id"].split("/")[0] for line in lines].count("beta") == 7
    # Judge the first candidate of every query relevant, the rest not.
    for line in lines:
        for n, candidate in enumerate(line["candidates"]):
            candidate["judgment"] = "relevant" if n == 0 else "not"
    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "applied"
    code, _, err = run_cce("pool", "--apply", str(judged), str(suite), "-o", str(out))
    assert code == 0, err
    assert sorted(path.name for path in out.iterdir()) == [
        "alpha.jsonl",
        "beta.jsonl",
        "docs.jsonl",
    ]
    alpha = [json.loads(line) for line in (out / "alpha.jsonl").read_text().splitlines()]
    first = next(line for line in lines if line["id"] == "alpha/code-load-config")
    top = first["candidates"][0]
    # The anchor stops at the file's last line, where a chunk to its end claims one more.
    text = (suite.parent / "corpora" / "sample" / top["file_path"]).read_text(encoding="utf-8")
    last = text.count("\n") + (0 if text.endswith("\n") else 1)
    span = f"@{top['start_line']}-{min(top['end_line'], last)}"
    case = next(row for row in alpha[1:] if row["id"] == "code-load-config")
    # The judged candidate became an anchor of the member's own case (ids unqualified).
    added = [a for a in case["expected"] if a.startswith(top["file_path"]) and a.endswith(span)]
    assert len(added) == 1
    assert len(alpha) == 1 + 4
    assert (
        run_cce(
            "check", str(out / "alpha.jsonl"), "--dir", str(suite.parent / "corpora" / "sample")
        )[0]
        == 0
    )


def test_progress_names_the_members_done_and_the_member_running(
    suite: Path, run_cce: RunCce
) -> None:
    code, _, err = run_cce("relevance", str(suite), "--progress")
    assert code == 0
    assert err.splitlines() == [
        "members: 0/3 done, scoring alpha",
        "members: 1/3 done, scoring beta",
        "members: 2/3 done, scoring docs",
        "members: 3/3 done",
    ]
    assert run_cce("relevance", str(suite), "--no-progress")[2] == ""


def test_pool_apply_ends_a_member_anchor_at_its_file_last_line(
    tmp_path: Path, run_cce: RunCce
) -> None:
    """The member's corpus, named by the manifest only, bounds the written anchors."""
    source = tmp_path / "corpus" / "src"
    source.mkdir(parents=True)
    (source / "shallow.ts").write_text(
        "export const retryLimit = 3;\nexport const retryDelay = 10;\n", encoding="utf-8"
    )
    (source / "other.ts").write_text("export const unrelated = 1;\n", encoding="utf-8")
    (tmp_path / "m.jsonl").write_text(
        '{"schema":"cce.relevance/v1"}\n'
        '{"id":"a","query":"retry limit delay","expected":["src/other.ts"],"k":3}\n',
        encoding="utf-8",
    )
    manifest = tmp_path / "suite.toml"
    manifest.write_text(
        'schema = "cce.suite/v1"\n\n[[members]]\nname = "m"\nfixtures = "m.jsonl"\n'
        'corpus = "corpus"\n',
        encoding="utf-8",
    )
    judging = tmp_path / "judging.jsonl"
    code, _, err = run_cce("pool", str(manifest), "--backends", "vector", "-o", str(judging))
    assert code == 0, err
    row = json.loads(judging.read_text(encoding="utf-8"))
    for candidate in row["candidates"]:
        candidate["judgment"] = "relevant" if candidate["file_path"] == "src/shallow.ts" else "not"
    judged = tmp_path / "judged.jsonl"
    judged.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "applied"
    code, _, err = run_cce("pool", "--apply", str(judged), str(manifest), "-o", str(out))
    assert code == 0, err
    case = json.loads((out / "m.jsonl").read_text(encoding="utf-8").splitlines()[1])
    assert case["expected"] == ["src/other.ts", "src/shallow.ts@1-2"]


def test_a_suite_reads_a_discovered_config_only_for_configured_backends(
    suite: Path, run_cce: RunCce, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cce_cli.evaluation import configurations

    monkeypatch.setattr(configurations, "_ANNOUNCED", set(), raising=False)
    config = suite.parent / "cce.toml"
    config.write_text("[backends.x\n", encoding="utf-8")
    (suite.parent / "fixtures" / "cce.toml").write_text("nonsense = [\n", encoding="utf-8")
    code, _, err = run_cce("relevance", str(suite), "--json", "--compare", "bm25,hybrid")
    assert (code, err) == (0, "")
    config.write_text('[backends.bm25-b04]\nuse = "bm25"\nb = 0.4\n', encoding="utf-8")
    code, out, err = run_cce("relevance", str(suite), "--json", "--compare", "bm25,bm25-b04")
    assert code == 0, err
    assert err == f"note: backend configurations from {config}\n"  # once for three members
    assert json.loads(out)["compare"]["head"]["backend"] == "bm25-b04"


_FORK_WITH_GARBAGE = """
import gc, sys, threading, weakref
import cce_cli.runs.suite as suite

gc.disable()  # only the collections the pool and the workers run: no chance ones

if sys.argv[1] == "unguarded":  # the pool as it forked before: to show the test bites
    import contextlib
    suite.forks_without_garbage = contextlib.nullcontext

lock = threading.Lock()


class Cycle:
    pass


class Named:
    def __init__(self, name):
        self.name = name


class Task:
    def __init__(self, name):
        self.member = Named(name)


def finalizer(_ref):
    with lock:
        pass


# Garbage whose finalizer takes a lock that another thread holds while the pool forks,
# as an earlier executor's weakref callback takes its shutdown lock.
garbage = Cycle()
garbage.cycle = garbage
reference = weakref.ref(garbage, finalizer)
del garbage
lock.acquire()
threading.Timer(0.5, lock.release).start()


def member(task):
    gc.collect()  # a worker's collector runs sooner or later while it builds an index
    return task.member.name


suite.score_member = member  # forked workers call what this process calls
suite.member_workers = lambda jobs, members: 2
print(suite.run_members([Task("a"), Task("b")], jobs=2, executor=None))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
@pytest.mark.parametrize("guard", ["guarded", pytest.param("unguarded", marks=pytest.mark.slow)])
def test_workers_never_inherit_garbage_whose_finalizer_waits_on_a_lock(
    tmp_path: Path, guard: str
) -> None:
    script = tmp_path / "fork_with_garbage.py"
    script.write_text(_FORK_WITH_GARBAGE, encoding="utf-8")
    # A session of its own, so a hung run is ended with the workers it forked.
    child = subprocess.Popen(
        [sys.executable, str(script), guard],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = child.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        assert guard == "unguarded", "the suite's workers hung on an inherited lock"
        return
    assert guard == "guarded", "without the guard a worker should have hung"
    assert child.returncode == 0, stderr
    assert stdout == "['a', 'b']\n"
