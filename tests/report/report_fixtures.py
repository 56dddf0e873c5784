"""A realistic plan dict following docs/plan-schema.md, for the report tests.

Numbers are synthetic but internally consistent: the thesis's Table 5.1 inventory (a)
(64 H200, 64 H800, 128 H20 at 4/2/1 $/h, 512 $/h budget), ten islands, 32 ranges over a
log-normal input-length pmf on lengths 0..8000, per-range rates close to the demand
mix, a sustained rate equal to the binding range's ``min(R^P_j, R^D_j) / p_j``, and a
60-point search history whose best-so-far column is the running maximum.
"""

from __future__ import annotations

import copy
import math

import numpy as np

S_DEFAULT = 8001
J_DEFAULT = 32

_ISLANDS = [  # gpu, size, role, config, batch
    ("H200", 32, "decode", "tp1-dp32-ep32", 128),
    ("H200", 32, "decode", "tp1-dp32-ep32", 128),
    ("H800", 16, "prefill", "tp1-dp16-ep16", 1),
    ("H800", 16, "prefill", "tp1-dp16-ep16", 1),
    ("H800", 16, "prefill", "tp2-dp8-ep16", 1),
    ("H800", 16, "prefill", "tp2-dp8-ep16", 1),
    ("H20", 32, "prefill", "tp1-dp32-ep32", 1),
    ("H20", 32, "prefill", "tp1-dp32-ep32", 1),
    ("H20", 32, "decode", "tp1-dp32-ep32", 64),
    ("H20", 32, "idle", "", 0),
]
_PRICES = {"H200": 4.0, "H800": 2.0, "H20": 1.0}
_COUNTS = {"H200": 64, "H800": 64, "H20": 128}


def _pmf(S: int) -> np.ndarray:
    s = np.arange(S, dtype=float)
    with np.errstate(divide="ignore"):
        logs = np.log(np.maximum(s, 1.0))
    w = np.exp(-0.5 * ((logs - math.log(900.0)) / 0.8) ** 2) / np.maximum(s, 1.0)
    w[0] = 0.0
    return w / w.sum()


def _ranges(pmf: np.ndarray, J: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-probability ranges: [start_j, end_j] inclusive lengths."""
    cdf = np.cumsum(pmf)
    cuts = np.searchsorted(cdf, np.arange(1, J) / J)
    start = np.concatenate([[1], cuts + 1])
    end = np.concatenate([cuts, [len(pmf) - 1]])
    return start, end


def make_plan_dict(*, S: int = S_DEFAULT, J: int = J_DEFAULT, history: int = 60,
                   target: bool = False, seed: int = 0) -> dict:
    """The plan dict; ``target=True`` makes it a cost-minimising (target-rate) run."""
    rng = np.random.default_rng(seed)
    pmf = _pmf(S)
    start, end = _ranges(pmf, J)
    prob = np.array([pmf[a:b + 1].sum() for a, b in zip(start, end, strict=True)])
    mid = (start + end) / 2.0

    # Per-range rates: about 140 req/s of demand, served with a few percent of mismatch.
    total = 141.0
    prefill = prob * total * (1 + 0.04 * rng.standard_normal(J))
    decode = prob * total * (1 + 0.03 * rng.standard_normal(J))
    sustained = float(np.min(np.minimum(prefill, decode) / prob))

    # Shares like an LP vertex: each island of a phase serves a contiguous block of
    # ranges (blocks of neighbours overlap by one range), time spread by demand.
    islands = []
    blocks = {ph: np.array_split(np.arange(J), sum(r == ph for *_x, r, _c, _b in _ISLANDS))
              for ph in ("prefill", "decode")}
    seen = {"prefill": 0, "decode": 0}
    for gpu, size, role, config, batch in _ISLANDS:
        shares = np.zeros(J)
        if role != "idle":
            block = blocks[role][seen[role]]
            if block.size == 0:  # fewer ranges than islands: share the last range
                block = np.array([J - 1])
            seen[role] += 1
            lo, hi = block[0], min(J - 1, block[-1] + 1)
            w = prob[lo:hi + 1] * rng.uniform(0.6, 1.4, hi - lo + 1)
            shares[lo:hi + 1] = w / w.sum()
        islands.append({"gpu": gpu, "size": size, "role": role, "config": config,
                        "batch": batch, "shares": shares.tolist()})

    used: dict[str, int] = {}
    for isl in islands:
        used[isl["gpu"]] = used.get(isl["gpu"], 0) + isl["size"]
    cost = sum(_PRICES[g] * n for g, n in used.items())
    mean_in = float((np.arange(S) * pmf).sum())
    mean_out = 240.0
    in_tps, out_tps = sustained * mean_in, sustained * mean_out

    # Per-length rates: the model serves each length at its range's rate (pmf-shaped
    # within a range); the evaluator's own-length throughput tilts it inside the range.
    rng_of = np.clip(np.searchsorted(end, np.arange(S)), 0, J - 1)
    within = pmf / np.maximum(prob[rng_of], 1e-300)
    tilt = 1 + 0.15 * (mid[rng_of] - np.arange(S)) / np.maximum(end - start + 1, 1)[rng_of]
    model_p = prefill[rng_of] * within
    model_d = decode[rng_of] * within
    per_length = {"length": list(range(S)), "pmf": pmf.tolist(),
                  "model_prefill": model_p.tolist(), "eval_prefill": (model_p * tilt).tolist(),
                  "model_decode": model_d.tolist(),
                  "eval_decode": (model_d * (2 - tilt)).tolist()}

    best_layout = [[isl["gpu"], isl["size"]] for isl in islands]
    best_layout.sort()
    hist = []
    best = 0.0 if not target else math.inf
    t = 0.0
    values = sustained * (1 - 0.5 * np.exp(-np.arange(history) / 15.0)
                          * rng.uniform(0.2, 1.0, history))
    if history:
        values[history * 3 // 4] = sustained
    for k in range(history):
        t += float(rng.uniform(0.5, 3.0))
        feasible = bool(rng.uniform() > 0.1) or k == history * 3 // 4
        value = float(values[k]) if feasible else 0.0
        c = float(cost * rng.uniform(0.7, 1.0)) if k != history * 3 // 4 else cost
        if target:
            if feasible and value >= 100.0:
                best = min(best, c)
        elif feasible:
            best = max(best, value)
        hist.append({"index": k, "wall_time": t, "layout": best_layout if
                     k == history * 3 // 4 else best_layout[: 2 + k % 7],
                     "value": value, "cost": c, "feasible": feasible,
                     "best": None if math.isinf(best) else best, "cached": k % 11 == 10,
                     "phase": "sobol" if k < 12 else "bo"})

    exact_rps = sustained * 1.031
    homogeneous = [
        {"label": "H200 only", "layout": [["H200", 32], ["H200", 32]],
         "requests_per_s": 81.2, "cost_per_hour": 256.0, "status": "optimal",
         "bound": 81.2, "gap": 0.0},
        {"label": "H800 only", "layout": [], "requests_per_s": 0.0, "cost_per_hour": 0.0,
         "status": "infeasible", "bound": None, "gap": None},
        {"label": "H20 only", "layout": [["H20", 32]] * 4, "requests_per_s": 47.5,
         "cost_per_hour": 128.0, "status": "time_limit", "bound": 49.0, "gap": 0.031},
    ]
    exact = {"label": "exact optimum", "layout": best_layout, "requests_per_s": exact_rps,
             "cost_per_hour": cost, "status": "optimal", "bound": exact_rps, "gap": 0.0}
    plan = {
        "schema_version": 1,
        "tool": {"name": "hetero-planner", "version": "0.1.0"},
        "created_utc": "2026-11-22T02:00:00Z",
        "request": {
            "inventory": {"name": "thesis-a", "source": "thesis Table 5.1 prices (2025)",
                          "gpus": [{"type": g, "count": _COUNTS[g],
                                    "price_per_hour": _PRICES[g], "min_island": 2}
                                   for g in ("H200", "H800", "H20")]},
            "model": "deepseek-v3", "workload": "azure-conv-2023",
            "budget": None if target else 512.0, "target_rps": 100.0 if target else None,
            "search": "divider", "inner": "maxrate", "seed": seed, "ranges": J,
            "slo": {"ttft_ms": None, "tpot_ms": 50.0},
            "search_options": {"batch_size": 4, "iterations": 12},
        },
        "summary": {
            "status": "optimal", "gpus_used": used, "gpus_available": dict(_COUNTS),
            "cost_per_hour": cost, "budget": None if target else 512.0,
            "requests_per_s": sustained, "prefill_rps": float(prefill.sum()),
            "decode_rps": float(decode.sum()),
            "input_tokens_per_s": in_tps, "output_tokens_per_s": out_tps,
            "tokens_per_s": in_tps + out_tps,
            "usd_per_million_output_tokens": cost / (out_tps * 3600) * 1e6,
            "usd_per_million_tokens": cost / ((in_tps + out_tps) * 3600) * 1e6,
            "d_total": float(np.abs(prefill - decode).sum()), "rho_max": 1 / sustained,
            "best_homogeneous": {"label": "H200 only", "requests_per_s": 81.2,
                                 "cost_per_hour": 256.0, "ratio": sustained / 81.2},
            "exact": {"requests_per_s": exact_rps, "bound": exact_rps, "gap": 0.0,
                      "status": "optimal"},
            "bo_gap": (exact_rps - sustained) / exact_rps,
        },
        "islands": islands,
        "ranges": {"start": start.tolist(), "end": end.tolist(), "mid": mid.tolist(),
                   "prob": prob.tolist()},
        "per_range": {"prefill_rps": prefill.tolist(), "decode_rps": decode.tolist()},
        "per_length": per_length,
        "search": {"name": "divider", "best_layout": best_layout,
                   "best_score": {"value": sustained, "cost_per_hour": cost,
                                  "feasible": True},
                   "history": hist, "settings": {"batch_size": 4, "iterations": 12,
                                                 "initial": 12, "skew_range": 5.0},
                   "evaluations": history - sum(h["cached"] for h in hist),
                   "cache_hits": sum(h["cached"] for h in hist), "wall_time": t,
                   "resumed": False},
        "baselines": {"homogeneous": homogeneous, "exact": exact},
        "timings_s": {"setup": 1.2, "search": t, "evaluate": 2.1, "homogeneous": 12.0,
                      "exact": 60.0},
    }
    return copy.deepcopy(plan)
