"""Hostile input through every command: seeded cases run in-process through the CLI.

    .venv/bin/python scripts/fuzz_cli.py [--cases 1000] [--seed 0] [--show 20]

Each case is one ``planner`` command line on a small, valid set-up (a 32-GPU inventory,
Llama-3.1-70B, a finished run folder, a what-if spec, a trace) with one thing made
hostile: a flag's value (NaN, infinities, huge, tiny, negative, text, empty), an input
file (a field replaced by junk or bytes corrupted: scripts/fuzz_inputs.py's
generators), or an output path (a file, a path under a file, empty, a folder of other
files).  Every case runs in its own empty working folder and must:

* return exit status 0, 1 (valid but unservable) or 2 (bad input) -- never raise;
* on failure, print exactly one line, ``error: ...``, naming the flag or the file;
* on failure, leave the working folder as it was (no run folder, no checkpoint, no
  temporary file; the inputs the case put there aside) -- and delete or change none
  of the user's files there (an earlier run's checkpoint, its inputs);
* finish within ``--timeout`` seconds (a hang) with memory capped (``--max-gb``).

Issue 32's classes add non-regular files, huge integers, contradictory model configs,
cross-field plan.json edits, refused checkpoints (the file must stay, byte for byte),
lists made up to a million items long in every kind of file, and YAML alias bombs.

It prints the count of cases per command and outcome and the first failures; exit
status 1 if any case broke a rule.  tests/cli/test_fuzz_cli.py runs a sample of the
same cases under hypothesis.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from planner.cli.main import run  # noqa: E402

_spec = importlib.util.spec_from_file_location("fuzz_inputs", REPO / "scripts" / "fuzz_inputs.py")
assert _spec is not None and _spec.loader is not None
inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inputs)

FLAG_JUNK = ["nan", "inf", "-inf", "-1", "0", "-5", "0.5", "1e308", "-1e308", "1e-300",
             "abc", "", "99999999999999999999", "1e9", "3.5x", "1,2", "--", " "]

INVENTORY = {"name": "small", "gpus": [
    {"type": "H200", "count": 16, "price_per_hour": 3.5},
    {"type": "H100-SXM", "count": 16, "price_per_hour": 2.5}]}
MODEL = "llama-3.1-70b"
PLAN = ["plan", "--inventory", "small.yaml", "--budget", "60", "--model", MODEL,
        "--no-sim-check", "--no-homogeneous", "--ranges", "8", "-q", "--out", "run"]
PERF = ["perf", "--gpu", "H200", "--gpus", "8", "--model", MODEL, "--input", "2000",
        "--output", "200"]
SIMULATE = ["simulate", "run", "-n", "300", "-q", "--warmup", "0.1"]
WHATIF_SPEC = {"inventory": "small.yaml", "model": MODEL, "budget": 60, "ranges": 8,
               "solver": {"time_limit": 20, "max_island": 16},
               "studies": {"budget_sweep": [40, 60]}}
WHATIF = ["whatif", "spec.yaml", "-q", "--out", "study"]
TRACE = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
    f"2023-11-16 18:15:{i // 10:02d}.{i % 10}000000,{100 + 37 * i},{10 + 3 * i}\n"
    for i in range(60))

FLAGS = {
    "plan": ["--budget", "--target-rps", "--ttft", "--tpot", "--seed", "--ranges",
             "--iterations", "--batch-size", "--exact-time-limit", "--search", "--inner",
             "--objective", "--colocated", "--engine", "--model", "--workload"],
    "perf": ["--gpus", "--input", "--output", "--decode-max", "--hit-rate", "--ttft",
             "--tpot", "--tp", "--dp", "--ep", "--mtp-acceptance", "--mtp-draft", "--gpu",
             "--engine", "--mode", "--weight-dtype", "--kv-dtype", "--max-input"],
    "simulate": ["--rate", "--seed", "-n", "--warmup", "--ttft-slo", "--tpot-slo",
                 "--router", "--arrivals", "--engine", "--workload"],
    "whatif": ["--budget", "--budget-sweep", "--marginal", "--time-limit", "--max-island",
               "--ranges", "--price", "--add", "--remove", "--ttft", "--tpot",
               "--availability", "--engine"],
    "workload show": ["--max-len"],
    "workload fit": ["--max-len", "--bin-width", "--block-size", "--format", "--time-unit",
                     "--columns", "--name"],
}


@dataclass
class Case:
    command: str
    argv: list[str]
    what: str  # the hostile part, for the failure list
    names: list[str] = field(default_factory=list)  # one must appear in an error line
    setup: Callable[[Path], None] | None = None


@dataclass
class Outcome:
    status: str  # ok | refused | unservable | crash | hang | wrote | lines | unnamed | exit
    detail: str = ""


# ------------------------------------------------------------------ fixtures
def build_fixtures(root: Path) -> None:
    """The valid set-up every case starts from (one real plan, ~5 s)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "small.yaml").write_text(yaml.safe_dump(INVENTORY))
    (root / "spec.yaml").write_text(yaml.safe_dump(WHATIF_SPEC))
    (root / "trace.csv").write_text(TRACE)
    shutil.copy(REPO / "workloads" / "example-lognormal.yaml", root / "workload.yaml")
    shutil.copy(REPO / "perfmodel" / "data" / "models" / f"{MODEL}.json", root / "config.json")
    with _cwd(root), _quiet():
        status = run(PLAN)
    if status != 0:
        raise SystemExit(f"fuzz_cli: the base plan failed (exit {status})")


def _copy_fixtures(root: Path, into: Path) -> None:
    for p in root.iterdir():
        if p.is_dir():
            shutil.copytree(p, into / p.name)
        else:
            shutil.copy(p, into / p.name)


# ------------------------------------------------------------------ cases
def _corrupt_file(rng: random.Random, path: Path, doc: Any, kind: str) -> str:
    if doc is None:  # the fixture's own file (a run folder's plan.json)
        doc = json.loads(path.read_text())
    if rng.random() < 0.7:
        where, junk = rng.choice(inputs._paths(doc)), rng.choice(inputs.JUNK)
        inputs.write(path, inputs.replace_field(doc, where, junk), kind)
        return f"{path.name}: {'.'.join(map(str, where))} = {junk!r}"
    inputs.write(path, doc, kind)
    path.write_bytes(inputs.corrupt_bytes(path.read_bytes(), rng))
    return f"{path.name}: bytes corrupted"


def _flag_case(rng: random.Random, command: str, base: list[str]) -> Case:
    flag, junk = rng.choice(FLAGS[command]), rng.choice(FLAG_JUNK)
    argv = list(base)
    if flag in argv:
        argv[argv.index(flag) + 1] = junk
    else:
        argv += [flag, junk]
    return Case(command, argv, f"{flag} {junk!r}", names=[flag])


def _file_case(rng: random.Random, command: str, base: list[str], name: str, doc: Any,
               kind: str) -> Case:
    seed = rng.randrange(2**31)

    def setup(cwd: Path) -> None:
        case.what = _corrupt_file(random.Random(seed), cwd / name, doc, kind)

    case = Case(command, list(base), f"{name} corrupted (seed {seed})", names=[name],
                setup=setup)
    return case


def _trace_case(rng: random.Random, command: str, base: list[str]) -> Case:
    """A trace with one cell replaced by junk, or its bytes corrupted."""
    seed = rng.randrange(2**31)

    def setup(cwd: Path) -> None:
        r = random.Random(seed)
        path = cwd / "trace.csv"
        if r.random() < 0.7:
            rows = TRACE.splitlines()
            k = r.randrange(1, len(rows))
            cells = rows[k].split(",")
            cells[r.randrange(len(cells))] = r.choice(
                ["nan", "inf", "-1", "1e308", "abc", "", "0", "1.5", "99999999999999999999"])
            rows[k] = ",".join(cells)
            path.write_text("\n".join(rows) + "\n")
        else:
            path.write_bytes(inputs.corrupt_bytes(TRACE.encode(), r))

    return Case(command, list(base), f"trace.csv corrupted (seed {seed})",
                names=["trace.csv"], setup=setup)


def _out_case(rng: random.Random, command: str, base: list[str], flag: str) -> Case:
    kind = rng.choice(["file", "under-file", "empty", "dot", "other-folder"])
    target = {"file": "taken", "under-file": "taken/run", "empty": "", "dot": ".",
              "other-folder": "mine"}[kind]

    def setup(cwd: Path) -> None:
        (cwd / "taken").write_text("a file of the user's\n")
        (cwd / "mine").mkdir()
        (cwd / "mine" / "notes.txt").write_text("the user's own files\n")

    argv = list(base)
    argv[argv.index(flag) + 1] = target
    return Case(command, argv, f"{flag} {target!r} ({kind})", names=[flag], setup=setup)


def make_case(rng: random.Random, docs: dict[str, tuple[Any, str]]) -> Case:
    """One hostile command line (module docstring)."""
    inventory = (INVENTORY, "yaml")
    workload, model = docs["workload"], docs["model"]
    spec = (WHATIF_SPEC, "yaml")
    kind = rng.choice([
        "plan-flag", "plan-flag", "plan-inventory", "plan-inventory", "plan-workload",
        "plan-model", "plan-out", "plan-resume", "perf-flag", "perf-flag", "perf-model",
        "perf-csv", "report-plan", "simulate-plan", "simulate-flag", "simulate-trace",
        "whatif-spec", "whatif-flag", "whatif-inventory", "whatif-out", "workload-show",
        "workload-show-flag", "workload-fit", "workload-fit-flag", "workload-fit-out",
        "plan-nonregular", "plan-hugeint", "plan-contradictory", "report-crossfield",
        "plan-stale-checkpoint", "long-list", "long-list", "alias-bomb"])
    if kind in _ISSUE32:
        return _ISSUE32[kind](rng, docs)
    if kind == "plan-flag":
        return _flag_case(rng, "plan", PLAN)
    if kind == "plan-inventory":
        return _file_case(rng, "plan", PLAN, "small.yaml", *inventory)
    if kind == "plan-workload":
        return _file_case(rng, "plan", [*PLAN, "--workload", "workload.yaml"],
                          "workload.yaml", *workload)
    if kind == "plan-model":
        argv = list(PLAN)
        argv[argv.index("--model") + 1] = "config.json"
        return _file_case(rng, "plan", argv, "config.json", *model)
    if kind == "plan-out":
        return _out_case(rng, "plan", PLAN, "--out")
    if kind == "plan-resume":
        argv = [*PLAN[:-1], "again", "--resume", "--search", "random"]
        return _file_case(rng, "plan", argv, ".again.checkpoint.json", *docs["checkpoint"])
    if kind == "perf-flag":
        return _flag_case(rng, "perf", [*PERF, "--csv", "sweep.csv", "--max-input", "256"])
    if kind == "perf-model":
        argv = list(PERF)
        argv[argv.index("--model") + 1] = "config.json"
        return _file_case(rng, "perf", argv, "config.json", *model)
    if kind == "perf-csv":
        return _out_case(rng, "perf", [*PERF, "--csv", "sweep.csv", "--max-input", "64"],
                         "--csv")
    if kind == "report-plan":
        return _file_case(rng, "report", ["report", "run"], "run/plan.json", None, "json")
    if kind == "simulate-plan":
        return _file_case(rng, "simulate", SIMULATE, "run/plan.json", None, "json")
    if kind == "simulate-flag":
        return _flag_case(rng, "simulate", SIMULATE)
    if kind == "simulate-trace":
        return _trace_case(rng, "simulate", [*SIMULATE, "--trace", "trace.csv"])
    if kind == "whatif-spec":
        return _file_case(rng, "whatif", WHATIF, "spec.yaml", *spec)
    if kind == "whatif-flag":
        return _flag_case(rng, "whatif", WHATIF)
    if kind == "whatif-inventory":
        return _file_case(rng, "whatif", WHATIF, "small.yaml", *inventory)
    if kind == "whatif-out":
        return _out_case(rng, "whatif", WHATIF, "--out")
    if kind == "workload-show":
        return _file_case(rng, "workload show", ["workload", "show", "workload.yaml",
                                                 "--out", "w.png"], "workload.yaml", *workload)
    if kind == "workload-show-flag":
        return _flag_case(rng, "workload show", ["workload", "show", "workload.yaml",
                                                 "--out", "w.png"])
    fit = ["workload", "fit", "trace.csv", "--format", "azure", "--out", "fitted.yaml"]
    if kind == "workload-fit":
        return _trace_case(rng, "workload fit", fit)
    if kind == "workload-fit-flag":
        return _flag_case(rng, "workload fit", fit)
    return _out_case(rng, "workload fit", fit, "--out")


# -- issue 32's classes ----------------------------------------------------------------
def _nonregular_case(rng: random.Random, _docs: Any) -> Case:
    """The inventory (or a what-if spec) is a FIFO, a device or a folder."""
    kind = rng.choice(["fifo", "device", "folder"])
    target = {"fifo": "fifo.yaml", "device": "/dev/zero", "folder": "dir.yaml"}[kind]

    def setup(cwd: Path) -> None:
        if kind == "fifo":
            os.mkfifo(cwd / "fifo.yaml")
        elif kind == "folder":
            (cwd / "dir.yaml").mkdir()

    argv = list(PLAN)
    argv[argv.index("--inventory") + 1] = target
    return Case("plan", argv, f"--inventory {target} ({kind})", names=[target], setup=setup)


def _hugeint_case(rng: random.Random, _docs: Any) -> Case:
    """An integer too large for a float in the inventory or the model config."""
    digits = rng.choice([20, 400, 4000])

    def setup(cwd: Path) -> None:
        if where == "small.yaml":
            text = (cwd / "small.yaml").read_text()
            (cwd / "small.yaml").write_text(text.replace("count: 16", "count: 1" + "0" * digits, 1)
                                            if "count: 16" in text else
                                            text.replace("count:", "count: 1" + "0" * digits
                                                         + " #", 1))
        else:
            cfg = json.loads((cwd / "config.json").read_text())
            (cwd / "config.json").write_text(json.dumps(cfg).replace(
                f'"hidden_size": {cfg["hidden_size"]}', '"hidden_size": 1' + "0" * digits))

    where = rng.choice(["small.yaml", "config.json"])
    argv = list(PLAN)
    if where == "config.json":
        argv[argv.index("--model") + 1] = "config.json"
    return Case("plan", argv, f"{where}: an integer of {digits + 1} digits", names=[where],
                setup=setup)


def _contradictory_case(rng: random.Random, _docs: Any) -> Case:
    """A model config whose fields contradict each other."""
    edit = rng.choice(["kv-heads", "kv-divide", "head-dim", "dense-layers"])

    def setup(cwd: Path) -> None:
        cfg = json.loads((cwd / "config.json").read_text())
        if edit == "kv-heads":
            cfg["num_key_value_heads"] = 2 * cfg["num_attention_heads"]
        elif edit == "kv-divide":
            cfg["num_key_value_heads"] = cfg["num_attention_heads"] - 1
        elif edit == "head-dim":
            cfg["head_dim"] = 0
            cfg["hidden_size"] = cfg["num_attention_heads"] // 2
        else:
            cfg["num_experts"], cfg["num_experts_per_tok"] = 8, 2
            cfg["moe_intermediate_size"] = 1024
            cfg["first_k_dense_replace"] = cfg["num_hidden_layers"] + 4
        (cwd / "config.json").write_text(json.dumps(cfg))

    argv = list(PLAN)
    argv[argv.index("--model") + 1] = "config.json"
    return Case("plan", argv, f"config.json: contradictory ({edit})", names=["config.json"],
                setup=setup)


def _crossfield_case(rng: random.Random, _docs: Any) -> Case:
    """A finished run's plan.json edited so that its fields contradict each other."""
    edit = rng.choice(["huge-rate", "gpu-not-listed", "all-idle", "shares-zero",
                       "range-backwards", "model-unknown", "too-many-gpus"])
    command = rng.choice(["report", "simulate", "export"])

    def setup(cwd: Path) -> None:
        path = cwd / "run" / "plan.json"
        plan = json.loads(path.read_text())
        if edit == "huge-rate":
            plan["summary"]["requests_per_s"] = 1e308
        elif edit == "gpu-not-listed":
            listed = {g["type"] for g in plan["request"]["inventory"]["gpus"]}
            plan["islands"][0]["gpu"] = next(g for g in ("B200", "MI300X", "H20")
                                             if g not in listed)
        elif edit == "all-idle":
            for isl in plan["islands"]:
                isl["role"] = "idle"
        elif edit == "shares-zero":
            for isl in plan["islands"]:
                isl["shares"] = [0.0] * len(isl["shares"])
        elif edit == "range-backwards":
            r = plan["ranges"]
            r["start"][1], r["end"][1] = r["end"][1], r["start"][1] - 1
        elif edit == "model-unknown":
            plan["request"]["model"] = "no-such-model"
        else:
            plan["request"]["inventory"]["gpus"][0]["count"] = 1
            for isl in plan["islands"]:
                isl["gpu"] = plan["request"]["inventory"]["gpus"][0]["type"]
        path.write_text(json.dumps(plan))

    argv = {"report": ["report", "run"], "simulate": list(SIMULATE),
            "export": ["export", "run"]}[command]
    return Case(command, argv, f"run/plan.json: {edit}", names=["plan.json"], setup=setup)


def _stale_checkpoint_case(rng: random.Random, docs: Any) -> Case:
    """An earlier run's checkpoint beside --out: a fresh run, a resume with other flags
    or under a search that keeps none -- refused, the file untouched."""
    variant = rng.choice(["fresh", "other-seed", "auto-search"])

    def setup(cwd: Path) -> None:
        doc, kind = docs["checkpoint"]
        inputs.write(cwd / ".again.checkpoint.json", doc, kind)

    argv = [*PLAN[:-1], "again", "--search", "random"]
    if variant == "other-seed":
        argv += ["--resume", "--seed", "7"]
    elif variant == "auto-search":
        argv = [*PLAN[:-1], "again", "--resume"]
    return Case("plan", argv, f".again.checkpoint.json ({variant})",
                names=[".again.checkpoint.json", "--resume"], setup=setup)


def _long_list_case(rng: random.Random, _docs: Any) -> Case:
    """One list of a file a user gives made long (1,000 to 1,000,000 items, as many as
    the file-size cap lets through): refused by its cap, or done in bounded work."""
    n = rng.choice([1_000, 100_000, 1_000_000])
    target = rng.choice(["inventory", "mixture", "spec-budgets", "spec-remove",
                         "spec-workloads", "plan-servers", "plan-islands", "plan-history",
                         "plan-layout-text"])

    def setup(cwd: Path) -> None:
        if target == "inventory":
            inv = dict(INVENTORY, gpus=[INVENTORY["gpus"][0]] * n)
            (cwd / "small.yaml").write_text(json.dumps(inv))  # JSON is YAML, and faster
        elif target == "mixture":
            comp = {"weight": 1, "type": "point", "value": 100}
            (cwd / "workload.yaml").write_text(json.dumps({
                "format_version": 1, "name": "w", "decode": {"mean": 100, "max": 200},
                "input": {"type": "mixture", "components": [comp] * n}}))
        elif target.startswith("spec-"):
            studies = {"spec-budgets": {"budget_sweep": [60] * n},
                       "spec-remove": {"remove": ["H200"] * n},
                       "spec-workloads": {"workloads": ["azure-code-2023"] * n}}[target]
            (cwd / "spec.yaml").write_text(json.dumps(dict(WHATIF_SPEC, studies=studies)))
        else:
            path = cwd / "run" / "plan.json"
            plan = json.loads(path.read_text())
            if target == "plan-servers":
                plan["servers"] = [{"index": k, "gpu": "H200", "gpus": 8, "islands": [0],
                                    "gpus_used": 8, "partial": False} for k in range(n)]
            elif target == "plan-islands":
                plan["islands"] += [dict(plan["islands"][0], role="idle")] * n
            elif target == "plan-history":
                plan["search"]["history"] = [{"index": 0, "best": 1.0}] * n
            else:
                plan["search"]["best_layout"] = f"H200:1*{n}000000000"
            path.write_text(json.dumps(plan))

    if target in ("inventory", "mixture"):
        argv = [*PLAN, "--workload", "workload.yaml"] if target == "mixture" else list(PLAN)
        name = "small.yaml" if target == "inventory" else "workload.yaml"
        return Case("plan", argv, f"{name}: a list of {n:,}", names=[name], setup=setup)
    if target.startswith("spec-"):
        return Case("whatif", list(WHATIF), f"spec.yaml: {target} x {n:,}",
                    names=["spec.yaml"], setup=setup)
    return Case("report", ["report", "run"], f"run/plan.json: {target} x {n:,}",
                names=["plan.json"], setup=setup)


def _alias_bomb_case(rng: random.Random, _docs: Any) -> Case:
    """A YAML file whose aliases expand a few lines into a billion values (or a list that
    holds itself), as the inventory or the what-if spec."""
    cyclic = rng.random() < 0.3
    where = rng.choice(["small.yaml", "spec.yaml"])
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = ("gpus: &x [{type: H200, count: 8}, *x]\n" if cyclic
            else "\n".join(lines) + "\ngpus: *a8\n")

    def setup(cwd: Path) -> None:
        (cwd / where).write_text(text)

    if where == "small.yaml":
        return Case("plan", list(PLAN), f"small.yaml: alias {'cycle' if cyclic else 'bomb'}",
                    names=[where], setup=setup)
    return Case("whatif", list(WHATIF), f"spec.yaml: alias {'cycle' if cyclic else 'bomb'}",
                names=[where], setup=setup)


_ISSUE32: dict[str, Callable[[random.Random, Any], Case]] = {
    "plan-nonregular": _nonregular_case, "plan-hugeint": _hugeint_case,
    "plan-contradictory": _contradictory_case, "report-crossfield": _crossfield_case,
    "plan-stale-checkpoint": _stale_checkpoint_case, "long-list": _long_list_case,
    "alias-bomb": _alias_bomb_case}


def base_docs() -> dict[str, tuple[Any, str]]:
    return inputs._base_docs()


# ------------------------------------------------------------------ running
class Hang(BaseException):
    pass


@contextlib.contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def _quiet():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def run_case(case: Case, fixtures: Path, work: Path, timeout: float) -> Outcome:
    """Run one case in a fresh copy of the fixtures (module docstring's rules)."""
    cwd = Path(tempfile.mkdtemp(dir=work))
    try:
        _copy_fixtures(fixtures, cwd)
        if case.setup is not None:
            case.setup(cwd)
        before = _tree(cwd)
        err = io.StringIO()

        def alarm(signum: int, frame: object) -> None:
            raise Hang

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with _cwd(cwd), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(err):
                status = run(case.argv)
        except Hang:
            return Outcome("hang", f"> {timeout:g} s")
        except BaseException as exc:  # noqa: BLE001 - the point: any escape is a bug
            return Outcome("crash", f"{type(exc).__name__}: {exc}"[:300])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        if status == 0:
            return Outcome("ok")
        if status not in (1, 2):
            return Outcome("exit", f"exit {status}: {lines[-1:]}")
        errors = [ln for ln in lines if ln.startswith("error:")]
        if len(errors) != 1 or "Traceback" in err.getvalue():
            return Outcome("lines", " | ".join(lines)[:300])
        if not any(n in errors[0] or Path(n).name in errors[0] for n in case.names):
            return Outcome("unnamed", errors[0][:300])
        after = _tree(cwd)
        gone = sorted(set(before) - set(after))
        if gone:
            return Outcome("deleted", f"{errors[0][:150]}; deleted {gone[:4]}")
        new = sorted(set(after) - set(before))
        changed = sorted(k for k in set(after) & set(before) if after[k] != before[k])
        if new or changed:
            return Outcome("wrote", f"{errors[0][:150]}; wrote {(new + changed)[:4]}")
        return Outcome("refused" if status == 2 else "unservable")
    finally:
        shutil.rmtree(cwd, ignore_errors=True)


BAD = ("crash", "hang", "wrote", "deleted", "lines", "unnamed", "exit")


def fuzz(cases: int, seed: int, timeout: float = 180.0,
         progress: Callable[[int, int], None] | None = None
         ) -> tuple[Counter, list[str], float]:
    rng = random.Random(seed)
    docs = base_docs()
    counts: Counter = Counter()
    failures: list[str] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = Path(tmp) / "fixtures"
        build_fixtures(fixtures)
        for k in range(cases):
            case = make_case(rng, docs)
            out = run_case(case, fixtures, Path(tmp), timeout)
            counts[(case.command, out.status)] += 1
            if out.status in BAD:
                failures.append(f"[{out.status}] planner {' '.join(case.argv)}  <- {case.what}"
                                f"\n      {out.detail}")
            if progress:
                progress(k + 1, cases)
    return counts, failures, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per case")
    ap.add_argument("--max-gb", type=float, default=12.0, help="address-space cap")
    ap.add_argument("--show", type=int, default=20, help="failures to print")
    args = ap.parse_args()
    cap = int(args.max_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    def progress(k: int, n: int) -> None:
        if k % 50 == 0 or k == n:
            print(f"  {k}/{n} cases", file=sys.stderr, flush=True)

    counts, failures, wall = fuzz(args.cases, args.seed, args.timeout, progress)
    statuses = ["ok", "refused", "unservable", *BAD]
    print(f"{sum(counts.values())} cases in {wall:.0f} s (seed {args.seed}): "
          f"{len(failures)} broke a rule")
    print(f"  {'command':14s}" + "".join(f"{s:>11s}" for s in statuses))
    for command in sorted({c for c, _ in counts}):
        print(f"  {command:14s}" + "".join(f"{counts[(command, s)]:11d}" for s in statuses))
    for line in failures[:args.show]:
        print(" ", line)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
