"""Issue 29, item 2 at the command line: `planner perf --json` names the source and rule
of every op's kernel timings, `planner perf --list-gpus` marks each catalog GPU, an AMD
GPU gets an engine that runs on it, and TensorRT-LLM on one is a one-line usage error."""

from __future__ import annotations

import json
import subprocess
import sys


def _perf_json(run_cli, *args):
    rc, out, err = run_cli("perf", *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def _perf_json_fresh(*args):
    """``planner perf --json`` in a process of its own, as a user runs it: ``used``
    names the ops this run resolved, and an in-process run would also count what
    earlier tests of the same worker resolved on that GPU (the kernel sets are cached
    per process)."""
    code = ("import sys; from planner.cli.main import run; "
            "sys.exit(run(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "perf", *args, "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_perf_json_names_the_source_and_rule_of_every_op(run_cli):
    amd = _perf_json_fresh("--gpu", "MI300X", "--gpus", "8", "--model", "llama-3.1-70b",
                           "--mode", "agg")
    ops = amd["kernel_ops"]
    families = {k.split(":")[0] for k in ops}
    assert families >= {"gemm", "moe", "context_attention", "decode_attention",
                        "mla_context", "mla_decode", "allreduce", "alltoall",
                        "moe_imbalance"}
    for key, info in ops.items():
        if key == "moe_imbalance":
            assert info["rule"] == "vendor-neutral transfer"
            continue
        assert info == {**info, "source": "AMD priors (priors_amd.yaml)",
                        "rule": "vendor prior"}, key
    assert ops["gemm:bf16"]["used"] and not ops["moe:bf16"]["used"]
    assert amd["kernel_provenance"]["rule"] == "vendor prior"

    nv = _perf_json(run_cli, "--gpu", "H100-SXM", "--gpus", "8", "--model",
                    "llama-3.1-70b", "--mode", "agg")
    assert nv["engine"] == "trtllm"
    assert nv["kernel_ops"]["gemm:bf16"] == {"source": "measured H100-SXM",
                                             "rule": "measured", "engine": "trtllm",
                                             "used": True}

    h20 = _perf_json(run_cli, "--gpu", "H20", "--gpus", "8", "--model", "llama-3.1-8b",
                     "--mode", "agg")
    assert h20["kernel_ops"]["gemm:bf16"]["source"] == "H200 (same vendor, hopper)"
    assert h20["kernel_ops"]["gemm:bf16"]["rule"] == "transfer"


def test_the_catalog_marks_each_gpu_measured_transferred_or_vendor_prior(run_cli):
    rc, out, err = run_cli("perf", "--list-gpus", "--json")
    assert rc == 0, err
    rows = {r["gpu"]: r for r in json.loads(out)}
    assert rows["H100-SXM"]["kernels"] == "measured"
    assert rows["H20"]["kernels"] == "transferred from H200"
    for amd in ("MI300X", "MI325X"):
        assert rows[amd]["kernels"] == "vendor prior (priors_amd.yaml)"
        assert rows[amd]["default_engine"] == "vllm" and "trtllm" not in rows[amd]["engines"]
    assert not any(r["rule"] == "cross-vendor transfer" for r in rows.values())
    rc, out, _ = run_cli("perf", "--list-gpus")  # the table (cells wrap in narrow terminals)
    assert rc == 0 and "vendor prior" in out and "transferred" in out and "MI300X" in out


def test_trtllm_on_an_amd_gpu_is_one_line_exit_2_and_the_default_engine_runs_on_it(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "MI300X", "--gpus", "8", "--model",
                           "llama-3.1-70b", "--mode", "agg", "--engine", "trtllm")
    assert rc == 2 and not out
    assert len(err.strip().splitlines()) == 1
    assert "--engine trtllm" in err and "does not run on AMD GPUs" in err
    assert "use --engine vllm or sglang" in err
    # no --engine: the vendor's engine (vLLM on AMD), not TensorRT-LLM
    doc = _perf_json(run_cli, "--gpu", "MI300X", "--gpus", "8", "--model", "llama-3.1-8b")
    assert doc["engine"] == "vllm"
