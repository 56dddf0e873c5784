"""`planner simulate RUN_DIR` end to end: files, report section, determinism, bad input."""

from __future__ import annotations

import json
import shutil

import pytest


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory, small_inventory):
    from planner.cli.main import run

    out = tmp_path_factory.mktemp("simcli") / "run"
    rc = run(["plan", "--inventory", str(small_inventory), "--budget", "80", "--search", "exact",
              "--ranges", "8", "--out", str(out), "-q", "--no-homogeneous", "--no-exact"])
    assert rc == 0
    return out


@pytest.fixture
def run_dir(plan_dir, tmp_path):
    d = tmp_path / "run"
    shutil.copytree(plan_dir, d)
    return d


@pytest.mark.slow
def test_simulate_writes_metrics_plots_and_report(run_cli, run_dir):
    rc, out, err = run_cli("simulate", str(run_dir), "--router", "range,jsq", "-n", "1500",
                           "--rate", "0.5x")
    assert rc == 0, err
    index = json.loads((run_dir / "simulation.json").read_text())["runs"]
    assert [r["settings"]["router"] for r in index] == ["jsq", "range"]
    plan = json.loads((run_dir / "plan.json").read_text())
    cap = plan["summary"]["requests_per_s"]
    for rec in index:
        m = rec["metrics"]
        assert rec["capacity_rps"] == pytest.approx(cap)
        assert rec["offered_rps"] == pytest.approx(0.5 * cap)
        assert m["completed"] == m["measured"] > 0 and m["unfinished"] == 0
        assert 0 < m["ttft_mean_s"] <= m["ttft_p99_s"] and m["e2e_mean_s"] > m["ttft_mean_s"]
        assert len(rec["quantiles"]["e2e"]) == 101
        sub = run_dir / "simulation" / rec["tag"]
        rows = (sub / "requests.csv").read_text().strip().splitlines()
        assert len(rows) == 1 + 1500
        for png in ("latency_cdf.png", "utilisation.png", "kv_tiers.png"):
            assert (sub / png).stat().st_size > 1000
    md = (run_dir / "report.md").read_text()
    html = (run_dir / "report.html").read_text()
    assert "## Simulated latency" in md and "sim_latency.png" in md
    assert 'id="simulation"' in html and html.count("data:image/png;base64") >= 6
    assert (run_dir / "sim_latency.png").stat().st_size > 1000
    assert "Simulated latency" in out and "jsq" in out


@pytest.mark.slow
def test_report_rerender_keeps_simulation_and_is_stable(run_cli, run_dir):
    rc, _, err = run_cli("simulate", str(run_dir), "-n", "800")
    assert rc == 0, err
    before = (run_dir / "report.html").read_bytes()
    rc, _, err = run_cli("report", str(run_dir), "-q")
    assert rc == 0, err
    assert (run_dir / "report.html").read_bytes() == before


@pytest.mark.slow
def test_same_seed_same_latencies(run_cli, run_dir, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    for d in (run_dir, other):
        rc, _, err = run_cli("simulate", str(d), "-n", "800", "--seed", "3")
        assert rc == 0, err
    a, b = (json.loads((d / "simulation.json").read_text())["runs"][0] for d in (run_dir, other))
    assert a["quantiles"] == b["quantiles"]
    keys = ("ttft_mean_s", "tpot_p99_s", "e2e_p95_s", "completed", "slo_attainment")
    assert [a["metrics"][k] for k in keys] == [b["metrics"][k] for k in keys]
    assert (run_dir / "simulation" / "range-0.8x-s3" / "requests.csv").read_text() == (
        other / "simulation" / "range-0.8x-s3" / "requests.csv").read_text()


@pytest.mark.slow
def test_rerun_replaces_same_tag(run_cli, run_dir):
    for _ in range(2):
        rc, _, err = run_cli("simulate", str(run_dir), "-n", "500")
        assert rc == 0, err
    runs = json.loads((run_dir / "simulation.json").read_text())["runs"]
    assert [r["tag"] for r in runs] == ["range-0.8x-s0"]


@pytest.mark.parametrize("args, message", [
    (["--router", "teleport"], "unknown router 'teleport'"),
    (["--rate", "fast"], "rate 'fast'"),
    (["--rate", "-2x"], "rate '-2x'"),
    (["--requests", "0"], "--requests must be >= 1"),
    (["--arrivals", "bursty"], "--arrivals must be one of"),
    (["--workload", "no-such-workload"], "no-such-workload"),
])
def test_bad_input_one_line_nothing_written(run_cli, run_dir, args, message):
    rc, _, err = run_cli("simulate", str(run_dir), "-n", "200", *args)
    assert rc == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (run_dir / "simulation.json").exists()
    assert not (run_dir / "simulation").exists()


def test_missing_run_folder(run_cli, tmp_path):
    rc, _, err = run_cli("simulate", str(tmp_path / "nowhere"))
    assert rc == 2 and "plan.json" in err and "Traceback" not in err


@pytest.mark.slow
def test_pipeline_plan_simulates_with_jffc_and_refuses_kv_routers(run_cli, tmp_path,
                                                                  small_inventory):
    """A seed-001 plan runs as chains: the default router becomes JFFC (named so in the
    terminal and the run folder), and a KV-placement router is a one-line error."""
    out = tmp_path / "pipe"
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "80", "--inner",
                         "seed001", "--iterations", "2", "--batch-size", "1", "--ranges", "8",
                         "--out", str(out), "-q", "--no-homogeneous", "--no-exact")
    assert rc == 0, err
    rc, term, err = run_cli("simulate", str(out), "-n", "600", "--rate", "0.5x")
    assert rc == 0, err
    assert "jffc" in term and "jffc" in err
    runs = json.loads((out / "simulation.json").read_text())["runs"]
    assert [r["tag"] for r in runs] == ["jffc-0.5x-s0"]
    assert runs[0]["metrics"]["completed"] > 0
    rc, _, err = run_cli("simulate", str(out), "-n", "200", "--router", "netkv")
    assert rc == 2 and "pipeline plan" in err and err.count("\n") == 1
