"""`planner perf`: output, JSON, CSV sweep, and user errors (exit 2, one line)."""

from __future__ import annotations

import csv
import json


def test_perf_table(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "H200", "--gpus", "16", "--model", "deepseek-v3",
                           "--input", "2000", "--output", "200")
    assert rc == 0, err
    assert "prefill" in out and "decode" in out and "TTFT" in out and "TPOT" in out


def test_perf_json(run_cli):
    rc, out, _ = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "4", "--model",
                         "llama-3.1-70b", "--json")
    assert rc == 0
    data = json.loads(out)
    prefill, decode = data["phases"]
    assert prefill["requests_per_s"] > 0 and decode["requests_per_s"] > 0
    assert decode["tokens_per_s_island"] == decode["requests_per_s"] * 200
    assert prefill["tokens_per_s_gpu"] * 4 == prefill["tokens_per_s_island"]


def test_perf_csv_sweep(run_cli, tmp_path):
    path = tmp_path / "sweep.csv"
    rc, _, err = run_cli("perf", "--gpu", "H200", "--gpus", "8", "--model", "qwen3-32b",
                         "--csv", str(path), "--max-input", "1024")
    assert rc == 0, err
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 1024 and rows[0]["input"] == "1"
    assert float(rows[-1]["prefill_rps"]) < float(rows[0]["prefill_rps"])


def test_perf_model_does_not_fit(run_cli):
    rc, out, _ = run_cli("perf", "--gpu", "H800", "--gpus", "8", "--model", "deepseek-v3")
    assert rc == 1
    assert "needs at least" in out and "GB usable" in out


def test_perf_usage_errors(run_cli):
    rc, _, err = run_cli("perf", "--gpu", "H9000")
    assert rc == 2 and "known GPUs" in err and "Traceback" not in err
    rc, _, err = run_cli("perf", "--gpus", "0")
    assert rc == 2 and "--gpus must be >= 1" in err
    rc, _, err = run_cli("perf", "--model", "nope")
    assert rc == 2 and "known models" in err
    rc, _, err = run_cli("perf", "--hit-rate", "1.5")
    assert rc == 2 and "--hit-rate" in err
    rc, _, err = run_cli("perf", "--gpus", "many")
    assert rc == 2
