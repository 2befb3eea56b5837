"""What one run is asked to do: a frozen value the commands build from their flags.

Why it exists: below the commands nothing reads an `argparse.Namespace`. `cce relevance`
turns its arguments into one `RunRequest` (`cce_cli.commands.relevance`), a Python
caller builds the same value (`cce_cli.api`), and a suite member is that request with
its own fixtures and corpus (`RunRequest.for_member`). It holds only plain values, so it
pickles: the process pool and a Dask cluster send it to the member workers as it is.
"""

from __future__ import annotations

import attrs

from cce_cli.compare.gate import GateSpec
from cce_cli.errors import CliError
from cce_cli.evaluation.building import BuildOptions

__all__ = ["RunRequest"]


@attrs.frozen(slots=True)
class RunRequest:
    """One `cce relevance` run: the inputs, what to score and compare, and the outputs.

    The defaults are the command's without flags; the field names follow the flags
    (`corpus` is `--dir`, `backends` is `--backend`, `runs` is `--run`).
    """

    fixtures: str
    """The `cce.relevance/v1` fixture file, or a `cce.suite/v1` manifest."""
    corpus: str | None = None
    store: str | None = None
    backends: str | None = None
    """A comma list of backend names; None: bm25, vector and hybrid."""
    compare: str | None = None
    """`A,B`: compare exactly two backends (B is the head)."""
    metrics: str | None = None
    """A comma list of metrics added to the default ones (cost metrics included)."""
    budgets: str | None = None
    """A comma list of token budgets, each adding `recall@Nt` (`--budgets`)."""
    graded: bool = False
    granularity: str = "chunk"
    test: str = "t"
    gate: GateSpec = attrs.field(factory=GateSpec)
    correction: str = "holm"
    alpha: float = 0.05
    min_aggregate: str | None = None
    format: str | None = None
    """The renderer's name; None: the first registered one (text)."""
    strict: bool = False
    provenance: bool = False
    by_tag: bool = False
    results: str | None = None
    results_format: str = "run"
    export_qrels: str | None = None
    config: str | None = None
    config_start: str | None = None
    """Where a backend configuration is looked for when `config` is None (a suite's
    members: the manifest's directory); None: beside the fixtures."""
    runs: tuple[str, ...] = ()
    """External runs as `NAME=FILE` (`--run`)."""
    executor: str | None = None
    build: BuildOptions = attrs.field(factory=BuildOptions)
    member_prefix: str | None = None
    """A suite member's `name/`, which an external run's case ids may carry."""
    mean: str | None = None
    """On a suite, the mean `--compare` tests and shows (`--mean`); None: `min_aggregate`,
    else macro."""
    unit: str = "query"
    """On a suite, `member` tests the members' mean deltas (`--unit`)."""
    tag_scope: str = "tag"
    """With `by_tag` on a suite's `--compare`, the correction's scope (`--tag-correction`)."""
    members: str | None = None
    """On a suite, `--members a,b`: score only these members (comma-separated)."""
    timings: bool = False
    """On a suite, `--timings`: add each member's index time and query latency."""

    def for_member(self, fixtures: str, corpus: str, name: str, *, single_core: bool) -> RunRequest:
        """The request a suite member is scored with: this one, with the member's
        fixtures and corpus, scored as JSON, writing no file of its own, drawing no bars
        (progress is the suite's), and on one core when `single_core`."""
        build = attrs.evolve(self.build, progress=False)
        if single_core:
            build = attrs.evolve(build, jobs=1)
        return attrs.evolve(
            self,
            fixtures=fixtures,
            corpus=corpus,
            store=None,
            format="json",
            results=None,
            export_qrels=None,
            gate=GateSpec(),
            executor=None,
            build=build,
            member_prefix=f"{name}/",
            members=None,
        )


def refuse_suite_selection(fixtures: str, *, members: str | None, timings: bool) -> None:
    """`--members` and `--timings` choose and time a suite's members; on one fixture set
    they are usage errors rather than ignored (the command and `cce_cli.api` alike)."""
    for flag, given in (("--members", members is not None), ("--timings", timings)):
        if given:
            raise CliError(
                f"{flag} applies to a suite manifest; {fixtures} is one fixture file",
                exit_code=2,
            )


def refuse_suite_tests(request: RunRequest) -> None:
    """`--mean`, `--unit member` and `--tag-correction family` say how a suite's
    comparison is tested; a single fixture set has no members, and `--by-tag` on it adds
    aggregates, not tests, so on one they are usage errors rather than ignored."""
    for flag, given in (
        ("--mean", request.mean is not None),
        ("--unit member", request.unit != "query"),
        ("--tag-correction family", request.tag_scope != "tag"),
    ):
        if given:
            raise CliError(
                f"{flag} applies to a suite's --compare (cce relevance SUITE.toml) or to "
                "`cce diff`; this run scores one fixture set",
                exit_code=2,
            )
