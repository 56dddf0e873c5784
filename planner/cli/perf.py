"""`planner perf`: the analytic model's answer for one island and one request shape."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from perfmodel import (
    DEFAULT_CALIBRATION,
    SLO,
    WorkloadShape,
    benchmark_island,
    get_gpu,
    get_model,
)
from planner.errors import PlannerError


def _positive(value: float | None, flag: str) -> None:
    if value is not None and not value > 0:
        raise PlannerError(f"{flag} must be > 0, got {value}")


def _phase_row(table, phase: str, s: int, tokens: float, gpus: int) -> dict:
    t = getattr(table, phase)
    rps = float(t.rps[s])
    row = {"phase": phase, "config": t.config.label() if t.config else None,
           "requests_per_s": rps, "tokens_per_s_island": rps * tokens,
           "tokens_per_s_gpu": rps * tokens / gpus,
           "batch_per_group": float(t.batch[s]) if phase == "decode" else 1.0}
    row["ttft_ms" if phase == "prefill" else "tpot_ms"] = float(t.latency_ms[s])
    if not t.config:
        row["reason"] = t.reason
    return row


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def perf(
    gpu: str = typer.Option("H200", help="GPU type (catalog name)."),
    gpus: int = typer.Option(16, help="GPUs in the island."),
    model: str = typer.Option("deepseek-v3", help="Built-in model name or config.json path."),
    input_len: int = typer.Option(2000, "--input", help="Input (prompt) tokens."),
    output_len: int = typer.Option(200, "--output", help="Mean output (decode) tokens."),
    decode_max: int = typer.Option(0, help="Max output tokens to reserve KV for (0: 2x --output)."),
    hit_rate: float = typer.Option(0.0, help="Prefix/KV-cache hit rate of the input, 0..1."),
    ttft_ms: float = typer.Option(None, "--ttft", help="TTFT ceiling (ms)."),
    tpot_ms: float = typer.Option(None, "--tpot", help="TPOT ceiling (ms)."),
    weight_dtype: str = typer.Option(None, help="Override weight dtype (fp4/fp8/bf16)."),
    kv_dtype: str = typer.Option(None, help="Override KV-cache dtype (fp8/bf16)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    csv_path: Path = typer.Option(None, "--csv", help="Write a sweep over input lengths here."),
    max_input: int = typer.Option(8192, help="Longest input of the --csv sweep."),
    peak: bool = typer.Option(False, help="Roofline peak (production utilisation 1)."),
) -> None:
    """Best prefill and decode configurations of one island, with their throughput."""
    if gpus < 1:
        raise PlannerError(f"--gpus must be >= 1, got {gpus}")
    if input_len < 1 or output_len < 1:
        raise PlannerError("--input and --output must be >= 1")
    if not 0.0 <= hit_rate < 1.0:
        raise PlannerError(f"--hit-rate must be in [0, 1), got {hit_rate}")
    for value, flag in ((ttft_ms, "--ttft"), (tpot_ms, "--tpot")):
        _positive(value, flag)
    spec = get_model(model).with_dtypes(weight_dtype, kv_dtype)
    gpu_spec = get_gpu(gpu)
    calib = replace(DEFAULT_CALIBRATION, production_utilisation=1.0) if peak else (
        DEFAULT_CALIBRATION)
    d_max = decode_max or 2 * output_len
    slo = SLO(ttft_ms, tpot_ms)

    length = max(input_len, max_input if csv_path else 0)
    pmf = np.zeros(length + 1)
    pmf[input_len] = 1.0
    table = benchmark_island(gpu_spec, gpus, spec, WorkloadShape(pmf, output_len, d_max,
                                                                 hit_rate), slo, calib)
    rows = [_phase_row(table, "prefill", input_len, input_len, gpus),
            _phase_row(table, "decode", input_len, output_len, gpus)]
    if csv_path:
        _write_sweep(csv_path, gpu_spec, gpus, spec, max_input, output_len, d_max, hit_rate,
                     slo, calib)
    if as_json:
        print(json.dumps({"gpu": gpu_spec.name, "gpus": gpus, "model": spec.name,
                          "input": input_len, "output": output_len, "hit_rate": hit_rate,
                          "phases": rows}, indent=2))
        if not any(row["config"] for row in rows):
            raise typer.Exit(1)
        return
    console = Console(width=None if Console().is_terminal else 110)
    out = Table(title=f"{spec.name} on {gpus} x {gpu_spec.name}: input {input_len}, "
                      f"output {output_len} tokens")
    for col in ("phase", "config", "req/s", "tok/s island", "tok/s/GPU", "batch", "latency"):
        out.add_column(col, justify="right" if col not in ("phase", "config") else "left")
    for row in rows:
        latency = (f"TTFT {row['ttft_ms']:.1f} ms" if row["phase"] == "prefill"
                   else f"TPOT {row['tpot_ms']:.1f} ms")
        out.add_row(row["phase"], row["config"] or "does not fit",
                    f"{row['requests_per_s']:.2f}", f"{row['tokens_per_s_island']:,.0f}",
                    f"{row['tokens_per_s_gpu']:,.0f}", f"{row['batch_per_group']:.0f}",
                    latency if row["config"] else "-")
    console.print(out)
    for row in rows:
        if not row["config"]:
            console.print(f"[yellow]{row['phase']}: {row['reason']}[/yellow]", soft_wrap=True)
    if csv_path:
        console.print(f"sweep written to {csv_path}")
    if not any(row["config"] for row in rows):
        raise typer.Exit(1)


def _write_sweep(path, gpu, gpus, spec, max_input, output_len, d_max, hit_rate, slo, calib):
    """Per-length table for configurations chosen under a uniform length distribution."""
    pmf = np.ones(max_input + 1)
    pmf[0] = 0.0
    table = benchmark_island(gpu, gpus, spec, WorkloadShape(pmf / pmf.sum(), output_len, d_max,
                                                            hit_rate), slo, calib)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["input", "prefill_config", "prefill_rps", "ttft_ms", "decode_config",
                "decode_rps", "decode_batch", "tpot_ms"])
    p, d = table.prefill, table.decode
    for s in range(1, max_input + 1):
        w.writerow([s, p.config.label() if p.config else "", f"{p.rps[s]:.6g}",
                    f"{p.latency_ms[s]:.6g}", d.config.label() if d.config else "",
                    f"{d.rps[s]:.6g}", f"{d.batch[s]:.0f}", f"{d.latency_ms[s]:.6g}"])
    _write_atomic(Path(path), buf.getvalue())
