"""`planner whatif`: bad input is one line naming the file (or flag) and the field, exit
status 2, nothing written; a good spec writes the whole folder at once."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from test_whatif_fixtures import write_spec

from planner.whatif import Flags, load_spec
from planner.whatif.spec import parse_budgets
from planner.workload.fields import Loc

GOOD = {"budget_sweep": [32, 64], "marginal": 16}


def bad_spec(tmp_path, studies=None, **top):
    return write_spec(tmp_path, studies if studies is not None else dict(GOOD), **top)


CASES = [
    # (studies, top-level fields, text the message must contain)
    ({"budget_sweep": [32, -5]}, {}, "field 'studies.budget_sweep[1]'"),
    ({"budget_sweep": "lots"}, {}, "field 'studies.budget_sweep'"),
    ({"prices": {"H100": ["0.8x"]}}, {}, "field 'studies.prices.H100'"),
    ({"prices": {"H200": ["0.8x", "cheap"]}}, {}, "field 'studies.prices.H200[1]'"),
    ({"add": [{"type": "B200", "price_per_hour": 6}]}, {}, "field 'studies.add[0].count'"),
    ({"add": [{"type": "NoSuchGPU", "count": 8, "price_per_hour": 1}]}, {},
     "field 'studies.add[0].type'"),
    ({"add": [{"type": "H20", "count": 8, "price_per_hour": 1}]}, {},
     "field 'studies.add[0]'"),
    ({"remove": ["H800"]}, {}, "field 'studies.remove[0]'"),
    ({"workloads": ["no-such-workload"]}, {}, "field 'studies.workloads[0]'"),
    ({"workloads": [{"mix": ["azure-conv-2023", "azure-code-2023"], "share": 1.5}]}, {},
     "field 'studies.workloads[0].share'"),
    ({"equal_cost": "yes"}, {}, "field 'studies.equal_cost'"),
    ({"marginal": 0}, {}, "field 'studies.marginal'"),
    ({"margnal": 10}, {}, "field 'studies'"),
    ({"marginal": 16, "marginal_beyond_inventory": "yes"}, {},
     "field 'studies.marginal_beyond_inventory'"),
    ({"budget_sweep": [32], "marginal_beyond_inventory": True}, {},
     "field 'studies.marginal_beyond_inventory'"),
    ({"marginal": 16, "marginal_beyond_inventory": True}, {"availability": "unlimited"},
     "field 'studies.marginal_beyond_inventory'"),
    (None, {"availability": "infinite"}, "field 'availability'"),
    (None, {"budgte": 10}, "budgte"),
    (None, {"ranges": 2.5}, "field 'ranges'"),
    (None, {"model": "no-such-model"}, "field 'model'"),
    (None, {"solver": {"max_island": 0}}, "field 'solver.max_island'"),
    ({}, {}, "no study requested"),
]


@pytest.mark.parametrize("studies,top,needle", CASES)
def test_bad_spec_field_one_line_exit_2_nothing_written(tmp_path, run_cli, studies, top,
                                                          needle):
    spec = bad_spec(tmp_path, studies, **top)
    out = tmp_path / "out"
    rc, stdout, stderr = run_cli("whatif", str(spec), "--out", str(out), "-q")
    assert rc == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert str(spec) in lines[0] and needle in lines[0], lines[0]
    assert "Traceback" not in stderr
    assert not out.exists()
    assert not list(tmp_path.glob(".out.tmp-*"))


@pytest.mark.parametrize("argv,needle", [
    (["--price", "H200=abc"], "--price H200"),
    (["--price", "H200"], "--price"),
    (["--add", "B200:many:6"], "--add"),
    (["--remove", "H800"], "--remove"),
    (["--budget-sweep", "128,x"], "--budget-sweep"),
    (["--availability", "maybe"], "--availability"),
    (["--workloads", "nope-workload"], "--workloads"),
    (["--marginal", "-3"], "--marginal"),
])
def test_bad_flag_one_line_exit_2(tmp_path, run_cli, argv, needle):
    spec = bad_spec(tmp_path)
    out = tmp_path / "out"
    rc, _, stderr = run_cli("whatif", str(spec), *argv, "--out", str(out), "-q")
    assert rc == 2
    assert len(stderr.strip().splitlines()) == 1 and needle in stderr, stderr
    assert not out.exists()


def test_yaml_syntax_error_and_missing_file(tmp_path, run_cli):
    spec = tmp_path / "broken.yaml"
    spec.write_text("studies: {budget_sweep: [1, 2\n")
    rc, _, stderr = run_cli("whatif", str(spec), "-q", "--out", str(tmp_path / "o"))
    assert rc == 2 and str(spec) in stderr and "YAML" in stderr
    rc, _, stderr = run_cli("whatif", str(tmp_path / "nope.yaml"), "-q")
    assert rc == 2 and "nope.yaml" in stderr and len(stderr.strip().splitlines()) == 1


def test_flags_override_the_file_and_parse(tmp_path):
    spec = load_spec(bad_spec(tmp_path), Flags(budget_sweep="16..128", price=[
        "H200=0.5x,4.4"], remove=["H20"], add=["H800:8:2.5"], marginal=8, ranges=5))
    assert spec.budget_sweep == (16, 32, 64, 128)
    assert spec.prices[0].prices == (2.0, 4.4)
    assert spec.prices[0].factors == pytest.approx((0.5, 1.1))
    assert spec.remove == ("H20",) and spec.add[0].name == "H800"
    assert spec.add[0].count == 8 and spec.add[0].price_per_hour == 2.5
    assert spec.marginal == 8 and spec.ranges == 5
    assert spec.base_budget == pytest.approx(16 * 4 + 32 * 1)
    assert parse_budgets("100..300:100", Loc("x")) == (100, 200, 300)


def test_good_spec_writes_the_whole_folder(tmp_path, run_cli):
    spec = write_spec(tmp_path, {"budget_sweep": [32, 64], "equal_cost": True,
                                 "prices": {"H20": ["0.5x"]}, "marginal": 16},
                      ranges=4, budget=48)
    out = tmp_path / "study"
    rc, stdout, stderr = run_cli("whatif", str(spec), "--out", str(out))
    assert rc == 0, stderr
    names = {p.name for p in out.iterdir()}
    assert {"whatif.csv", "whatif.json", "whatif.md", "whatif.html",
            "throughput_vs_budget.png", "cost_per_token_vs_budget.png", "pareto.png",
            "prices.png"} <= names
    assert "whatif.html" in stdout  # the page to open
    assert "scenario 1 of" not in stderr  # stderr is not a terminal: no progress display
    data = json.loads((out / "whatif.json").read_text())
    with open(out / "whatif.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(data["scenarios"])
    # base + 2 budgets x 3 options + equal cost x 3 + 1 price + 3 marginal options
    assert [r["study"] for r in table].count("budget") == 6
    assert {r["study"] for r in table} == {"base", "budget", "equal_cost", "price",
                                           "marginal"}
    assert data["marginal"]["answer"] in (out / "whatif.md").read_text()
    assert data["marginal"]["answer"].split(":")[0] in " ".join(stdout.split())
    assert "4 length ranges" in " ".join(stderr.split())
    front = {int(k) for k in data["pareto"]}
    assert front and all(table[k]["pareto"] == "True" for k in front)
    for k, r in enumerate(table):
        assert (r["pareto"] == "True") == (k in front)
    assert yaml.safe_load(spec.read_text())["ranges"] == data["spec"]["ranges"] == 4
    # availability: inventory counts -- no marginal option offers more than they list
    counts = {e["type"]: e["count"] for e in data["spec"]["inventory"]["gpus"]}
    marginal = [s for s in data["scenarios"] if s["study"] == "marginal"]
    assert marginal and all(t["available"] <= counts[t["type"]]
                            for s in marginal for t in s["supply"])
    assert data["marginal"]["excluded_beyond_inventory"] == ["4 more H200", "16 more H20"]


def _shown(terminal: bool, quiet: bool) -> str:
    import io

    from rich.console import Console

    from planner.cli.whatif import scenario_progress

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=terminal, width=120)
    progress, step = scenario_progress(console, quiet)
    with progress:
        step(1, 3, "base 48 $/h")
        step(2, 3, "budget 32 $/h, H200 only")
    return buf.getvalue()


def test_progress_names_each_scenario_on_a_terminal_only():
    shown = _shown(terminal=True, quiet=False)
    assert "scenario 1 of 3 done: base 48 $/h" in shown
    assert "scenario 2 of 3 done: budget 32 $/h, H200 only" in shown
    assert _shown(terminal=False, quiet=False) == ""  # piped or redirected: quiet
    assert _shown(terminal=True, quiet=True) == ""
