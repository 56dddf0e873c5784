"""Every collective of one prefill pass and one decode step, listed (issue 27, item 3).

The phase models (``perfmodel.prefill``, ``perfmodel.decode``) price the collectives in
their sums; this module lists them one by one for ``planner perf --json`` -- name, kind,
bytes each GPU sends, group size, tier (``node``: inside the NVLink domain / server,
``scale-out``: across servers) and seconds -- from the same functions
(:func:`perfmodel.layers.collectives`), so the listing and the sums cannot drift apart:

* ``tp_allreduce``: two per layer across the attention tensor-parallel group;
* ``dp_allgather`` / ``expert_reduce``: attention DP with experts split by width over
  the island (dp > 1, ep = 1): the groups' tokens gathered to every GPU, the partial
  sums reduced (SGLang: all-reduce; TRT-LLM, vLLM: reduce-scatter);
* ``alltoall_dispatch`` / ``alltoall_combine``: expert parallelism (ep > 1), the copies
  multiplied by the expert width W = G / ep where experts are also split by width;
* ``lm_head_hidden_allgather`` / ``logits_allgather``: the vocabulary-parallel LM head.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from perfmodel import layers
from perfmodel.calibration import Calibration
from perfmodel.decode import mtp_yield, overlap_on
from perfmodel.hardware import GPU
from perfmodel.kernels.library import kernels_for
from perfmodel.models import ModelSpec


def _totals(items: list[dict[str, Any]], model: ModelSpec, repeat: float = 1.0
            ) -> list[dict[str, Any]]:
    for c in items:
        per = {"layer": model.layers, "moe_layer": model.moe_layers, "pass": 1}[c["per"]]
        c["count"] = round(int(c["count_per_layer"] * per) * repeat, 4)
        c["total_seconds"] = c["seconds"] * c["count"]
    return items


def prefill_collectives(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int,
                        calib: Calibration, s: float, hit_rate: float = 0.0,
                        prompts: float = 1.0) -> list[dict[str, Any]]:
    """The collectives of the forward pass(es) that prefill ``prompts`` prompts of ``s``
    tokens (``count``: how many times they run, over all layers and chunks)."""
    ks = kernels_for(gpu, calib.engine)
    prof = calib.profile
    n = max(float(s) * (1.0 - hit_rate), 1.0)
    total = prompts * n
    budget = prof.prefill_token_budget or np.inf
    rows = min(total, budget)
    passes = total / rows
    on = bool(np.ravel(overlap_on(prof, model, np.asarray(rows / tp), np.asarray(ep)))[0])
    ways = 2.0 if on and calib.engine != "roofline" else 1.0
    items = layers.collectives(ks, model, rows, tp, dp, ep, gpu.gpus_per_domain, "normal",
                               calib.engine, head_rows=prompts, ways=ways)
    items = _totals(items, model, passes)
    for c in items:  # the LM head runs once per prefill, not per chunk
        if c["per"] == "pass":
            c["count"] = 1
            c["total_seconds"] = c["seconds"]
    return items


def decode_collectives(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int,
                       calib: Calibration, batch: float) -> list[dict[str, Any]]:
    """The collectives of one decode step of ``batch`` sequences per attention group
    (micro-batched as :func:`perfmodel.decode.decode_components` does)."""
    ks = kernels_for(gpu, calib.engine)
    k_draft, _ = mtp_yield(calib, model)
    rows = float(batch) * (1 + k_draft)
    on = bool(np.ravel(overlap_on(calib.profile, model, np.asarray(rows / tp),
                                  np.asarray(ep)))[0])
    ways = 2.0 if on and calib.engine != "roofline" else 1.0
    items = layers.collectives(ks, model, rows, tp, dp, ep, gpu.gpus_per_domain, "ll",
                               calib.engine, ways=ways)
    return _totals(items, model)


def mixed_collectives(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int,
                      calib: Calibration, batch: float, s: float, d: float,
                      hit_rate: float = 0.0) -> list[dict[str, Any]]:
    """The collectives of one mixed pass of an aggregated island (``perfmodel.aggregated``:
    ``batch`` decoding sequences per attention group and the prefill chunk that rides
    with them), priced as :func:`perfmodel.aggregated.mixed_pass` prices them."""
    ks = kernels_for(gpu, calib.engine)
    k_draft, per_step = mtp_yield(calib, model)
    n = max(float(s) * (1.0 - hit_rate), 1.0)
    steps = max(float(d) / per_step, 1.0)
    budget = calib.profile.prefill_token_budget or np.inf
    decode_rows = float(batch) * (1 + k_draft)
    chunk = min(float(batch) * n / steps, max(budget - decode_rows, 0.0))
    items = layers.collectives(ks, model, decode_rows + chunk, tp, dp, ep,
                               gpu.gpus_per_domain, "ll", calib.engine,
                               head_rows=float(batch) + chunk / n)
    return _totals(items, model)


__all__ = ["decode_collectives", "mixed_collectives", "prefill_collectives"]
