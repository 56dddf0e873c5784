"""Hostile input, generated: malformed inventories, workloads, model configs, plan.json
files and search checkpoints, each read through the planner's own front door.

    .venv/bin/python scripts/fuzz_inputs.py [--cases 1000] [--seed 0]

Every case is a valid file with one field replaced by junk (a NaN, an infinity, a huge
or negative number, text, a list, a mapping, nothing) or with its bytes corrupted
(bytes inserted, replaced or cut).  Each must either load, or fail as exactly one
:class:`PlannerError` line that names the file -- never another exception, never a
traceback.  The tests run a few hundred cases per format through hypothesis
(tests/plan/test_fuzz_inputs.py); this script runs many more, seeded, and prints the
counts per format and outcome.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from perfmodel.models import get_model  # noqa: E402
from planner.core.errors import PlannerError  # noqa: E402
from planner.fleet.inventory import load_inventory  # noqa: E402
from planner.outer.checkpoint import load_checkpoint  # noqa: E402
from planner.run.schema import load_plan  # noqa: E402
from planner.workload.yaml_io import read_workload  # noqa: E402

JUNK: list[Any] = [float("nan"), float("inf"), -float("inf"), -1, 0, 0.5, 1e308, -1e308,
                   1e-308, 10**12, "abc", "", [], [1, 2], {}, {"a": 1}, None, True]


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a JSON-like document (mapping keys and list indices)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for k, v in enumerate(doc[:4]):
            out += _paths(v, (*prefix, k))
    return out


def replace_field(doc: Any, path: tuple, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return doc


def corrupt_bytes(data: bytes, rng: random.Random) -> bytes:
    """Insert, replace or cut a few bytes (including ones that are not UTF-8)."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(("insert", "replace", "cut"))
        at = rng.randrange(len(data) + 1)
        if op == "insert":
            data[at:at] = bytes([rng.randrange(256)])
        elif op == "replace" and at < len(data):
            data[at] = rng.randrange(256)
        else:
            data = data[:at]
    return bytes(data)


def _base_docs() -> dict[str, tuple[Any, str]]:
    """A valid document of each format and how it is written."""
    plan = json.loads((REPO / "tests" / "data" / "plan_small.json").read_text()) \
        if (REPO / "tests" / "data" / "plan_small.json").exists() else None
    if plan is None:
        sys.path.insert(0, str(REPO / "tests" / "report"))
        from report_fixtures import make_plan_dict

        from planner.run.schema import json_safe
        plan = json.loads(json.dumps(json_safe(make_plan_dict(S=64, J=4, history=3))))
    return {
        "inventory": (yaml.safe_load((REPO / "inventories" / "custom-datasheet.yaml")
                                     .read_text()), "yaml"),
        "workload": (yaml.safe_load((REPO / "workloads" / "example-lognormal.yaml")
                                    .read_text()), "yaml"),
        "model": (json.loads((REPO / "perfmodel" / "data" / "models" / "llama-3.1-70b.json")
                             .read_text()), "json"),
        "plan": (plan, "json"),
        "checkpoint": (_checkpoint_doc(), "json"),
    }


def _checkpoint_doc() -> dict[str, Any]:
    return {"format": "hetero-planner/outer-checkpoint", "version": 1,
            "fingerprint": {"seed": 0},
            "tracker": {"wall_time": 1.0, "evaluations": 2, "cache_hits": 0, "history": [
                {"index": 0, "wall_time": 0.5, "layout": "H200:8", "value": 10.0,
                 "cost": 32.0, "feasible": True, "best": 10.0, "cached": False,
                 "phase": "sobol"}]},
            "state": {}}


def _load_and_render(path: Path) -> Any:
    """What ``planner report RUN_DIR`` does with a plan.json: read it, then draw every
    table, plot and page from it (in memory)."""
    from planner.report import _render

    return _render(load_plan(path))


READERS: dict[str, Callable[[Path], Any]] = {
    "inventory": load_inventory,
    "workload": read_workload,
    "model": lambda p: get_model(str(p)),
    "plan": _load_and_render,
    "checkpoint": lambda p: load_checkpoint(p, fingerprint={"seed": 0}),
}


def write(path: Path, doc: Any, kind: str) -> None:
    if kind == "yaml":
        path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    else:
        path.write_text(json.dumps(doc))


def check(fmt: str, path: Path) -> str:
    """'ok', 'error' (one PlannerError line naming the file) or raises AssertionError."""
    try:
        READERS[fmt](path)
    except PlannerError as err:
        msg = str(err)
        assert "\n" not in msg, f"{fmt}: multi-line message: {msg!r}"
        assert str(path) in msg or path.name in msg, f"{fmt}: file not named: {msg!r}"
        return "error"
    except Exception as err:  # noqa: BLE001 - the point: anything else is a bug
        raise AssertionError(f"{fmt}: {type(err).__name__}: {err}") from err
    return "ok"


failures: list[str] = []


def run_cases(cases: int, seed: int) -> Counter:
    rng = random.Random(seed)
    base = _base_docs()
    counts: Counter = Counter()
    failures.clear()
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(cases):
            fmt = list(base)[k % len(base)]
            doc, kind = base[fmt]
            path = Path(tmp) / f"case{k}.{kind if fmt != 'plan' else 'json'}"
            what: Any = "bytes corrupted"
            if rng.random() < 0.7:
                field, junk = rng.choice(_paths(doc)), rng.choice(JUNK)
                write(path, replace_field(doc, field, junk), kind)
                what = (field, junk)
            else:
                write(path, doc, kind)
                path.write_bytes(corrupt_bytes(path.read_bytes(), rng))
            try:
                counts[(fmt, check(fmt, path))] += 1
            except AssertionError as err:
                counts[(fmt, "crash")] += 1
                failures.append(f"{what}: {err}")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    counts = run_cases(args.cases, args.seed)
    total = sum(counts.values())
    print(f"{total} cases: {len(failures)} crashed (another exception than one "
          "PlannerError line naming the file)")
    for fmt in sorted({f for f, _ in counts}):
        print(f"  {fmt:10s} loaded {counts[(fmt, 'ok')]:5d}   refused "
              f"{counts[(fmt, 'error')]:5d}   crashed {counts[(fmt, 'crash')]:3d}")
    for line in failures[:20]:
        print("  crash:", line)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
