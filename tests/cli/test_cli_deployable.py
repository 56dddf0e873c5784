"""``planner plan`` at server granularity from the command line (issue 27)."""

from __future__ import annotations

import json


def test_bad_granularity_is_one_line_and_writes_nothing(run_cli, small_inventory, tmp_path):
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "80",
                         "--island-granularity", "rack", "--out", str(out), "-q")
    assert rc == 2 and "--island-granularity" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_gpus_per_node_beyond_the_domain_names_the_entry(run_cli, tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - {type: H200, count: 16, gpus_per_node: 16, "
                   "price_per_hour: 4.0}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "r"), "-q")
    assert rc == 2 and str(inv) in err and "gpus_per_node" in err and "H200" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_plan_prints_servers_and_the_export_command(run_cli, small_inventory, tmp_path):
    out = tmp_path / "run"
    rc, stdout, err = run_cli("plan", "--inventory", str(small_inventory), "--budget", "80",
                              "--search", "exact", "--ranges", "8", "--no-sim-check",
                              "--no-exact", "--no-homogeneous", "--out", str(out))
    assert rc == 0, err
    assert "server" in stdout and f"planner export {out}" in stdout
    plan = json.loads((out / "plan.json").read_text())
    assert plan["request"]["island_granularity"] == "server" and plan["servers"]
    report = (out / "report.md").read_text()
    assert "Placement (server → islands)" in report


def test_an_slo_no_island_meets_on_the_longest_prompts_says_so(run_cli, tmp_path):
    """Under TensorRT-LLM, whose attention DP is all ranks or none, no 16-GPU island of
    80 GB parts prefills DeepSeek-V3's prompts past ~4,500 tokens in the 450 ms pass a
    0.9 s TTFT gives it -- 0.64 % of requests, more than the miss allowance lets a plan
    serve best-effort: the plan stops before searching, naming the lengths, the pass
    share and the best pass per type (exit 1).  (At the default TTFT only the
    14,050-token prompts miss, 0.005 %, and it plans: tests/plan/test_slo_allowance.py.)"""
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - {type: H100-SXM, count: 16, price_per_hour: 1.56}\n"
                   "  - {type: A100-80G, count: 16, price_per_hour: 0.68}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--ranges", "8", "--ttft", "900",
                         "--out", str(tmp_path / "r"), "-q")
    assert rc == 1 and "cannot be met" in err and "14,050" in err and "H100-SXM" in err
    assert "a prefill pass gets 50% of the TTFT (450 ms of 900 ms)" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_a_named_engine_that_cannot_run_a_gpu_is_a_usage_error(run_cli, tmp_path):
    inv = tmp_path / "amd.yaml"
    inv.write_text("gpus:\n  - {type: MI300X, count: 16, price_per_hour: 3.0}\n"
                   "  - {type: H100-SXM, count: 16, price_per_hour: 2.0}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--model", "llama-3.1-70b",
                         "--engine", "trtllm", "--out", str(tmp_path / "r"), "-q")
    assert rc == 2 and "does not run on AMD GPUs" in err and str(inv) in err
    assert "--engine trtllm" in err and "vllm" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_without_an_engine_a_mixed_fleet_is_priced_with_one_that_runs_everywhere(
        run_cli, tmp_path):
    inv = tmp_path / "mixed.yaml"
    inv.write_text("gpus:\n  - {type: MI300X, count: 8, price_per_hour: 3.0}\n"
                   "  - {type: H100-SXM, count: 8, price_per_hour: 2.0}\n")
    run = tmp_path / "r"
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--model", "llama-3.1-70b",
                         "--no-sim-check", "--no-exact", "--no-homogeneous", "--ranges", "4",
                         "--out", str(run), "-q")
    assert rc == 0, err
    plan = json.loads((run / "plan.json").read_text())
    assert plan["request"]["engine"] == "vllm"
