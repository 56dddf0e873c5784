"""`planner perf`: output, JSON, CSV sweep, and user errors (exit 2, one line)."""

from __future__ import annotations

import csv
import json

import pytest


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
    assert "needs at least" in out and "GiB usable of 80 GiB" in out


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


@pytest.mark.parametrize("kv", ["fp4", "fp16", "fp32"])
def test_a_kv_cache_precision_no_kernel_prices_is_refused_by_name(run_cli, kv):
    """The attention kernels price BF16 and FP8 caches only; another precision used to
    reach a kernel table lookup and end in a KeyError traceback."""
    rc, out, err = run_cli("perf", "--gpus", "8", "--kv-dtype", kv)
    assert rc == 2 and out == ""
    assert err.strip() == f"error: --kv-dtype: unknown kv dtype '{kv}'; known: bf16, fp8"


@pytest.mark.parametrize("argv, line", [
    (["--fp8-attention"],
     "--fp8-attention needs an FP8 KV cache (--kv-dtype fp8); deepseek-v3's is bf16"),
    (["--fp8-attention", "--kv-dtype", "bf16"],
     "--fp8-attention needs an FP8 KV cache (--kv-dtype fp8); deepseek-v3's is bf16"),
    (["--decode-max", "5", "--output", "200"],
     "--decode-max 5 is below --output 200: the KV reserve must hold at least the mean "
     "answer (0: 2x --output)"),
    (["--tp", "4", "--dp", "2"], "--tp 4 x --dp 2 = 8 GPUs; they must multiply to --gpus 16"),
])
def test_flags_that_would_be_ignored_or_contradict_are_refused(run_cli, argv, line):
    """Each of these used to run: FP8 attention without an FP8 cache was silently
    dropped, a KV reserve below the mean answer was taken as given, and tp x dp not
    matching the island came back as a message about divisors."""
    rc, out, err = run_cli("perf", "--gpus", "16", *argv)
    assert rc == 2 and out == "" and err.strip() == f"error: {line}"


def test_a_checkpoint_folder_is_read_through_its_config(run_cli, tmp_path):
    """A Hugging Face checkpoint folder is what users have at hand: its config.json is
    read and the model is named after the folder; a folder without one is refused by
    name (it used to be reported as not existing)."""
    from importlib import resources

    ckpt = tmp_path / "My-Llama"
    ckpt.mkdir()
    src = resources.files("perfmodel").joinpath("data/models/llama-3.1-8b.json")
    (ckpt / "config.json").write_text(src.read_text())
    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "1", "--model", str(ckpt),
                           "--json")
    assert rc == 0, err
    assert json.loads(out)["model"] == "My-Llama"
    (tmp_path / "empty").mkdir()
    rc, _, err = run_cli("perf", "--model", str(tmp_path / "empty"))
    assert rc == 2 and err.strip() == (f"error: --model: model config '{tmp_path / 'empty'}' "
                                       "is a folder with no config.json")


def test_perf_throughput_and_tpot_come_from_one_step_time(run_cli):
    """The decode row's throughput is its batch over its TPOT (issue 14: once 2x apart)."""
    rc, out, err = run_cli("perf", "--gpu", "H200", "--gpus", "16", "--json")
    assert rc == 0, err
    data = json.loads(out)
    decode = data["phases"][1]
    cfg = decode["config"]
    dp = int(cfg.split("-")[1][2:])
    implied = decode["batch_per_group"] * dp / (decode["tpot_ms"] * 1e-3)
    assert decode["tokens_per_s_island"] == __import__("pytest").approx(implied, rel=0.03)
    step = data["breakdown"]["decode_step"]
    layers = step["layers"]
    per_layer = sum(v for k, v in step["per_layer_seconds"].items())
    once = sum(step["per_step_seconds"].values())
    # the breakdown adds up to (at least) the step: every op is named
    assert per_layer * (layers["dense"] + layers["moe"]) / 2 < step["step_seconds"]
    assert once < step["step_seconds"] and data["engine"] == "trtllm"


def test_perf_pinned_config_engine_and_modes(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "2", "--model",
                           "llama-3.1-70b", "--weight-dtype", "fp8", "--tp", "2", "--dp", "1",
                           "--ep", "1", "--engine", "vllm", "--mode", "agg", "--json")
    assert rc == 0, err
    data = json.loads(out)
    agg = data["aggregated"]
    assert data["engine"] == "vllm" and agg["config"] == "tp2-dp1-ep1"
    assert agg["ttft_ms"] > agg["tpot_ms"] > 0 and agg["batch_per_group"] >= 1
    assert agg["output_tokens_per_s_island"] == agg["requests_per_s"] * 200
    rc, out, _ = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "2", "--model",
                         "llama-3.1-70b", "--tp", "3")
    assert rc == 2 and "tp" in out + _


def test_perf_mtp_raises_tokens_per_step(run_cli):
    base = json.loads(run_cli("perf", "--gpu", "H200", "--gpus", "16", "--tpot", "50",
                              "--json")[1])
    mtp = json.loads(run_cli("perf", "--gpu", "H200", "--gpus", "16", "--tpot", "50",
                             "--mtp-acceptance", "0.8", "--json")[1])
    assert mtp["breakdown"]["decode_step"]["tokens_per_step"] == 1.8
    assert mtp["phases"][1]["tokens_per_s_island"] > base["phases"][1]["tokens_per_s_island"]


def test_perf_names_transferred_kernels_and_rejects_unknown_engine(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "H20", "--gpus", "16", "--model", "deepseek-r1")
    assert rc == 0, err
    assert "transferred from" in out
    rc, out, err = run_cli("perf", "--gpu", "H200", "--gpus", "8", "--engine", "tgi")
    assert rc == 2 and "unknown engine" in err


def test_perf_json_says_where_the_kernel_timings_come_from(run_cli):
    import json

    rc, out, _ = run_cli("perf", "--gpu", "MI300X", "--gpus", "8", "--model", "llama-3.1-8b",
                         "--engine", "vllm", "--json")
    assert rc == 0
    p = json.loads(out)["kernel_provenance"]
    # issue 29: an AMD part is priced from AMD's priors, not another vendor's kernels
    assert p["measured"] is False and p["cross_vendor"] is False
    assert p["vendor"] == "amd" and p["compute_vendor"] is None
    assert p["prior"] == "priors_amd.yaml" and p["rule"] == "vendor prior"
