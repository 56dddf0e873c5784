"""Regenerate docs/limits.md: every cap on what a file or a flag can ask for.

    .venv/bin/python scripts/limits_doc.py [--check]

Each row is read from the constant the code enforces (named in the last column), so the
page cannot drift from the code; ``--check`` exits 1 when the committed page differs
(tests/cli/test_limits_doc.py runs it).  Every cap is refused in one line naming the
file and field (or the flag), exit 2, before any work.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PAGE = REPO / "docs" / "limits.md"

#: (input, what is capped, constant "module:NAME", why)
ROWS: list[tuple[str, str, str, str]] = [
    ("every file", "size", "perfmodel.reading:MAX_BYTES",
     "bytes; a larger file is the wrong file (a trace passed as an inventory)"),
    ("every YAML file", "size", "perfmodel.reading:MAX_YAML_BYTES",
     "bytes; YAML parses at about 1 MB/s"),
    ("every file", "values (after YAML aliases expand)", "perfmodel.reading:MAX_VALUES",
     "a nine-line alias bomb expands to a billion values"),
    ("every file", "nesting depth", "perfmodel.reading:MAX_DEPTH",
     "plan.json is about 5 levels deep"),
    ("every file", "integers", "perfmodel.errors:MAX_INT",
     "checked for size before they are converted"),
    ("inventory", "GPU types (`gpus`)", "planner.fleet.inventory:MAX_TYPES",
     "one search dimension per type; the catalog has about twenty"),
    ("inventory", "GPUs of one type (`count`, `servers` x `gpus_per_node`)",
     "planner.fleet.inventory:MAX_COUNT", "beyond any fleet"),
    ("inventory", "price, $/GPU-hour", "planner.fleet.inventory:MAX_PRICE",
     "a unit mistake beyond it"),
    ("workload", "longest length", "planner.workload.families:MAX_SUPPORTED_LEN",
     "tokens; dense per-length tables"),
    ("workload", "distributions in one mixture (nested ones counted)",
     "planner.workload.families:MAX_COMPONENTS", "each is a dense pmf"),
    ("workload", "joint histogram bins per axis", "planner.workload.schema:MAX_JOINT_BINS",
     "the counts table is their product"),
    ("profile", "slots", "planner.workload.profile:MAX_SLOTS",
     "one MILP each; a week of 5-minute slots is 2,016"),
    ("profile", "workload streams", "planner.workload.profile:MAX_STREAMS",
     "a column of every slot's MILP"),
    ("fleet file", "services", "planner.services.spec:MAX_SERVICES",
     "planned jointly, one MILP"),
    ("what-if spec", "scenarios the study expands to", "planner.core.defaults:MAX_SCENARIOS",
     "each is a plan, closed in simulation"),
    ("fleet what-if", "scenarios (`planner whatif --fleet`)",
     "planner.services.whatif:MAX_SCENARIOS", "each is a whole fleet plan, about a minute"),
    ("what-if spec", "budgets in a sweep; prices of one type; shares of one mixture",
     "planner.core.defaults:MAX_BUDGETS", "each is a scenario"),
    ("what-if spec", "GPU types added, removed or price-swept",
     "planner.fleet.inventory:MAX_TYPES", "as an inventory"),
    ("what-if spec", "workloads compared", "planner.core.defaults:MAX_WORKLOADS",
     "each is a file read and a column of scenarios"),
    ("what-if spec", "workloads in one mixture", "planner.core.defaults:MAX_MIXED",
     "each is a file read"),
    ("plan.json", "length ranges", "planner.core.defaults:MAX_RANGES",
     "as `--ranges`"),
    ("plan.json", "per-length rows", "planner.core.defaults:MAX_PLAN_LEN",
     "the longest prompt planned"),
    ("plan.json, checkpoint", "search history entries", "planner.core.defaults:MAX_HISTORY",
     "a search records at most 64 x 64 and its initial design"),
    ("plan.json", "island size", "planner.run.schema:MAX_ISLAND", "as an inventory type"),
    ("plan.json", "any rate, length, share or cost", "planner.run.schema:MAX_FIGURE",
     "a corrupted figure beyond it"),
    ("flag", "`planner simulate -n`", "planner.core.defaults:MAX_SIM_REQUESTS",
     "requests; memory grows with them"),
    ("flag", "`--ranges`", "planner.core.defaults:MAX_RANGES",
     "columns of the inner MILP"),
    ("flag", "`--max-island`, island GPUs", "planner.core.defaults:MAX_ISLAND_GPUS",
     "tables per parallel configuration"),
    ("flag", "`--iterations`", "planner.cli.values:MAX_ITERATIONS", "BO iterations"),
    ("flag", "`--batch-size`", "planner.cli.values:MAX_BATCH_SIZE", "BO batch"),
    ("flag", "`--exact-time-limit`, `--time-limit`", "planner.core.defaults:MAX_TIME_LIMIT",
     "seconds: a day"),
    ("flag", "`--seed`", "planner.cli.values:MAX_SEED", "numpy's seed range"),
    ("flag", "`--workers`", "planner.core.execution:MAX_WORKERS", "processes or Ray tasks"),
    ("flag", "`planner plan --scenarios`", "planner.cli.profile_plan:MAX_SCENARIOS",
     "profiles; one reserved fleet each"),
    ("flag", "`planner whatif --budget-sweep`", "planner.core.defaults:MAX_BUDGETS",
     "budgets"),
    ("error line", "characters of one echoed value", "planner.cli.main:MAX_VALUE_CHARS",
     "longer values are cut at the value, their length stated"),
    ("error line", "characters", "planner.cli.main:MAX_ERROR_CHARS",
     "cut in the middle, its length stated"),
]

HEAD = """# Limits

Every count a file or a flag can ask for has a cap.  Past it, the planner refuses the
input in one line naming the file and field (or the flag), exit status 2, before it
does any work, and writes nothing.  The caps sit far above any real fleet, workload or
study: each is where an input stops being a plan and becomes a mistake (a generated
file gone wrong, a trace passed as an inventory) or an attack (a YAML alias bomb).

Besides these counts, a plan.json read back by `planner report`, `simulate` or `export`
holds no more islands than its inventory has GPUs, no more servers than its islands
have GPUs, and no more router entries per range than islands of that phase.  A trace
given to `planner workload fit` is streamed in chunks of rows: its memory grows with
the longest length it holds, not with its rows, so it has no row cap; `planner simulate
--trace` streams it too and stops after the requests it simulates (`-n`, or as many as
its measuring window needs, both capped).

This page is generated from the constants the code enforces
(`scripts/limits_doc.py`; a test fails when it drifts).

| Input | What is capped | Cap | Why | Constant |
|---|---|---|---|---|
"""


def value(ref: str) -> object:
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


def shown(v: object) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and v < 1e7 else f"{v:g}"
    return str(v)


def page() -> str:
    rows = [f"| {i} | {w} | {shown(value(ref))} | {why} | `{ref.replace(':', '.')}` |"
            for i, w, ref, why in ROWS]
    return HEAD + "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = ap.parse_args()
    text = page()
    if args.check:
        if PAGE.read_text() != text:
            print(f"{PAGE} is stale: run scripts/limits_doc.py", file=sys.stderr)
            sys.exit(1)
        return
    PAGE.write_text(text)
    print(f"wrote {PAGE} ({len(ROWS)} limits)")


if __name__ == "__main__":
    main()
