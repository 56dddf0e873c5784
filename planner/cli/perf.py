"""`planner perf`: the perf model's answer for one island and one request shape.

    planner perf --gpu H200 --gpus 16 --model deepseek-v3 --input 2000 --output 200
    planner perf --gpu H100-SXM --gpus 2 --model llama-3.1-70b --mode agg --tp 2 --json

Disaggregated (default): the best prefill and the best decode configuration of the
island, each with its throughput and the latency that goes with it (TTFT of a prefill
pass, TPOT of the decode batch) -- one step time for both.  Aggregated (``--mode agg``):
one configuration running both phases with in-flight batching and chunked prefill.
``--json`` adds the per-operation breakdown of one prefill pass and one decode step, and
where each operation's kernel timings come from (``kernel_ops``: measured, transferred
from a GPU of the same vendor, or the vendor's kernel priors).  ``--list-gpus`` lists the
GPU catalog with the source of each GPU's kernels.

Without ``--engine`` a GPU is priced with its vendor's engine (TensorRT-LLM on NVIDIA,
vLLM on AMD and Intel: ``perfmodel.launch.VENDOR_ENGINE``); an engine that does not run
on the GPU's vendor (``--engine trtllm`` on an MI300X) is a usage error, exit 2.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import cast

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from perfmodel import SLO, WorkloadShape, benchmark_island, get_gpu, get_model
from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.collectives import decode_collectives, mixed_collectives, prefill_collectives
from perfmodel.decode import decode_components, mtp_yield, step_model
from perfmodel.engines import DEFAULT_ENGINE, ENGINES, get_engine
from perfmodel.kernels.library import kernels_for
from perfmodel.launch import (
    default_engine,
    engine_flag_error,
    engine_slots,
    engines_for,
    gpu_vendor,
    layout_violation,
    slots_text,
)
from perfmodel.memory import engine_batch_cap
from perfmodel.parallel import ParallelConfig, enumerate_configs, launch_reason, validate_config
from perfmodel.prefill import prefill_components
from planner.cli import values
from planner.cli.console import results_console
from planner.core.atomic import check_output_file, write_text_atomic
from planner.core.defaults import DEFAULT_MODEL
from planner.core.errors import PlannerError

MODES = ("disagg", "agg")


def _limits(gpu, spec, calib) -> dict:
    """The engine limits this island runs under (defaults or --max-running, --max-tokens,
    --mem-fraction), resolved for its GPU (perfmodel.engines)."""
    prof = calib.profile
    graph = float(np.max(prof.graph_max_on(gpu, 1.0)))
    return {"max_running": int(engine_batch_cap(gpu, spec, calib)),
            "max_tokens": prof.prefill_token_budget,
            "memory_rule": prof.memory_rule,
            "memory_fraction_tp1": prof.memory_fraction_on(gpu, 1.0),
            "cuda_graph_max_batch_tp1": graph if np.isfinite(graph) else None}


def _col(x: float) -> np.ndarray:
    return np.array([[float(x)]])


def _seconds(comp: dict[str, np.ndarray]) -> dict[str, float]:
    return {k: round(float(np.ravel(v)[0]), 9) for k, v in comp.items()}


def _slots(row: dict, spec, engine: str, cfg: ParallelConfig | None) -> dict:
    """Expert slots the engine deploys for ``cfg`` (MoE models): ``expert_slots``,
    ``redundant_experts`` and, where slots differ from experts, the ``slots`` line."""
    if cfg is None or not spec.is_moe:
        return row
    slots, extra = engine_slots(engine, spec, cfg.ep)
    row["expert_slots"], row["redundant_experts"] = slots, extra
    text = slots_text(spec, cfg.ep, engine)
    if text:
        row["slots"] = text
    return row


def _phase_row(table, phase: str, s: int, tokens: float, gpus: int, spec=None,
               engine: str = DEFAULT_ENGINE) -> dict:
    t = getattr(table, phase)
    rps = float(t.rps[s])
    row = {"phase": phase, "config": t.config.label() if t.config else None,
           "requests_per_s": rps, "tokens_per_s_island": rps * tokens,
           "tokens_per_s_gpu": rps * tokens / gpus}
    if spec is not None:
        _slots(row, spec, engine, t.config)
    if phase == "prefill":
        row["prompts_per_pass"] = float(t.batch[s])
        row["ttft_ms"] = float(t.latency_ms[s])
    else:
        row["batch_per_group"] = float(t.batch[s])
        row["tpot_ms"] = float(t.latency_ms[s])
    if not t.config:
        row["reason"] = t.reason
    return row


def _breakdowns(gpu, spec, calib, rows, table, s: int, d: float, hit_rate: float) -> dict:
    """Per-operation seconds of one prefill pass and one decode step (chosen configs)."""
    out = {}
    p = table.prefill
    if p.config:
        cfg = p.config
        comp = prefill_components(gpu, spec, float(s), _col(cfg.tp), _col(cfg.dp), _col(cfg.ep),
                                  hit_rate, calib, float(p.batch[s]))
        out["prefill_pass"] = {"config": cfg.label(), "prompts": float(p.batch[s]),
                               "seconds": _seconds(comp),
                               "collectives": prefill_collectives(
                                   gpu, spec, cfg.tp, cfg.dp, cfg.ep, calib, float(s),
                                   hit_rate, float(p.batch[s]))}
    dec = table.decode
    if dec.config and dec.batch[s] > 0:
        cfg = dec.config
        comp = decode_components(gpu, spec, _col(dec.batch[s]), _col(cfg.tp), _col(cfg.dp),
                                 _col(cfg.ep), calib, context=_col(s + 0.5 * d))
        skew = comp.pop("expert_skew", None)
        share = comp.pop("comm_sm_share", None)
        once: dict[str, np.ndarray] = {k: comp.pop(k) for k in (
            "lm_head", "logits_gather", "mtp_module", "step_gap") if k in comp}
        sm = step_model(gpu, spec, _col(dec.batch[s]), _col(cfg.tp), _col(cfg.dp),
                        _col(cfg.ep), calib)
        k_yield = mtp_yield(calib, spec)[1]
        entry = {"config": cfg.label(), "batch_per_group": float(dec.batch[s]),
                 "context": s + 0.5 * d,
                 "layers": {"dense": spec.dense_layers if spec.is_moe else spec.layers,
                            "moe": spec.moe_layers},
                 "per_layer_seconds": _seconds(comp), "per_step_seconds": _seconds(once),
                 "step_seconds": float(np.ravel(sm.step_time(s + 0.5 * d))[0]) * k_yield,
                 "tokens_per_step": k_yield,
                 # a priors-priced GPU's fitted serving stack (perfmodel.serving_stack):
                 # step_seconds includes it, the per-op seconds do not
                 "serving_stack_factor": calib.serving_factor(gpu, "decode"),
                 "collectives": decode_collectives(gpu, spec, cfg.tp, cfg.dp, cfg.ep, calib,
                                                   float(dec.batch[s]))}
        if skew is not None:
            entry["expert_load_skew"] = round(float(np.ravel(skew)[0]), 4)
            # decode_components sets comm_sm_share with expert_skew (MoE models)
            entry["comm_sm_share"] = round(float(np.ravel(cast(np.ndarray, share))[0]), 4)
        out["decode_step"] = entry
    return out


def _provenance(gpu) -> dict:
    """Where ``gpu``'s kernel timings come from (perfmodel.kernels.transfer.provenance)."""
    from dataclasses import asdict

    from perfmodel.kernels.transfer import provenance

    p = provenance(gpu)
    return {**asdict(p), "rule": p.rule, "cross_vendor": p.cross_vendor,
            "sentence": p.sentence()}


#: One op key per family, named in ``kernel_ops`` even when the model did not use it.
OP_FAMILIES = (("gemm", "gemm:bf16"), ("moe", "moe:bf16"),
               ("moe_imbalance", "moe_imbalance"),
               ("context_attention", "context_attention:bf16"),
               ("decode_attention", "decode_attention:bf16"),
               ("mla_context", "mla_context:bf16"), ("mla_decode", "mla_decode:bf16"),
               ("allreduce", "allreduce:2"), ("alltoall", "alltoall:normal:dispatch"))


def _kernel_ops(gpu, engine: str) -> dict[str, dict]:
    """Source and rule of every op key this GPU and engine resolved (``used``: true),
    and of one key of each op family it did not (``used``: false) -- e.g.
    {"gemm:bf16": {"source": "measured H100-SXM", "rule": "measured", "engine":
    "trtllm", "used": true}, ...}."""
    ks = kernels_for(gpu, engine)
    if not hasattr(ks, "sources"):  # the thesis's rooflines
        return {key: {"source": "roofline (thesis constants)", "rule": "roofline",
                      "engine": engine, "used": True} for _, key in OP_FAMILIES}
    out = {key: {**info, "used": True} for key, info in sorted(ks.sources.items())}
    for family, key in OP_FAMILIES:
        if any(k.split(":")[0] == family for k in out):
            continue
        info = ks.describe(key)
        out[key] = {**(info or {"source": "none", "rule": "none", "engine": ""}),
                    "used": False}
    return out


def _catalog_rows() -> list[dict]:
    """The GPU catalog with where each GPU's kernel timings come from."""
    from perfmodel.hardware import gpu_catalog
    from perfmodel.kernels.transfer import provenance

    rows = []
    for name, g in gpu_catalog().items():
        p = provenance(g)
        rows.append({"gpu": name, "vendor": gpu_vendor(g), "arch": g.arch,
                     "kernels": p.label(), "rule": p.rule, "compute_from": p.compute_from,
                     "prior": p.prior, "default_engine": default_engine(g),
                     "engines": list(engines_for(g))})
    return rows


def _print_catalog(as_json: bool) -> None:
    rows = _catalog_rows()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    out = Table(title="GPU catalog: where each GPU's kernel timings come from")
    for col in ("GPU", "vendor", "arch", "kernels", "engines (default first)"):
        out.add_column(col)
    for r in rows:
        engines = [r["default_engine"]] + [e for e in r["engines"] if e != r["default_engine"]]
        out.add_row(r["gpu"], r["vendor"], r["arch"], r["kernels"], ", ".join(engines))
    results_console().print(out)


def perf(
    gpu: str = typer.Option("H200", help="GPU type (catalog name)."),
    gpus: int = typer.Option(16, help="GPUs in the island."),
    model: str = typer.Option(DEFAULT_MODEL, help="Built-in model, config.json path, or "
                              "a checkpoint folder holding one."),
    input_len: int = typer.Option(2000, "--input", help="Input (prompt) tokens."),
    output_len: int = typer.Option(200, "--output", help="Mean output (decode) tokens."),
    decode_max: int = typer.Option(0, help="Max output tokens to reserve KV for (0: 2x --output)."),
    hit_rate: float = typer.Option(0.0, help="Prefix/KV-cache hit rate of the input, in [0, 1)."),
    ttft_ms: float = typer.Option(None, "--ttft", help="TTFT ceiling (ms).",
                                  show_default="none"),
    tpot_ms: float = typer.Option(None, "--tpot", help="TPOT ceiling (ms).",
                                  show_default="none"),
    weight_dtype: str = typer.Option(None, help="Override weight dtype (fp4/fp8/bf16; "
                                     "fp8_ffn: Meta's FP8 checkpoints, feed-forward layers "
                                     "only, attention in bf16).",
                                     show_default="the model's"),
    kv_dtype: str = typer.Option(None, help="Override KV-cache dtype (fp8/bf16).",
                                 show_default="the model's"),
    engine: str = typer.Option(None, help="Serving engine whose measured kernels and "
                               f"behaviour are used. {ENGINES.help()}.",
                               show_default=f"{DEFAULT_ENGINE} on NVIDIA GPUs, vllm on AMD "
                               "and Intel"),
    mode: str = typer.Option("disagg", help="disagg (prefill and decode islands) or agg "
                             "(one island, both phases, in-flight batching)."),
    tp: int = typer.Option(None, help="Pin tensor parallelism (with --dp, --ep).",
                           show_default="the best"),
    dp: int = typer.Option(None, help="Pin attention data parallelism (tp x dp = --gpus).",
                           show_default="the best"),
    ep: int = typer.Option(None, help="Pin expert parallelism (divides --gpus; 1 for dense).",
                           show_default="the best"),
    max_running: int = values.max_running_option(),
    max_tokens: int = values.max_tokens_option(),
    mem_fraction: float = values.mem_fraction_option(),
    mtp_acceptance: float = typer.Option(0.0, help="Multi-token prediction: acceptance rate "
                                         "of each draft token, 0..1 (0: off)."),
    mtp_draft: int = typer.Option(1, help="Multi-token prediction: draft tokens per step."),
    fp8_attention: bool = typer.Option(False, help="FP8 attention math (needs --kv-dtype "
                                       "fp8)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (with the per-operation "
                                 "breakdown of one step) instead of a table."),
    csv_path: Path = typer.Option(None, "--csv", help="Write a sweep over input lengths here.",
                                  show_default="no sweep"),
    max_input: int = typer.Option(8192, help="Longest input of the --csv sweep."),
    list_gpus: bool = typer.Option(False, "--list-gpus", help="List the GPU catalog with "
                                   "where each GPU's kernel timings come from (measured, "
                                   "transferred from a GPU of its vendor, or its vendor's "
                                   "priors) and the engines that run on it, then exit."),
) -> None:
    """Best prefill and decode configurations of one island, with their throughput and
    the TTFT and TPOT that go with it."""
    if list_gpus:
        _print_catalog(as_json)
        return
    values.number(gpus, "--gpus", integer=True, ge=1, le=values.MAX_ISLAND_GPUS)
    values.length(input_len, "--input")
    values.length(output_len, "--output")
    values.number(decode_max, "--decode-max", integer=True, ge=0, le=values.MAX_PLAN_LEN)
    values.length(max_input, "--max-input")
    if csv_path is not None:
        check_output_file(csv_path, "--csv")
    if not 0.0 <= hit_rate < 1.0:
        raise PlannerError(f"--hit-rate must be in [0, 1), got {hit_rate}")
    if not 0.0 <= mtp_acceptance < 1.0:
        raise PlannerError(f"--mtp-acceptance must be in [0, 1), got {mtp_acceptance}")
    if mtp_draft < 1 or mtp_draft > 8:
        raise PlannerError(f"--mtp-draft must be in 1..8, got {mtp_draft}")
    if mode not in MODES:
        raise PlannerError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
    for value, flag in ((ttft_ms, "--ttft"), (tpot_ms, "--tpot")):
        values.number(value, flag, gt=0, le=values.MAX_LATENCY_MS)
    spec = values.naming("--model", get_model, model)
    spec = values.naming("--weight-dtype", spec.with_dtypes, weight_dtype, None)
    spec = values.naming("--kv-dtype", spec.with_dtypes, None, kv_dtype)
    if fp8_attention and spec.kv_dtype != "fp8":  # the kernels would ignore it
        raise PlannerError(f"--fp8-attention needs an FP8 KV cache (--kv-dtype fp8); "
                           f"{spec.name}'s is {spec.kv_dtype}")
    if 0 < decode_max < output_len:
        raise PlannerError(f"--decode-max {decode_max} is below --output {output_len}: the "
                           "KV reserve must hold at least the mean answer (0: 2x --output)")
    gpu_spec = values.naming("--gpu", get_gpu, gpu)
    prof = values.naming("--engine", get_engine,
                         engine if engine is not None else default_engine(gpu_spec))
    calib = Calibration(engine=prof.name, mtp_acceptance=mtp_acceptance,
                        mtp_draft_tokens=mtp_draft, fp8_attention=fp8_attention).with_limits(
        values.engine_limits(max_running, max_tokens, mem_fraction))
    configs = None
    wrong_vendor = engine_flag_error(prof.name, gpu_spec)
    if wrong_vendor:
        raise PlannerError(wrong_vendor)
    for value, flag in ((tp, "--tp"), (dp, "--dp"), (ep, "--ep")):
        if value is not None and (value < 1 or gpus % value):
            raise PlannerError(f"{flag} {value} must be a divisor of --gpus {gpus}")
    if tp is not None and dp is not None and tp * dp != gpus:
        raise PlannerError(f"--tp {tp} x --dp {dp} = {tp * dp} GPUs; they must multiply to "
                           f"--gpus {gpus}")
    if any(v is not None for v in (tp, dp, ep)):
        cfg = ParallelConfig(tp or gpus // max(dp or 1, 1), dp or gpus // max(tp or 1, 1),
                             ep if ep is not None else 1)
        validate_config(cfg, gpus, spec)
        broken = layout_violation(prof.name, spec, cfg, gpus, gpu_spec.gpus_per_domain)
        if broken:
            raise PlannerError(f"{cfg.label()} on {gpus} x {gpu_spec.name}: {broken}")
        configs = [cfg]
    d_max = decode_max or 2 * output_len
    slo = SLO(ttft_ms, tpot_ms)
    notes = kernels_for(gpu_spec, prof.name).notes
    header = {"gpu": gpu_spec.name, "gpus": gpus, "model": spec.name, "engine": prof.name,
              "engine_label": prof.label, "mode": mode, "input": input_len,
              "output": output_len, "hit_rate": hit_rate,
              "mtp_acceptance": mtp_acceptance, "mtp_draft": mtp_draft if mtp_acceptance else 0,
              "engine_limits": _limits(gpu_spec, spec, calib)}
    if mode == "agg":
        _perf_agg(gpu_spec, gpus, spec, calib, configs, input_len, output_len, hit_rate,
                  ttft_ms, tpot_ms, header, notes, as_json)
        return
    length = max(input_len, max_input if csv_path else 0)
    pmf = np.zeros(length + 1)
    pmf[input_len] = 1.0
    table = benchmark_island(gpu_spec, gpus, spec, WorkloadShape(pmf, output_len, d_max,
                                                                 hit_rate), slo, calib, configs)
    rows = [_phase_row(table, "prefill", input_len, input_len, gpus, spec, prof.name),
            _phase_row(table, "decode", input_len, output_len, gpus, spec, prof.name)]
    if csv_path:
        _write_sweep(csv_path, gpu_spec, gpus, spec, max_input, output_len, d_max, hit_rate,
                     slo, calib, configs)
    if as_json:
        doc = {**header, "phases": rows,
               "breakdown": _breakdowns(gpu_spec, spec, calib, rows, table, input_len,
                                        float(output_len), hit_rate),
               "kernel_sources": list(notes), "kernel_provenance": _provenance(gpu_spec),
               "kernel_ops": _kernel_ops(gpu_spec, prof.name)}
        print(json.dumps(doc, indent=2))
        if not any(row["config"] for row in rows):
            raise typer.Exit(1)
        return
    console = results_console()
    out = Table(title=f"{spec.name} on {gpus} x {gpu_spec.name} ({prof.label}): input "
                      f"{input_len}, output {output_len} tokens")
    for col in ("phase", "config", "req/s", "tok/s island", "tok/s/GPU", "batch", "latency"):
        out.add_column(col, justify="right" if col not in ("phase", "config") else "left")
    for row in rows:
        latency = (f"TTFT {row['ttft_ms']:.1f} ms" if row["phase"] == "prefill"
                   else f"TPOT {row['tpot_ms']:.1f} ms")
        batch = row.get("prompts_per_pass", row.get("batch_per_group", 0.0))
        unplaced = ("no launchable layout" if "launches no layout" in row.get("reason", "")
                    else "does not fit")
        out.add_row(row["phase"], row["config"] or unplaced,
                    f"{row['requests_per_s']:.2f}", f"{row['tokens_per_s_island']:,.0f}",
                    f"{row['tokens_per_s_gpu']:,.0f}", f"{batch:.0f}",
                    latency if row["config"] else "-")
    console.print(out)
    _print_notes(console, rows, notes)
    if csv_path:
        console.print(f"sweep written to {csv_path}")
    if not any(row["config"] for row in rows):
        raise typer.Exit(1)


def _print_notes(console: Console, rows: list[dict], notes: list[str]) -> None:
    for row in rows:
        if not row["config"]:
            console.print(f"[yellow]{row['phase']}: {row['reason']}[/yellow]", soft_wrap=True)
    for text in dict.fromkeys(row["slots"] for row in rows if row.get("slots")):
        console.print(text, soft_wrap=True, markup=False)
    if notes:
        console.print("kernel tables not measured on this GPU/engine: " + "; ".join(notes),
                      style="dim", soft_wrap=True, markup=False)
    console.print("batch: prompts per prefill pass / sequences per attention group in decode",
                  style="dim")


def _perf_agg(gpu, gpus, spec, calib, configs, s, d, hit_rate, ttft_ms, tpot_ms, header,
              notes, as_json) -> None:
    """Aggregated serving: the configuration with the highest request rate (module doc)."""
    best = None
    for cfg in configs or enumerate_configs(gpus, spec, calib.engine, gpu.gpus_per_domain):
        pt = aggregated_point(gpu, spec, cfg.tp, cfg.dp, cfg.ep, s, float(d), hit_rate, calib,
                              ttft_ms=ttft_ms, tpot_ms=tpot_ms)
        if pt.feasible and (best is None or pt.rps > best[1].rps):
            best = (cfg, pt)
    if best is None and not configs and not enumerate_configs(gpus, spec, calib.engine,
                                                              gpu.gpus_per_domain):
        raise PlannerError(launch_reason(gpus, spec, calib.engine, gpu.gpus_per_domain),
                           exit_code=1)
    if best is None:
        raise PlannerError(f"{spec.name} cannot be served aggregated on {gpus} x {gpu.name} "
                           "at these lengths and latency ceilings (weights or KV do not fit, "
                           "or no batch meets --ttft/--tpot)", exit_code=1)
    cfg, pt = best
    row = {"config": cfg.label(), "requests_per_s": pt.rps,
           "output_tokens_per_s_island": pt.rps * d, "output_tokens_per_s_gpu": pt.rps * d / gpus,
           "input_tokens_per_s_island": pt.rps * s, "batch_per_group": pt.batch,
           "ttft_ms": pt.ttft_s * 1e3, "tpot_ms": pt.tpot_s * 1e3,
           "prefill_tokens_per_pass": pt.prefill_tokens_per_pass}
    _slots(row, spec, calib.engine, cfg)
    if as_json:
        print(json.dumps({**header, "aggregated": row,
                          "breakdown": {"mixed_pass": {
                              "config": cfg.label(), "seconds": pt.breakdown,
                              "collectives": mixed_collectives(
                                  gpu, spec, cfg.tp, cfg.dp, cfg.ep, calib, pt.batch, s, d,
                                  hit_rate)}},
                          "kernel_sources": list(notes),
                          "kernel_provenance": _provenance(gpu),
                          "kernel_ops": _kernel_ops(gpu, calib.engine)}, indent=2))
        return
    console = results_console()
    out = Table(title=f"{spec.name} on {gpus} x {gpu.name} ({calib.profile.label}), aggregated: "
                      f"input {s}, output {d} tokens")
    for col in ("config", "req/s", "out tok/s island", "out tok/s/GPU", "batch", "TTFT",
                "TPOT"):
        out.add_column(col, justify="left" if col == "config" else "right")
    out.add_row(row["config"], f"{pt.rps:.2f}", f"{row['output_tokens_per_s_island']:,.0f}",
                f"{row['output_tokens_per_s_gpu']:,.0f}", f"{pt.batch}",
                f"{row['ttft_ms']:.0f} ms", f"{row['tpot_ms']:.1f} ms")
    console.print(out)
    _print_notes(console, [{"config": cfg.label(), "slots": row.get("slots")}], notes)


def _write_sweep(path, gpu, gpus, spec, max_input, output_len, d_max, hit_rate, slo, calib,
                 configs):
    """Per-length table for configurations chosen under a uniform length distribution."""
    pmf = np.ones(max_input + 1)
    pmf[0] = 0.0
    table = benchmark_island(gpu, gpus, spec, WorkloadShape(pmf / pmf.sum(), output_len, d_max,
                                                            hit_rate), slo, calib, configs)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["input", "prefill_config", "prefill_rps", "ttft_ms", "decode_config",
                "decode_rps", "decode_batch", "tpot_ms"])
    p, d = table.prefill, table.decode
    for s in range(1, max_input + 1):
        w.writerow([s, p.config.label() if p.config else "", f"{p.rps[s]:.6g}",
                    f"{p.latency_ms[s]:.6g}", d.config.label() if d.config else "",
                    f"{d.rps[s]:.6g}", f"{d.batch[s]:.0f}", f"{d.latency_ms[s]:.6g}"])
    write_text_atomic(Path(path), buf.getvalue())
