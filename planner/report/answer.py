"""What a buyer reads first: the answer, how sure it is, the islands grouped, the
assumptions -- and a plain explanation of every term the report uses.

Pure functions of the plan dict, shared by ``report.md`` and ``report.html`` (the
terminal summary keeps its own compact form).  Nothing here is a new figure: every
number is the plan's own (one capacity, the headline that held in simulation) or the
shipped validation summary of the perf model (``perfmodel.validation``,
docs/validation.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from perfmodel.validation import shipped_summary
from planner.capacity_band import band_text
from planner.report.facts import (
    DASH,
    best_alternative,
    fmt,
    gpu_lines,
    gpus_per_node,
    homogeneous_ratio,
    island_kinds,
    length,
    money,
    num,
    parallel_text,
    pct,
    prices,
    served_span,
    server_text,
    servers_used,
)

Table = tuple[list[str], list[list[str]]]

#: One-line plain explanations, shown on hover in report.html and listed under "Terms".
GLOSSARY: dict[str, str] = {
    "island": "a group of GPUs of one type that serve requests together as one model "
              "replica (one engine instance)",
    "prefill": "the first phase of a request: the whole prompt is read in one pass; it "
               "decides the time to the first token",
    "decode": "the second phase: the answer is generated one token per step; it decides "
              "the time between tokens",
    "colocated": "an island that runs both phases of its requests (aggregated serving)",
    "TTFT": "time to first token: from a request's arrival to the first output token",
    "TPOT": "time per output token after the first (the inverse of the streaming speed)",
    "SLO": "service-level objective: the latency ceilings the plan must keep (TTFT and "
           "TPOT)",
    "p50 / p90": "the latency that half / nine in ten of the requests stay under",
    "requests/s": "the sustained rate of requests the fleet completes on this workload's "
                  "mix of prompt and answer lengths while meeting the SLO",
    "parallelism": "how an island splits the model over its GPUs: tp = tensor-parallel "
                   "ways, dp = data-parallel attention groups, ep = expert-parallel ways "
                   "(MoE models); e.g. tp8-dp2-ep16",
    "batch": "the number of requests an island's engine decodes together in one step",
    "input lengths served": "the prompt lengths (tokens) the router sends to an island; "
                            "the plan splits the lengths into ranges and gives each range "
                            "to the islands that serve it best",
    "exact optimum": "the best plan the performance model allows, proven by a solver "
                     "(mixed-integer program); the search's plan is compared with it",
    "proven within": "the solver stopped with a certificate that no plan is better than "
                     "this one by more than the stated percentage",
    "closed loop": "the plan simulated request by request (queues, batching, KV-cache "
                   "transfers); its capacity is the rate that holds there at the SLO",
}


def _slo_text(plan: Mapping[str, Any]) -> str:
    slo = plan["request"].get("slo") or {}
    parts = [f"{k} ≤ {fmt(slo.get(f))} ms" for k, f in (("TTFT", "ttft_ms"),
                                                         ("TPOT", "tpot_ms")) if slo.get(f)]
    return " and ".join(parts) if parts else "no latency ceiling"


def _latency_text(plan: Mapping[str, Any]) -> str | None:
    """Latency "at this load": simulated at the headline when the plan went through the
    closed loop, else the perf model's prediction (and said so)."""
    sim = (plan["summary"].get("closed_loop") or {}).get("latency_at_headline_ms")
    if sim:
        return (f"simulated at this load: TTFT p50 {fmt(sim.get('ttft_p50_ms'))} ms, p90 "
                f"{fmt(sim.get('ttft_p90_ms'))} ms; TPOT p50 {fmt(sim.get('tpot_p50_ms'))} "
                f"ms, p90 {fmt(sim.get('tpot_p90_ms'))} ms")
    lat = plan["summary"].get("latency_ms") or {}
    if not lat:
        return None
    return (f"predicted by the perf model (not simulated): TTFT p50 "
            f"{fmt(lat.get('ttft_p50'))} ms, p90 {fmt(lat.get('ttft_p90'))} ms; TPOT p50 "
            f"{fmt(lat.get('tpot_p50'))} ms, p90 {fmt(lat.get('tpot_p90'))} ms")


def promise_text(loop: Mapping[str, Any]) -> str:
    """How the headline was verified, in one sentence (the closed loop's record)."""
    seeds = loop.get("seeds") or []
    by_seed = [num(x) for x in loop.get("slo_attainment_by_seed") or []]
    text = (f"in simulation with the '{loop.get('router', 'range')}' router, "
            f"{pct(min(by_seed) if by_seed else math.nan)} of requests meet the SLO at this "
            f"rate (the lowest of {len(by_seed)} seeds, {len(seeds) - 1} of them never used "
            "by the search)")
    ref = num(loop.get("reference_router_attainment"))
    if math.isfinite(ref):
        text += f"; under the '{loop.get('reference_router')}' router {pct(ref)}"
    sat = num(loop.get("saturation_requests_per_s"))
    if math.isfinite(sat):
        text += (f"; saturation throughput {fmt(sat)} requests/s (the most it completes, "
                 "SLO or not)")
    return text


def confidence(plan: Mapping[str, Any]) -> str:
    """How far to trust the capacity: the simulation check of this plan, and the perf
    model's error on published measurements (overall and on the plan's GPU types)."""
    used = [ln.gpu for ln in gpu_lines(plan) if ln.used]
    v = shipped_summary()
    mine = [f"{g} {pct(v['by_gpu'][g]['median_abs'], 0)}" for g in used
            if g in v.get("by_gpu", {})]
    held = v.get("held_out") or {}
    model = (f"the performance model predicts {v['rows']} published serving measurements "
             f"on {v['gpus']} GPU types with a median error of {pct(v['median_abs'], 0)} "
             f"(worst {pct(v['worst_abs'], 0)}"
             + (f"; on the {held['rows']} held out from any change to it: median "
                f"{pct(held['median_abs'], 0)}, worst {pct(held['worst_abs'], 0)}"
                if held.get("rows") else "")
             + (f"; on this plan's GPUs: {', '.join(mine)}" if mine else "")
             + "; docs/validation.md)")
    s = plan["summary"]
    loop = s.get("closed_loop")
    if not loop:
        return f"not simulated (--no-sim-check): this is the perf model's figure; {model}"
    analytic = num(loop.get("analytic_requests_per_s"))
    ratio = num(s["requests_per_s"]) / analytic if analytic > 0 else math.nan
    held = (f"{promise_text(loop)}; the perf model alone predicts {fmt(analytic)} "
            f"requests/s (×{fmt(ratio)} after simulation)")
    return f"{held}; {model}"


def answer(plan: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The answer in (label, sentence) pairs: what to buy, what it costs, the capacity
    to budget against with its latency, how sure we are, the alternative."""
    s = plan["summary"]
    req = plan["request"]
    lines = gpu_lines(plan)
    servers = servers_used(plan)

    def bought(ln) -> str:
        k = servers.get(ln.gpu)
        return f"{ln.used} × {ln.gpu}" + (f" ({k} server{'s' if k > 1 else ''})" if k else "")

    buy = ", ".join(bought(ln) for ln in lines if ln.used) or "nothing"
    budget = num(s.get("budget", req.get("budget")))
    of_budget = (f" of the {money(budget)} budget ({pct(num(s['cost_per_hour']) / budget, 0)})"
                 if budget > 0 else "")
    out = [("Buy or rent", buy),
           ("It costs", f"{money(s['cost_per_hour'])}{of_budget}; "
                        f"{money(s.get('usd_per_million_tokens'), '')} per million tokens")]
    capacity = f"{fmt(s['requests_per_s'])} requests/s"
    band = band_text(plan)
    if band:
        capacity += f" ({band} from the perf model's held-out errors on its islands' classes)"
    if req.get("plan_at") == "p10":
        capacity += ", planned at the pessimistic (p10) bound of every island"
    capacity += (f" at the SLO ({_slo_text(plan)}), "
                 f"{fmt(s.get('tokens_per_s'))} tokens/s")
    lat = _latency_text(plan)
    out.append(("Capacity to budget against", capacity + (f"; {lat}" if lat else "")))
    target = num(req.get("target_rps"))
    if math.isfinite(target):
        loop = s.get("closed_loop") or {}
        held = num(loop.get("target_attainment"))
        if math.isfinite(held):
            text = (f"{fmt(target)} requests/s: met -- {pct(held)} of requests meet the "
                    "SLO at the target rate (the lowest of the simulated seeds)")
        else:
            met = num(s["requests_per_s"]) >= target * (1 - 1e-9)
            text = (f"{fmt(target)} requests/s: {'met' if met else 'NOT met'} on the perf "
                    "model" + ("" if loop else " (not simulated)"))
        out.append(("Target", text))
    out.append(("How sure", confidence(plan)))
    chosen = s.get("answer_from")
    if chosen:
        out.append(("Why this plan", str(chosen.get("why"))))
    alt = best_alternative(plan)
    if alt is not None:
        ratio = homogeneous_ratio(plan)
        if math.isfinite(target):
            text = (f"the cheapest single-type plan that holds the target is "
                    f"{alt['label']} at {money(alt['cost_per_hour'])}")
        else:
            text = (f"{fmt(ratio)}× the requests/s of the best single-type plan for the "
                    f"same budget ({alt['label']}: {fmt(alt.get('requests_per_s'))} "
                    "requests/s at the SLO")
            text += (f", {money(alt.get('cost_per_hour'))}; all that is available)"
                     if alt.get("capped_by_availability") else ")")
        out.append(("Instead of one GPU type", text))
    return out


def island_groups(plan: Mapping[str, Any]) -> Table:
    """Identical islands (same GPU, size, role, parallelism and batch) as one row:
    ``30 × 2 H100-SXM, prefill, tp2-dp1-ep1``, with their total rate and cost and the
    input lengths the group serves together."""
    p = prices(plan)
    rows = []
    for members in island_kinds(plan):
        first = members[0]
        gpu, size, role = first.gpu.name, first.size, first.role
        config, batch = first.config, str(first.batch)
        idle = role == "idle"
        rate = sum(num(i.requests_per_s) for i in members)
        lat = [num(i.ttft_ms if role != "decode" else i.tpot_ms) for i in members]
        lat = [x for x in lat if math.isfinite(x)]
        latency = DASH if not lat else \
            f"{'TTFT' if role != 'decode' else 'TPOT'} {fmt(max(lat))} ms"
        spans = [sp for sp in (served_span(i, plan) for i in members) if sp is not None]
        served = DASH if not spans else \
            f"{length(min(sp[0] for sp in spans))}–{length(max(sp[1] for sp in spans))}"
        on = server_text(gpu, size, plan)
        rows.append([f"{len(members)} × {size} {gpu}" + (f" ({on})" if on else ""), role,
                     DASH if idle else parallel_text(config, plan), DASH if idle else batch,
                     fmt(rate), latency, money(p.get(gpu, math.nan) * size * len(members)),
                     served])
    return (["islands", "role", "parallelism", "batch", "requests/s", "latency (slowest)",
             "cost", "input lengths served"], rows)


def _transfer_caveats(plan: Mapping[str, Any]) -> list[str]:
    """One line per GPU type of the plan whose kernels come from another vendor's part
    (perfmodel.kernels.transfer.provenance): its figures are not validated for it."""
    from perfmodel.errors import InputError
    from perfmodel.hardware import get_gpu
    from perfmodel.kernels.transfer import provenance

    out = []
    for name, used in (plan["summary"].get("gpus_used") or {}).items():
        if not used:
            continue
        try:
            p = provenance(get_gpu(str(name)))
        except InputError:  # a GPU defined from its datasheet in the inventory
            continue
        if p.cross_vendor:
            out.append(f"{p.sentence()}. Its capacity here is the performance model's "
                       "borrowed estimate, with no published measurement of its vendor "
                       "behind it; check it on the hardware before buying.")
    return out


def disaggregated_ttft_caveat(ttft_ms: float | None, roles: set[str]) -> list[str]:
    """One line when islands of ``roles`` include prefill or decode ones and a TTFT
    ceiling ``ttft_ms`` is set: on the held-out published disaggregated systems the
    measured TTFT lay above the perf model's by the shipped gap
    (``perfmodel.validation_disagg.ttft_gap_summary``), which neither the simulation
    nor the capacity band carries."""
    if not ttft_ms or not roles & {"prefill", "decode"}:
        return []
    gap = shipped_summary().get("disaggregated_ttft_gap") or {}
    if not gap.get("rows"):
        return []
    return [f"Prefill and decode run on separate islands here. On {gap['rows']} published "
            "prefill/decode-split systems held out from the perf model's calibration, the "
            f"measured mean TTFT was above the model's by a median {gap['median_s']:.1f} s "
            f"(quartiles {gap['q1_s']:.1f}-{gap['q3_s']:.1f} s), for causes the model "
            "does not price (docs/perfmodel.md, known limits); the capacity band covers "
            "the rate, not this. Measure TTFT on the deployment before promising the "
            f"{fmt(ttft_ms)} ms ceiling."]


def wide_ep_decode_caveat(islands: Sequence[Mapping[str, Any]],
                          where: str = "here") -> list[str]:
    """One line when an island that decodes spreads its experts over more than
    ``WIDE_EP`` GPUs: the perf model's errors on the published rows of such decodes
    (``perfmodel.validation_disagg.wide_ep_decode_summary``), which lean optimistic for
    a cause the model does not price (docs/perfmodel.md, known limits)."""
    from perfmodel.parallel import ParallelConfig
    from perfmodel.validation_disagg import WIDE_EP

    widest = 0
    for isl in islands:
        if isl.get("role") == "prefill":
            continue
        try:
            widest = max(widest, ParallelConfig.from_label(str(isl.get("config"))).ep)
        except ValueError:  # a pipeline island's stages: no expert layout to read
            continue
    wide = shipped_summary().get("wide_ep_decode") or {}
    if widest <= WIDE_EP or not wide.get("rows"):
        return []
    return [f"A decoding island {where} spreads its experts over {widest} GPUs. On the "
            f"{wide['rows']} published decodes wider than {WIDE_EP} GPUs "
            f"({', '.join(wide['engines'])} on {', '.join(wide['gpus'])}; "
            f"{wide['held_out_rows']} held out from calibration) the perf model was "
            f"optimistic by a median {100 * wide['median_signed']:+.0f} % "
            f"({100 * wide['min_signed']:+.0f} to {100 * wide['max_signed']:+.0f} %), "
            f"against {100 * (wide['narrower_median_signed'] or 0.0):+.0f} % at "
            f"{WIDE_EP // 2 + 1}-{WIDE_EP} GPUs, for a cause it does not price "
            "(docs/perfmodel.md, known limits); the capacity band does not carry it. "
            "Plan with --plan-at p10 or measure such an island before relying on its "
            "rate."]


def caveats(plan: Mapping[str, Any]) -> list[str]:
    """What the figures assume and what they leave out, from this plan's inputs."""
    req = plan["request"]
    s = plan["summary"]
    loop = s.get("closed_loop") or {}
    inv = req["inventory"]
    out = [f"The capacity is for the workload '{req.get('workload')}': its mix of prompt "
           "and answer lengths and its prefix-cache hit rate. Longer prompts or answers "
           "lower it; plan again with the new workload.",
           f"Prices and availability are the inventory's ('{inv.get('name')}'; see Prices "
           "below); the plan spends at most the budget and never more GPUs than listed.",
           "The performance model prices the engine named under Inputs from NVIDIA's "
           "measured kernels; another engine or release runs at a different speed.",
           "The simulation models queueing, batching and KV-cache transfers over the "
           "network tiers; it does not model GPU failures, restarts, stragglers or load "
           "spikes beyond the workload's arrival process."]
    out += _transfer_caveats(plan)
    out += disaggregated_ttft_caveat((req.get("slo") or {}).get("ttft_ms"),
                                     {str(i.get("role")) for i in plan.get("islands") or []})
    out += wide_ep_decode_caveat(plan.get("islands") or [])
    exempt = s.get("slo_exempt")
    if exempt:
        lo, hi = exempt["lengths"]
        span = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
        out.insert(0, f"{100 * exempt['share']:.3g}% of requests (prompts of {span} tokens) "
                      "cannot meet the SLO on any island of this inventory "
                      f"({exempt['reason']}); they are served and count as misses "
                      "against the 1% allowance.")
    if not loop:
        out.insert(0, "The capacity was NOT checked in simulation (--no-sim-check): it is "
                      "the performance model's figure.")
    elif loop.get("bound") == "slo":
        out.insert(0, "At the perf model's capacity the SLO did not hold in simulation; "
                      "the capacity is the highest rate at which it held, below the "
                      "saturation throughput.")
    if not (req.get("slo") or {}).get("ttft_ms") and not (req.get("slo") or {}).get("tpot_ms"):
        out.append("No latency ceiling was set: the plan maximises throughput only, so "
                   "latencies can be long.")
    nodes = gpus_per_node(plan)
    for g in inv.get("gpus") or []:
        node, count = nodes.get(str(g.get("type"))), int(g.get("count") or 0)
        if node and count % node:
            out.append(f"The inventory's {count} {g['type']} are {count // node} servers of "
                       f"{node} and one partial server of {count % node}: only islands that "
                       "are a share of a server can use the partial one.")
    if req.get("island_granularity") == "gpu" and not req.get("thesis"):
        out.append("Islands were sized GPU by GPU (--island-granularity gpu): some may "
                   "straddle servers or share one with another GPU type, which no "
                   "deployment can do; plan at server granularity to deploy.")
    if req.get("thesis"):
        out.append("Thesis mode: the figures follow seed 002's formulation (range "
                   "midpoints, no KV-transfer limit), for reproducing its tables.")
    return out


__all__ = ["GLOSSARY", "answer", "caveats", "confidence", "disaggregated_ttft_caveat",
           "island_groups", "wide_ep_decode_caveat"]
