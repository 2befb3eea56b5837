"""The ablation table of the `code` backend on a suite: each rung of eval/ranking/cce.toml
against the one before, per member and macro nDCG@10, with cce's paired test.

Why it exists: docs/ranking.md claims what each technique adds; this script regenerates
that table from `cce relevance --compare` alone, so anyone can check the claim with one
command: `uv run nox -s ranking` (or `uv run python eval/ranking/ablation.py SUITE`).
The suite defaults to the semble-dev suite beside the repository (`../shared/bench/`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "cce.toml")
DEFAULT_SUITE = os.path.join(HERE, "..", "..", "..", "shared", "bench", "semble-dev", "suite.toml")
RUNGS = (
    ("code-0-off", "every technique off (= `bm25`)"),
    ("code-1-stem", "+ stem and folder match boost"),
    ("code-2-files", "+ rank scores, file boost, repeat decay"),
    ("code-3-definitions", "+ definition boost, path penalties"),
    ("code-4-terms", "+ identifier-split and path terms"),
    ("code-5-codefiles", "+ code files only"),
    ("code-6-tiled", "+ outermost chunks cut at nested definitions"),
    ("code-7-gaps", "+ gap chunks, leading comments joined"),
    ("code-8-windows", "+ 25-line windows"),
    ("code-9-acronyms", "+ path parts matching query-word initials"),
    ("code-10-grammars", "+ Go, Java and C++ tiled at parsed definitions"),
    ("code-11-plurals", "+ plural and third-person s folded (= `code`)"),
    ("code-12-split-unparsed", "+ definition-line cuts in other unparsed languages (opt-in)"),
)


def cce(*args: str) -> dict[str, object]:
    made = subprocess.run(
        ["cce", "relevance", *args, "--config", CONFIG, "--metrics", "ndcg", "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    document: dict[str, object] = json.loads(made.stdout)
    return document


def main() -> int:
    suite = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SUITE
    names = [name for name, _ in RUNGS]
    scored = cce(suite, "--backend", ",".join(names))
    members = [m["name"] for m in scored["members"]]  # type: ignore[attr-defined]
    by_member: dict[str, dict[str, float]] = {name: {} for name in names}
    for member in scored["members"]:  # type: ignore[attr-defined]
        for row in member["report"]["backends"]:
            by_member[row["backend"]][member["name"]] = float(row["ndcg_at_k"])
    aggregates = scored["aggregates"]
    header = ["rung", "technique", *members, "macro", "Δ macro", "W/T/L", "p"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    previous = None
    for name, label in RUNGS:
        macro = float(aggregates[name]["overall"]["ndcg_at_k"]["macro"])  # type: ignore[index]
        cells = [f"`{name}`", label, *(f"{by_member[name][m]:.3f}" for m in members)]
        cells.append(f"{macro:.3f}")
        if previous is None:
            cells += ["", "", ""]
        else:
            diff = cce(suite, "--compare", f"{previous},{name}")["compare"]
            ndcg = diff["metrics"]["ndcg_at_k"]  # type: ignore[index]
            cells += [
                ndcg["mean_delta"],
                f"{ndcg['wins']}/{ndcg['n'] - ndcg['wins'] - ndcg['losses']}/{ndcg['losses']}",
                f"{float(ndcg['p']):.3g}",
            ]
        print("| " + " | ".join(cells) + " |")
        previous = name
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
