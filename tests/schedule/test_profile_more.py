"""`planner workload profile` from a trace, and drift (--scenarios) by minimax regret."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_profile_cli import ARGS, INVENTORY, PROFILE

from planner.cli.main import run
from planner.workload.profile_io import load_profile


def trace(path, seconds, rng):
    base = np.datetime64("2024-05-13T00:00:00")
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for s in seconds:
        t = base + np.timedelta64(int(s * 1e6), "us")
        lines.append(f"{str(t).replace('T', ' ')},{rng.integers(100, 3000)},"
                     f"{rng.integers(5, 400)}")
    path.write_text("\n".join(lines) + "\n")


def test_workload_profile_from_two_traces(tmp_path, capsys):
    rng = np.random.default_rng(0)
    trace(tmp_path / "a.csv", np.sort(rng.uniform(0, 3600, 1800)), rng)
    trace(tmp_path / "b.csv", np.sort(rng.uniform(0, 3600, 600)), rng)
    out = tmp_path / "p.yaml"
    rc = run(["workload", "profile", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"),
              "--workloads", "azure-conv-2023,azure-code-2023", "--streams", "chat,code",
              "--fold", "none", "--slot-minutes", "10", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    p = load_profile(out)
    assert len(p.slots) == 5 and p.streams == ("chat", "code")  # 5 whole 10-min slots
    assert p.rates.mean() == pytest.approx(2400 / 3600, rel=0.05)
    code = np.mean([s.mix["code"] for s in p.slots])
    assert code == pytest.approx(0.25, abs=0.05)
    # a one-hour trace folded by week leaves holes: refused, nothing written
    bad = tmp_path / "w.yaml"
    rc = run(["workload", "profile", str(tmp_path / "a.csv"), "--out", str(bad)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "168-h week" in err and len(err.splitlines()) == 1
    assert not bad.exists()


def test_scenarios_keep_the_smallest_worst_regret(tmp_path, capsys):
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    (tmp_path / "a.yaml").write_text(PROFILE)
    flat = PROFILE.replace("six-hours", "flat").replace("rate: 4}", "rate: 25}") \
        .replace("rate: 6}", "rate: 25}").replace("rate: 10}", "rate: 25}")
    (tmp_path / "b.yaml").write_text(flat)
    out = tmp_path / "o"
    rc = run(["plan", "--profile", str(tmp_path / "a.yaml"), "--scenarios",
              str(tmp_path / "b.yaml"), "--inventory", str(tmp_path / "inv.yaml"),
              "--out", str(out), "--no-sim-check", *ARGS])
    assert rc == 0, capsys.readouterr().err
    d = json.loads((out / "schedule.json").read_text())
    names = [s["name"] for s in d["scenarios"]]
    assert names == ["six-hours", "flat"]
    cands = d["procurement"]["candidates"]
    kept = next(c for c in cands if c["label"] == d["procurement"]["kept"])
    finite = [c["worst_regret"] for c in cands if c["worst_regret"] is not None]
    assert kept["worst_regret"] == pytest.approx(min(finite))
    assert max(s["regret"] for s in d["scenarios"]) == pytest.approx(kept["worst_regret"])
    assert all(s["regret"] >= -1e-6 for s in d["scenarios"])
    assert "## Scenarios (drift)" in (out / "report.md").read_text()
    rc = run(["plan", "--profile", str(tmp_path / "a.yaml"), "--scenarios", ",".join(
        [str(tmp_path / "b.yaml")] * 9), "--inventory", str(tmp_path / "inv.yaml"),
        "--out", str(tmp_path / "o2"), *ARGS])
    assert rc == 2 and "--scenarios" in capsys.readouterr().err


def test_a_large_inventory_is_tabulated_on_the_size_lattice(tmp_path, capsys):
    """Hundreds of thousands of GPUs per type and tier: the island sizes thin out
    geometrically (planner.outer.columns.size_lattice), so the exact path applies."""
    (tmp_path / "inv.yaml").write_text("""
gpus:
  - {type: H100-SXM, count: 200000, price_per_hour: 4.5,
     tiers: {reserved: 2.7, on_demand_max: 200000, spot: 1.0, spot_max: 200000}}
  - {type: A100-80G, count: 200000, price_per_hour: 3.5}
""")
    (tmp_path / "p.yaml").write_text(PROFILE)
    rc = run(["plan", "--profile", str(tmp_path / "p.yaml"), "--inventory",
              str(tmp_path / "inv.yaml"), "--out", str(tmp_path / "o"), *ARGS])
    assert rc == 0, capsys.readouterr().err
    d = json.loads((tmp_path / "o" / "schedule.json").read_text())
    assert d["summary"]["lowest_attainment"] >= 0.995
