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
    (["--warmup", "30"], "--warmup '30'"),
    (["--warmup", "-5s"], "--warmup '-5s'"),
    (["--requests", "many"], "'--requests'"),
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


def _plan(run_dir) -> dict:
    return json.loads((run_dir / "plan.json").read_text())


def test_completed_rate_does_not_depend_on_n(plan_dir):
    """The window opens 30 simulated seconds after the first arrival whatever -n is, so
    the completed rate of runs of different lengths agrees within their confidence
    intervals (the old 20-80 % completion span read the fill-up of short runs); the
    progress callback sees requests done and simulated time, ending with all of them."""
    from planner.sim.run import SimSettings, run_plan

    plan = _plan(plan_dir)
    runs, calls = [], []
    # a 4x longer run: its batch-means CI (10 batches, itself +-25 % noisy) must come out
    # narrower -- at 2x the two CIs' draws overlap too often to tell
    for n in (3_000, 12_000):
        run = run_plan(plan, SimSettings(rate="0.8x", requests=n, warmup_s=30.0),
                       progress=lambda *a: calls.append(a))
        runs.append(run)
        m = run.metrics
        assert run.warnings == [] and run.window["steady_state"] is True
        assert m.window_start_s == pytest.approx(30.0 + run.result.requests[0].arrival)
        assert m.throughput_rps == pytest.approx(run.offered_rps, rel=0.06)
        assert 0 < m.throughput_ci95_rps < 0.1 * m.throughput_rps
        assert len(m.throughput_batches_rps) == 10
    a, b = (r.metrics for r in runs)
    assert abs(a.throughput_rps - b.throughput_rps) <= max(a.throughput_ci95_rps,
                                                           b.throughput_ci95_rps)
    assert b.throughput_ci95_rps < a.throughput_ci95_rps * 1.2  # longer: no wider
    times = [t for _, _, t in calls]
    assert calls[-1][1] == 12_000 and calls[-1][0] == 12_000  # every request done
    assert all(x[1] in (3_000, 12_000) for x in calls) and times[-1] > 30.0


def test_simulate_records_the_window_ci_and_a_short_run_warning(run_cli, run_dir):
    # 600 requests at 0.8x of a ~44 req/s plan span ~17 s: less than the 30 s warm-up
    rc, out, err = run_cli("simulate", str(run_dir), "-n", "600")
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "too short for the 30 s warm-up" in warnings[0]
    assert "requests done" not in err  # no progress display when stderr is not a TTY
    rec = json.loads((run_dir / "simulation.json").read_text())["runs"][0]
    assert rec["requests_simulated"] == 600 and rec["window"]["steady_state"] is False
    assert rec["warnings"] == [warnings[0].split(": ", 2)[2]]
    m = rec["metrics"]
    assert {"throughput_ci95_rps", "throughput_batches_rps", "window_start_s",
            "window_end_s"} <= set(m)
    sub = json.loads((run_dir / "simulation" / rec["tag"] / "metrics.json").read_text())
    assert sub["warnings"] == rec["warnings"] and sub["metrics"] == m
    row = next(line for line in out.splitlines() if line.startswith("│ range"))
    assert " ± " in row  # the completed rate with its interval, on the row's one line


def test_trace_shorter_than_n_is_simulated_whole_with_a_warning(run_cli, run_dir):
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    rows += [f"2023-11-16 18:{k // 60:02d}:{k % 60:02d}.000000,{100 + k},{20 + k % 7}"
             for k in range(300)]
    trace = run_dir.parent / "short.csv"
    trace.write_text("\n".join(rows) + "\n")
    rc, _, err = run_cli("simulate", str(run_dir), "--trace", str(trace), "-n", "1000",
                         "--rate", "0.5x", "-q")
    assert rc == 0, err
    lines = err.splitlines()
    short = [x for x in lines if "fewer than -n" in x]
    assert short == ["warning: range: the trace short.csv has 300 requests, fewer than "
                     "-n 1,000: all 300 are simulated"]
    assert all(x.startswith("warning: ") for x in lines)  # -q: nothing else on stderr
    rec = json.loads((run_dir / "simulation.json").read_text())["runs"][0]
    assert rec["requests_simulated"] == 300 and short[0][len("warning: range: "):] in \
        rec["warnings"]


def test_quiet_simulate_prints_only_what_it_wrote(run_cli, run_dir):
    rc, out, err = run_cli("simulate", str(run_dir), "-n", "2000", "-q")
    assert rc == 0, err
    assert "Simulated latency" not in out and out.startswith("wrote ")
    assert "wall" not in err


def test_piped_report_keeps_every_column_whole(run_cli, run_dir):
    """stdout is not a terminal here: tables go out wide, not cut at 80 columns."""
    rc, out, err = run_cli("report", str(run_dir))
    assert rc == 0, err
    for isl in _plan(run_dir)["islands"]:
        if isl["role"] != "idle":
            assert isl["config"] in out
    assert "…" not in out


def test_prefill_lockstep_is_on_in_the_closed_loop_and_off_only_when_asked(
        plan_dir, run_dir, run_cli, monkeypatch):
    """The engines run an MoE model's prefill attention-DP groups in lockstep, so the
    closed loop's simulate_at and ``planner simulate`` do too; --independent-prefill
    (SimSettings.prefill_lockstep False) reaches the engine and tags its run folder, so
    it never overwrites the default run's."""
    from planner.sim import closed_loop
    from planner.sim import run as sim_run
    from planner.sim.run import SimSettings

    seen = []
    real = sim_run.simulate

    def spy(*a, **kw):
        seen.append(kw.get("prefill_lockstep"))
        return real(*a, **kw)

    monkeypatch.setattr(sim_run, "simulate", spy)
    plan = _plan(plan_dir)
    closed_loop.simulate_at(plan, 0.3 * plan["summary"]["requests_per_s"], 0,
                            warmup_s=2.0, measure_s=3.0)
    rc, _, err = run_cli("simulate", str(run_dir), "-n", "300", "-q",
                         "--independent-prefill")
    assert rc == 0, err
    assert seen == [True, False]
    runs = json.loads((run_dir / "simulation.json").read_text())["runs"]
    assert [r["tag"] for r in runs] == [SimSettings(prefill_lockstep=False).tag()]
    assert runs[0]["tag"].endswith("-unlocked")
    assert not SimSettings().tag().endswith("-unlocked")
