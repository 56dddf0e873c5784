"""Aggregated serving: one island runs both phases with in-flight batching and chunked
prefill (what ``trtllm-bench``, vLLM and SGLang do by default, and what most published
throughput figures measure).

Steady state of one attention group holding ``B`` decoding sequences, each request
bringing s input tokens (n = s (1 - h) to compute) and generating d tokens (d' = d /
yield steps).  To keep B sequences in flight, B / d' requests finish and start per
step, so the group must prefill ``p = B n / d'`` prompt tokens per step on average.
The engines do not spread that work thinly over every step: a step's token budget goes
to the running decodes first and then to whole waiting prompts (chunks of a prompt
longer than what is left), so a prompt is prefilled in the first step(s) after it
arrives and the other steps are decode-only.  Two kinds of pass, then:

* a **mixed pass** -- one token for each of the B sequences (MTP: 1 + k verified) plus
  ``c = min(budget - B (1 + k), max(n, p))`` prompt tokens: at least one whole prompt
  where it fits, more when prompts arrive faster than one per step;
* a **decode-only pass** -- the B rows alone;

and a share ``f = min(p / c, 1)`` of the passes is mixed.  An engine that does not mix
(SGLang's scheduler unless ``--enable-mixed-chunk``: ``EngineProfile.mixed_prefill``)
runs the prompt tokens as a pass of their own, with the whole budget, while the decodes
wait: its "mixed pass" is that prefill pass plus the decode step it delays.  GEMMs,
norms, all-reduces and MoE see the pass's rows; attention is the decode kernel over B
sequences at the mean context s + d/2 plus, in a mixed pass, the prefill kernel over the
chunk's query-key pairs.  Why two passes and not one average pass: a MoE layer's cost is
not linear in its rows -- a decode step of 4 sequences reads the 32 experts they route
to, a pass that also carries 32 prompt tokens reads nearly all 256 -- so spreading the
prefill over every step (the form before issue 29's InferenceX rows) charged every
decode step the whole expert set, and TTFT ``n / p`` steps.

The mean pass is ``t = f t_mix + (1 - f) t_dec`` and throughput = dp min(B / d', c / n)
/ t requests/s (the second term binds when the budget left after the decodes cannot
prefill prompts as fast as they finish: the engine then runs fewer sequences); TTFT =
ceil(n / c) mixed passes.  A request's TPOT is its own d' steps: decode-only passes
and the mixed passes of the others' prompts, ``f d' - n / c`` of them on average (its
own prompt's passes are its TTFT): ``(t_dec (d' - m) + t_mix m) / d'`` per step and yield,
with m that mean -- what a benchmark's mean TPOT reports -- or, where a TPOT ceiling
is checked, its per-request tail (:data:`TPOT_TAIL_QUANTILE`).  The batch is the
largest the KV cache holds that meets the TTFT and TPOT ceilings, or the one given;
engines page the KV cache, so B sequences spread over their lifetimes occupy
B (s + d/2) tokens on average (``decode_max`` overrides d/2 as the reserve).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from perfmodel import layers
from perfmodel.calibration import Calibration
from perfmodel.decode import mtp_yield, straggler_factor
from perfmodel.engines import EAGER_LAYER_S
from perfmodel.hardware import GPU
from perfmodel.kernels.library import kernels_for
from perfmodel.memory import engine_batch_cap, kv_per_sequence, max_decode_batch
from perfmodel.models import ModelSpec


@dataclass(frozen=True)
class AggregatedPoint:
    batch: int  # decoding sequences per attention group
    pass_s: float  # one mixed forward pass
    ttft_s: float
    tpot_s: float
    rps: float  # requests/s of the whole island
    prefill_tokens_per_pass: float  # prompt tokens of a mixed pass (module doc)
    breakdown: dict[str, float]  # seconds of one pass by operation

    @property
    def feasible(self) -> bool:
        return self.batch > 0 and self.rps > 0


def _one_pass(gpu: GPU, model: ModelSpec, batch, prompt_tokens, s, context, tp, dp, ep,
              hit_rate: float, calib: Calibration, k_draft: int) -> dict[str, np.ndarray]:
    """Named seconds of one forward pass of ``batch`` decoding sequences at ``context``
    plus ``prompt_tokens`` tokens of prompts of length ``s`` (0: decode-only)."""
    ks = kernels_for(gpu, calib.engine)
    prof = calib.profile
    n = np.maximum(s * (1.0 - hit_rate), 1.0)
    prompts = prompt_tokens / n
    rows = batch * (1 + k_draft) + prompt_tokens
    cached = s * hit_rate
    pairs = prompts * 0.5 * (s * (s + 1.0) - cached * (cached + 1.0))
    heads = model.heads / tp
    if model.is_mla:
        dec = ks.mla_decode(batch, context, heads * (1 + k_draft), model.kv_dtype,
                            calib.fp8_attention)
        pre = ks.mla_context(np.maximum(prompts, 1e-9), s, pairs / np.maximum(prompts, 1e-9),
                             n, heads, model.kv_dtype)
    else:
        kvh = layers.kv_heads_per_gpu(model, tp)
        dec = ks.decode_attention(batch, context, heads * (1 + k_draft), kvh,
                                  model.head_dim, model.kv_dtype, calib.fp8_attention)
        pre = ks.context_attention(np.maximum(prompts, 1e-9), s,
                                   pairs / np.maximum(prompts, 1e-9), n, heads, kvh,
                                   model.head_dim, model.kv_dtype, calib.fp8_attention)
    pre = np.where(prompts > 0, pre, 0.0)
    comp = {"attention_decode": model.layers * dec * straggler_factor(batch, dp,
                                                                      moe=model.is_moe),
            "attention_prefill": model.layers * pre,
            "attention_projections": model.layers * layers.attention_projections(
                ks, model, rows, tp, absorbed=True),
            "elementwise": model.layers * layers.elementwise(ks, model, rows),
            "tp_allreduce": model.layers * layers.tp_allreduce(ks, model, rows, tp,
                                                               gpu.gpus_per_domain)}
    dense_layers = model.dense_layers if model.is_moe else model.layers
    if dense_layers:
        comp["dense_mlp"] = dense_layers * layers.dense_mlp(ks, model, rows, tp,
                                                            model.intermediate)
    if model.is_moe:
        moe = model.moe_layers
        comp["shared_experts"] = moe * (layers.dense_mlp(ks, model, rows, tp,
                                                         model.shared_intermediate)
                                        + layers.router(ks, model, rows))
        comp["routed_experts"] = moe * layers.routed_experts(ks, model, rows, tp, dp, ep,
                                                             calib.eplb_residual(ep))[0]
        dispatch, combine = layers.moe_comm(ks, model, rows, tp, ep, gpu.gpus_per_domain,
                                            "ll", dp)
        comp["alltoall"] = moe * (dispatch + combine)
        gather, reduce_ = layers.dp_gather(ks, model, rows, tp, dp, ep, gpu.gpus_per_domain,
                                           calib.engine)
        comp["dp_allgather+expert_reduce"] = moe * (gather + reduce_)
    comp["lm_head"] = layers.lm_head(ks, model, batch + prompts, tp, ep)
    comp["logits_gather"] = layers.logits_gather(ks, model, batch + prompts, tp, ep,
                                                 gpu.gpus_per_domain) + 0.0 * batch
    comp["step_gap"] = prof.step_gap_s + 0.0 * rows
    # beyond the largest captured CUDA graph a pass runs eagerly: at least the host time
    # to launch every layer (perfmodel.decode._eager_floor)
    gpu_time = cast(np.ndarray, sum(comp.values()))
    eager = rows > prof.graph_max_on(gpu, tp)
    comp["eager_launch"] = np.where(eager, np.maximum(
        model.layers * EAGER_LAYER_S - gpu_time, 0.0), 0.0)
    return comp


def _with_prompts(gpu: GPU, model: ModelSpec, calib: Calibration,
                  plain: dict[str, np.ndarray], batch, chunk, args: tuple
                  ) -> dict[str, np.ndarray]:
    """Named seconds of the engine's pass that carries ``chunk`` prompt tokens beside the
    ``batch`` decodes whose decode-only pass is ``plain``, by the engine's rule: one pass
    of both (``EngineProfile.mixed_prefill``), or the prompt tokens as a pass of their
    own (no decode rows) beside the decode step they interrupt -- the two back to back."""
    if calib.profile.mixed_prefill:
        return _one_pass(gpu, model, batch, chunk, *args)
    alone = _one_pass(gpu, model, 0.0 * batch, chunk, *args)
    alone["attention_decode"] = 0.0 * alone["attention_decode"]  # no decode rows
    return {k: plain[k] + np.where(chunk > 0, alone[k], 0.0) for k in plain}


def pass_seconds(gpu: GPU, model: ModelSpec, batch, prompt_tokens, s, context, tp, dp, ep,
                 hit_rate: float, calib: Calibration) -> np.ndarray:
    """Seconds of one engine pass of ``batch`` decoding sequences at ``context`` that also
    prefills ``prompt_tokens`` tokens of prompts of length ``s`` (0: decode-only), by the
    engine's mixing rule and priced as :func:`mixed_pass` prices its two passes (the
    serving-stack factors on the decode rows and on the prompts' increment, then the
    error-band factor); ``batch`` and ``prompt_tokens`` broadcast.  What a finite run
    (:mod:`perfmodel.aggregated_run`) steps through pass by pass."""
    k_draft, _ = mtp_yield(calib, model)
    batch = np.asarray(batch, float)
    chunk = np.asarray(prompt_tokens, float) + 0.0 * batch
    args = (float(s), float(context), float(tp), float(dp), float(ep), hit_rate, calib,
            k_draft)
    plain = _one_pass(gpu, model, batch + 0.0 * chunk, 0.0 * chunk, *args)
    plain_s = cast(np.ndarray, sum(plain.values()))
    more_s = cast(np.ndarray, sum(_with_prompts(gpu, model, calib, plain, batch, chunk,
                                                args).values())) - plain_s
    return calib.time_factor(gpu, "aggregated") * (
        calib.serving_factor(gpu, "decode") * plain_s
        + calib.serving_factor(gpu, "prefill") * np.where(chunk > 0, more_s, 0.0))


def mixed_pass(gpu: GPU, model: ModelSpec, batch, s, d, tp, dp, ep,
               hit_rate: float, calib: Calibration, held=None) -> dict[str, np.ndarray]:
    """Named seconds of the island's mean pass (module doc: the share ``f`` of mixed
    passes and the decode-only rest) for ``batch`` decoding sequences; ``batch``, ``s``
    (input length) and ``d`` (output length) broadcast against each other.  ``held``:
    generated tokens a sequence holds on average (default d / 2).  Private entries:
    ``_chunk`` (prompt tokens of a mixed pass), ``_share`` (f), ``_mixed_s`` (a mixed
    pass's seconds, which TTFT counts), ``_decode_s`` (a decode-only pass's) and
    ``_yield`` (tokens per step)."""
    prof = calib.profile
    batch = np.asarray(batch, float)
    s = np.asarray(s, float)
    d = np.asarray(d, float)
    k_draft, tokens_per_step = mtp_yield(calib, model)
    n = np.maximum(s * (1.0 - hit_rate), 1.0)
    steps = np.maximum(d / tokens_per_step, 1.0)
    budget = prof.prefill_token_budget or np.inf
    # a pass of prompts alone (prof.mixed_prefill off) has the whole budget for them
    room = np.maximum(budget - (batch * (1 + k_draft) if prof.mixed_prefill else 0.0), 0.0)
    need = batch * n / steps
    chunk = np.minimum(room, np.maximum(need, n))
    share = np.where(chunk > 0, np.minimum(need / np.maximum(chunk, 1e-9), 1.0), 0.0)
    context = s + (0.5 * d if held is None else np.asarray(held, float))
    args = (s, context, tp, dp, ep, hit_rate, calib, k_draft)
    plain = _one_pass(gpu, model, batch, 0.0 * chunk, *args)
    mixed = _with_prompts(gpu, model, calib, plain, batch, chunk, args)
    # a priors-priced GPU's serving stack (perfmodel.serving_stack): the decode rows'
    # work by its decode factor, the prompt tokens' increment by its prefill factor
    dec_f, pre_f = calib.serving_factor(gpu, "decode"), calib.serving_factor(gpu, "prefill")
    comp = {k: share * mixed[k] + (1.0 - share) * plain[k] for k in mixed}
    kernel = cast(np.ndarray, sum(comp.values()))
    mixed_s = cast(np.ndarray, sum(mixed.values()))
    plain_s = cast(np.ndarray, sum(plain.values()))
    if dec_f != 1.0 or pre_f != 1.0:
        comp["serving_stack"] = ((dec_f - 1.0) * plain_s
                                 + share * (pre_f - 1.0) * (mixed_s - plain_s))
        mixed_s = dec_f * plain_s + pre_f * (mixed_s - plain_s)
        kernel = kernel + comp["serving_stack"]
        plain_s = dec_f * plain_s
    factor = calib.time_factor(gpu, "aggregated")
    if factor != 1.0:  # --plan-at p10: the class's pessimistic error, named
        comp["error_band_derate"] = (factor - 1.0) * kernel
        mixed_s, plain_s = factor * mixed_s, factor * plain_s
    comp["_chunk"] = chunk + 0.0 * share
    comp["_share"] = share + 0.0 * chunk
    comp["_mixed_s"] = mixed_s + 0.0 * share
    comp["_decode_s"] = plain_s + 0.0 * share
    comp["_yield"] = tokens_per_step + 0.0 * batch
    return comp


#: Per-request tail the TPOT ceiling is held at: while a request decodes for d' steps the
#: other sequences turn over and their prompts' mixed passes run, f d' - n / c of them on
#: average (f d' = B n / c passes per d' steps, its own n / c among them, before its
#: first token); the count is taken as Poisson and the request's TPOT is judged at
#: this quantile of it -- the SLO is per request, as the simulator scores it: a short
#: answer that shares one long prompt's pass misses its ceiling even when the mean pass
#: meets it.
TPOT_TAIL_QUANTILE = 0.99


@dataclass(frozen=True)
class PassOutcome:
    pass_s: np.ndarray  # mean pass
    ttft_s: np.ndarray
    tpot_s: np.ndarray  # mean over a request's own steps (what a benchmark reports)
    tpot_tail_s: np.ndarray  # a request seeing TPOT_TAIL_QUANTILE of the mixed passes
    rps: np.ndarray
    chunk: np.ndarray


def pass_outcome(comp: dict[str, np.ndarray], batch, s, d, dp, hit_rate: float
                 ) -> PassOutcome:
    """Mean pass, TTFT, TPOT (mean and per-request tail) and requests/s of the island
    from :func:`mixed_pass`'s entries, popping its private ones (module doc)."""
    from scipy.stats import poisson

    chunk = comp.pop("_chunk")
    share = comp.pop("_share")
    mixed = comp.pop("_mixed_s")
    plain = comp.pop("_decode_s")
    tokens_per_step = comp.pop("_yield")
    t = cast(np.ndarray, sum(comp.values()))
    n = np.maximum(np.asarray(s, float) * (1.0 - hit_rate), 1.0)
    steps = np.maximum(np.asarray(d, float) / tokens_per_step, 1.0)  # as mixed_pass
    ttft = np.maximum(np.ceil(n / np.maximum(chunk, 1e-9)), 1.0) * mixed
    # a request's own prompt pass is its TTFT; its TPOT carries the others' (module doc)
    own = n / np.maximum(chunk, 1e-9)  # mixed passes of its own prompt (its TTFT)
    others = np.maximum(share * steps - own, 0.0)

    def per_token(seen):
        seen = np.minimum(seen, steps)
        return (plain * (steps - seen) + mixed * seen) / steps / tokens_per_step

    tpot = per_token(others)
    tail = np.maximum(per_token(poisson.ppf(TPOT_TAIL_QUANTILE, others)), tpot)
    rps = dp * np.minimum(np.asarray(batch, float) / steps, chunk / n) / t
    return PassOutcome(t, ttft, tpot, tail, np.where(chunk > 0, rps, 0.0), chunk)


def aggregated_point(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int, s: int, d: float,
                     hit_rate: float, calib: Calibration, *, batch: int | None = None,
                     decode_max: int | None = None, ttft_ms: float | None = None,
                     tpot_ms: float | None = None, held: float | None = None
                     ) -> AggregatedPoint:
    """The operating point of an aggregated island (module doc).  ``held``: tokens a
    decoding sequence holds beyond the mean prompt ``s``, averaged over the running
    batch -- its attention context is ``s + held`` and, unless ``decode_max`` says
    otherwise, its KV reserve ``held`` (None: ``d / 2``, fixed lengths; a dataset of
    varying lengths holds more, ``perfmodel.validation_lengths``)."""
    reserve = decode_max or (0.5 * d if held is None else held)
    cap = int(np.asarray(max_decode_batch(gpu, model, np.array([[float(tp)]]),
                                          np.array([[float(dp)]]), np.array([[float(ep)]]),
                                          np.array([[float(kv_per_sequence(
                                              calib, s, d, reserve))]]),
                                          calib)).ravel()[0])
    cap = min(cap, int(engine_batch_cap(gpu, model, calib)))
    if batch is not None:
        cap = min(cap, int(batch))
    if cap < 1:
        return AggregatedPoint(0, 0.0, 0.0, 0.0, 0.0, 0.0, {})
    b = np.arange(1, cap + 1, dtype=float)
    comp = mixed_pass(gpu, model, b, float(s), float(d), float(tp), float(dp), float(ep),
                      hit_rate, calib, held=held)
    out = pass_outcome(comp, b, float(s), float(d), dp, hit_rate)
    t, ttft, tpot, rps, chunk = out.pass_s, out.ttft_s, out.tpot_s, out.rps, out.chunk
    ok = chunk > 0
    if ttft_ms is not None:
        ok &= ttft * 1e3 <= ttft_ms
    if tpot_ms is not None:
        ok &= out.tpot_tail_s * 1e3 <= tpot_ms
    if batch is None:
        if not ok.any():
            return AggregatedPoint(0, 0.0, 0.0, 0.0, 0.0, 0.0, {})
        i = int(np.argmax(np.where(ok, rps, -1.0)))
    else:
        i = cap - 1
    return AggregatedPoint(int(b[i]), float(t[i]), float(ttft[i]), float(tpot[i]),
                           float(rps[i]), float(chunk[i]),
                           {k: float(np.ravel(v)[i]) for k, v in comp.items()})
