"""End-to-end reading of a disaggregated (prefill/decode-split) published row.

A posed row of mode ``disaggregated`` is a closed-loop benchmark client holding ``C``
requests in flight against ``P`` prefill workers and ``D`` decode workers (Dynamo's
xPyD deployments), each worker its own engine instance with its own layout and limits
(``prefill`` / ``decode`` entries of the row: workers, tp, dp, ep and the engine flags
of that side).  The figure is output tokens per second per GPU of the whole system.

A request passes through three stations:

* **prefill**: a prefill attention group runs passes of ``q`` prompts (at most the
  token budget's ``budget / isl``); ``P dp_p`` groups complete ``P dp_p q / t_p(q)``
  prompts per second, ``t_p`` the model's prefill pass (``prefill_pass_time``).  A
  request waits for the pass under way, if any, then rides the next: ``t_p(q) (1 +
  rho / 2)``, ``rho`` the share of time a group is in a pass (the mean residual of a
  fixed-length service is half of it).
* **KV transfer**: its prompt's KV, ``isl`` tokens of the prefill group's per-GPU KV
  bytes, over one GPU-pair link -- the NVLink domain's when the whole row fits in one
  domain (GB200 / GB300 NVL72), else the scale-out NIC's.
* **decode**: ``osl`` steps of a decode attention group holding ``b`` sequences at the
  mean context ``isl + osl / 2`` (``step_model``); ``D dp_d`` groups finish
  ``D dp_d b / (osl t_d(b))`` requests per second, ``b`` at most what the KV cache
  holds at ``isl + osl / 2`` tokens per sequence (paged, as ``aggregated_point``) and
  the engine's limits allow.

At a system rate ``X`` each station runs at the smallest load that carries ``X`` (the
fewest prompts per pass, the smallest running batch), so a request spends
``T(X) = t_p(q(X)) (1 + rho / 2) + t_kv + osl t_d(b(X))``, and Little's law gives the client's
``C = X T(X)``.  ``T`` rises with ``X``, so the rate is the ``X`` that solves it
(bisection), or -- when even the largest rate either side sustains needs fewer than
``C`` requests in flight -- that largest rate (the surplus requests queue).  Omitted,
each on the optimistic side: queueing beyond the pass under way, the router's and the
transfer engine's own overheads, waiting for a decode slot, and imbalance between
workers.

That steady state is the reading of a TTFT or TPOT row.  A rate row whose client's
``num_prompts`` is stated is read instead as that client's finite run, played out
request by request on the same station times (:class:`Stations`,
:func:`benchmark_run`, :mod:`perfmodel.benchmark_run`): it carries the start-up
burst, the queue behind a long pass and the drain that the steady state omits.  On the
70 calibration rows it moved the median signed error from +11.1 % to +7.3 % and the
median |error| from 16.0 % to 11.4 % (no held-out row was read to choose it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perfmodel.benchmark_run import DP_BALANCE, BenchmarkRun, Routing, closed_loop_run
from perfmodel.decode import step_model
from perfmodel.hardware import GPU, get_gpu
from perfmodel.memory import (
    engine_batch_cap,
    kv_bytes_per_token_per_gpu,
    kv_per_sequence,
    max_decode_batch,
)
from perfmodel.prefill import prefill_pass_time
from perfmodel.validation_units import NotPredictable

#: A ``perfmodel.validation.Case`` (not imported: that module imports this one).
Case = Any


#: Per-side recipe keys the posing carries that the model does not price, and why
#: (fixed before any disaggregated row was scored).
NOT_PRICED = {
    "cuda_graph": "graphs matter for decode steps, and every posed decode side has them on "
                  "(prefill passes are long enough that launch time is noise)",
    "moe_backend": "the kernel tables are the engine's default MoE kernels for the GPU",
    "a2a": "the all-to-all is priced as the engine's low-latency kernel (decode) and "
           "its normal kernel (prefill) whatever the backend flag",
    "sbo": "single-batch overlap of the combine with the next GEMM is not modelled "
           "(optimistic side: none of it is credited)",
    "overlap_scheduler": "CPU scheduling overlap: the step gap of the engine profile holds",
    "redundant_experts": "redundant expert slots without online rebalancing (eplb off) "
                         "leave the routing imbalance of eplb off",
    "context": "SGLang --context-length caps a request's length; every request is shorter",
    "max_seq_len": "TRT-LLM's per-request length cap; every request is shorter",
    "chunked_prefill": "a prompt longer than the pass budget is not posed",
}


@dataclass(frozen=True)
class Side:
    """One side of a disaggregated deployment: ``workers`` engine instances of ``tp x
    dp`` GPUs each, and the engine limits the recipe set (0 / None: the default)."""

    workers: int
    tp: int
    dp: int
    ep: int
    budget: int = 0
    max_num_seqs: int = 0
    mem_fraction: float = 0.0
    graph_max: int = 0
    overlap: bool | None = None
    eplb: str = "auto"
    #: SGLang's cap on a prefill batch's tokens (--max-prefill-tokens) and on a KV pool's
    #: tokens (--max-total-tokens); 0: not set.
    max_prefill_tokens: int = 0
    max_total_tokens: int = 0

    @property
    def gpus(self) -> int:
        return self.workers * self.tp * self.dp

    @property
    def pass_tokens(self) -> int:
        """The most prompt tokens a pass takes (0: the engine's default): the smaller
        of the positive ones of ``budget`` (SGLang --chunked-prefill-size, -1 disables
        it; TRT-LLM max_num_tokens) and ``max_prefill_tokens`` -- SGLang stops adding
        prompts to a prefill batch at either."""
        caps = [c for c in (self.budget, self.max_prefill_tokens) if c and c > 0]
        return int(min(caps)) if caps else 0

    @classmethod
    def from_posing(cls, entry: dict[str, Any], where: str) -> Side:
        """A side from a posed row's ``prefill`` / ``decode`` mapping (null: default).
        Keys in :data:`NOT_PRICED` are read and left out, for the reason given there."""
        known = set(cls.__dataclass_fields__)
        extra = set(entry) - known - {"gpus_per_worker"} - set(NOT_PRICED)
        if extra:
            raise ValueError(f"{where}: unknown keys {sorted(extra)}")
        values = {k: v for k, v in entry.items() if k in known and v is not None}
        for key in ("workers", "tp", "dp", "ep"):
            if int(values.get(key) or 0) < 1:
                raise ValueError(f"{where}: {key} must be a positive integer")
        side = cls(**values)
        per = entry.get("gpus_per_worker")
        if per is not None and int(per) != side.tp * side.dp:
            raise ValueError(f"{where}: gpus_per_worker {per} is not tp x dp = "
                             f"{side.tp * side.dp}")
        return side


@dataclass(frozen=True)
class DisaggregatedPoint:
    rps: float  # requests/s of the whole system
    ttft_s: float
    tpot_s: float
    prompts_per_pass: float
    decode_batch: float  # sequences per decode attention group
    saturated: str  # "" or the side whose largest rate binds


def _col(x: float) -> np.ndarray:
    return np.array([[float(x)]])


def _calibration(case: Case, side: Side):
    base = case.calibration()
    return replace(base, prefill_token_budget=side.pass_tokens or None,
                   memory_fraction=side.mem_fraction or None,
                   graph_max_batch=side.graph_max or None,
                   micro_batch_overlap=side.overlap, eplb=side.eplb)


def _kv_transfer_s(gpu: GPU, case: Case, side: Side, model) -> float:
    """One prompt's KV over one GPU-pair link (module docstring)."""
    per_gpu = float(np.ravel(kv_bytes_per_token_per_gpu(model, side.tp))[0]) * case.isl
    link = gpu.scaleup_gbps if case.gpus <= gpu.gpus_per_domain else gpu.scaleout_gbps
    return per_gpu / (link * 1e9) if link > 0 else 0.0


@dataclass(frozen=True)
class Stations:
    """The model's station times for a row: a pass of ``q`` prompts on one prefill
    attention group (``pass_s[q - 1]``, ``q`` up to the token budget's), the KV
    transfer, and a decode step of ``b`` sequences on one decode group (``step_s[b -
    1]``, ``b`` up to what memory and the engine allow); and how each side's requests
    are routed to its groups (:func:`routing`)."""

    prefill: Routing
    pass_s: np.ndarray
    transfer_s: float
    decode: Routing
    step_s: np.ndarray


#: ``Case.router`` values: "" routes as the deployment's frontend and engine do
#: (``perfmodel.benchmark_run.DP_BALANCE``), "pooled" sends every request to the
#: least-loaded group of its side (the flipped assumption: the reading's rule before
#: the routers' defaults were looked up).
ROUTERS = ("", "pooled")


def routing(case: Case, side: Side) -> Routing:
    """How a side's requests reach its groups under ``case.router`` (:data:`ROUTERS`),
    its attention-DP groups in lockstep where expert layers join them (an MoE model)."""
    if case.router not in ROUTERS:
        raise NotPredictable(f"posing: router '{case.router}' is not one of {ROUTERS}")
    lockstep = bool(case.spec().is_moe)
    if case.router == "pooled":
        return Routing(side.workers, side.dp, "least_loaded", pooled=True,
                       lockstep=lockstep)
    return Routing(side.workers, side.dp, DP_BALANCE.get(case.engine, "least_loaded"),
                   lockstep=lockstep)


def stations(case: Case, pre: Side, dec: Side) -> Stations:
    """The :class:`Stations` of a disaggregated row (module docstring)."""
    gpu, model = get_gpu(case.gpu), case.spec()
    isl, osl = float(case.isl), float(case.osl)
    cal_p, cal_d = _calibration(case, pre), _calibration(case, dec)

    # prefill: pass time for q = 1 .. most prompts the budget holds
    q_max = max(int(cal_p.profile.prefill_token_budget // max(isl, 1.0)), 1)
    q = np.arange(1, q_max + 1, dtype=float)
    t_p = np.asarray(prefill_pass_time(gpu, model, isl, _col(pre.tp), _col(pre.dp),
                                       _col(pre.ep), 0.0, cal_p, q[None, :]),
                     float).ravel()

    # decode: step time for b = 1 .. the largest batch memory and the engine allow
    sized = float(kv_per_sequence(cal_d, isl, osl, 0.5 * osl))  # as aggregated_point
    fits = float(np.ravel(max_decode_batch(gpu, model, _col(dec.tp), _col(dec.dp),
                                           _col(dec.ep), _col(sized), cal_d))[0])
    b_max = min(fits, engine_batch_cap(gpu, model, cal_d))
    if dec.max_num_seqs:
        b_max = min(b_max, float(dec.max_num_seqs))
    if dec.max_total_tokens:  # a KV pool per attention group
        b_max = min(b_max, float(dec.max_total_tokens) / sized)
    if b_max < 1:
        raise NotPredictable("infeasible: the decode workers' KV cache holds no sequence "
                             f"of {sized:,.0f} tokens (the source ran it: a miss of "
                             "the model, not a number to score)")
    b = np.arange(1, int(b_max) + 1, dtype=float)
    sm = step_model(gpu, model, b[None, :], _col(dec.tp), _col(dec.dp), _col(dec.ep), cal_d)
    t_d = np.asarray(sm.step_time(isl + 0.5 * osl), float).ravel()
    return Stations(routing(case, pre), t_p, _kv_transfer_s(gpu, case, pre, model),
                    routing(case, dec), t_d)


def benchmark_run(case: Case, pre: Side, dec: Side) -> BenchmarkRun:
    """The row's client run played out on the model's stations
    (:mod:`perfmodel.benchmark_run`): ``num_prompts`` requests, ``concurrency`` in
    flight."""
    st = stations(case, pre, dec)
    return closed_loop_run(st.prefill, st.pass_s, st.transfer_s, st.decode, st.step_s,
                           int(case.concurrency), int(case.num_prompts), float(case.osl))


def disaggregated_point(case: Case, pre: Side, dec: Side) -> DisaggregatedPoint:
    """The closed-loop steady state of a disaggregated row (module docstring)."""
    st = stations(case, pre, dec)
    osl = float(case.osl)
    t_p, t_d, t_kv = st.pass_s, st.step_s, st.transfer_s
    q = np.arange(1, len(t_p) + 1, dtype=float)
    b = np.arange(1, len(t_d) + 1, dtype=float)
    cap_pre = st.prefill.groups * q / t_p
    cap_dec = st.decode.groups * b / (osl * t_d)

    # the fewest prompts per pass / smallest batch whose capacity reaches x: a search on
    # the running maximum (capacity is not monotone where the kernels change shape)
    reach_pre, reach_dec = np.maximum.accumulate(cap_pre), np.maximum.accumulate(cap_dec)

    def station_times(x: float) -> tuple[float, float, int, int]:
        i = min(int(np.searchsorted(reach_pre, x)), len(q) - 1)
        j = min(int(np.searchsorted(reach_dec, x)), len(b) - 1)
        busy = min(x / cap_pre[i], 1.0)  # share of time a prefill group is in a pass
        return float(t_p[i] * (1.0 + 0.5 * busy)), float(t_d[j]), i, j

    def in_flight(x: float) -> float:
        tp_, td_, _, _ = station_times(x)
        return x * (tp_ + t_kv + osl * td_)

    x_max = float(min(cap_pre.max(), cap_dec.max()))
    clients = float(case.concurrency)
    if in_flight(x_max) <= clients:
        x = x_max
        saturated = "prefill" if cap_pre.max() <= cap_dec.max() else "decode"
    else:
        lo, hi = 0.0, x_max
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if in_flight(mid) < clients else (lo, mid)
        x, saturated = lo, ""
    tp_, td_, i, j = station_times(x)
    return DisaggregatedPoint(x, tp_ + t_kv, td_, float(q[i]), float(b[j]), saturated)


def sides(case: Case) -> tuple[Side, Side]:
    """The row's prefill and decode sides (both required)."""
    if case.prefill is None or case.decode is None:
        raise NotPredictable("posing: a disaggregated row needs both a prefill and a "
                             "decode side")
    return case.prefill, case.decode


#: How the InferenceX posings quote a row's mean TTFT (``scripts/pose_inferencex.py``).
_MEAN_TTFT = re.compile(r"mean_ttft ([0-9.eE+-]+) s")


def published_mean_ttft(quote: str) -> float | None:
    """The mean TTFT (seconds) a row's quote states, if it states one."""
    m = _MEAN_TTFT.search(quote or "")
    return float(m.group(1)) if m else None


def ttft_gap_summary(pairs: list[tuple[Case, str]]) -> dict[str, Any]:
    """How far the published mean TTFT of disaggregated rows read as their client's run
    lies above the run's own (seconds; ``pairs``: each row's case and quote, rows
    without a stated TTFT skipped): rows, median, quartiles and the median ratio.  The
    rate band does not carry this gap; a plan's caveats quote it
    (``planner.report.answer.caveats``)."""
    gaps, ratios = [], []
    for case, quote in pairs:
        published = published_mean_ttft(quote)
        if published is None:
            continue
        pre, dec = sides(case)
        ours = benchmark_run(case, pre, dec).mean_ttft_s
        gaps.append(published - ours)
        ratios.append(published / ours if ours > 0 else float("nan"))
    if not gaps:
        return {"rows": 0}
    q1, med, q3 = (float(x) for x in np.percentile(gaps, [25, 50, 75]))
    return {"rows": len(gaps), "median_s": med, "q1_s": q1, "q3_s": q3,
            "ratio_median": float(np.nanmedian(ratios))}


#: Decode expert parallelism above which a plan's decode island is "wide"
#: (:func:`wide_ep_decode_summary`).
WIDE_EP = 32


def wide_ep_decode_summary(scored: list[tuple[int, float, bool, str, str]]) -> dict[str, Any]:
    """The signed errors of the scored rows whose decode runs its experts over more
    than :data:`WIDE_EP` GPUs, beside those over ``WIDE_EP / 2`` to ``WIDE_EP``
    (``scored``: each row's decode expert parallelism, signed error, held-out flag,
    engine and GPU).  Calibration and held-out rows both count: this is a disclosure
    that a plan's caveats quote (``planner.report.answer.caveats``), not a fit.

    Why: on 2026-12-07 every disaggregated row with a 48-GPU decode worker (SGLang on
    GB200/GB300, six rows) was optimistic, by +18 % to +80 %, and two of the three
    decode rows beyond 32 GPUs by +14 % and +29 %, while the rows at 17-32 GPUs had a
    median of +5 % -- for a cause the model does not price (docs/perfmodel.md, known
    limits).  The threshold was read off those rows; every regeneration recomputes
    the figures."""
    wide = [x for x in scored if x[0] > WIDE_EP]
    narrow = [x[1] for x in scored if WIDE_EP // 2 < x[0] <= WIDE_EP]
    if not wide:
        return {"rows": 0, "threshold_ep": WIDE_EP}
    errs = [x[1] for x in wide]
    return {"threshold_ep": WIDE_EP, "rows": len(wide),
            "held_out_rows": sum(bool(x[2]) for x in wide),
            "median_signed": float(np.median(errs)), "min_signed": float(min(errs)),
            "max_signed": float(max(errs)), "engines": sorted({x[3] for x in wide}),
            "gpus": sorted({x[4] for x in wide}), "narrower_rows": len(narrow),
            "narrower_median_signed": float(np.median(narrow)) if narrow else None}


__all__ = ["NOT_PRICED", "ROUTERS", "WIDE_EP", "DisaggregatedPoint", "Side", "Stations",
           "benchmark_run", "disaggregated_point", "published_mean_ttft", "routing", "sides",
           "stations", "ttft_gap_summary", "wide_ep_decode_summary"]
