"""Whether an SLO can be met at all on an inventory, and if not, what can be.

A plan promises that ``SLO_ATTAINMENT`` (99 %) of requests meet the TTFT and TPOT
ceilings.  Before searching, :func:`unmet_slo` asks, for each length with demand,
whether *some* island of the inventory meets both ceilings there (the planner's own
island tables at every power-of-two size of each type and at its whole count: the
largest island is not always the fastest -- past a few nodes expert parallelism grows
with the island and its all-to-all slows a lone prompt down).

Lengths no island can serve within the ceilings (typically the longest prompts, whose
one prefill pass cannot fit the share ``TTFT_PASS_SHARE`` of the TTFT it gets) spend
the plan's miss allowance.  Up to ``SLO_EXEMPT_SHARE`` of the requests
(planner.core.defaults) they are served best-effort -- the island tables drop the
ceilings at exactly those lengths (``perfmodel.SLO.best_effort``), so every length is
still served -- and recorded on the planning context (:class:`SloExemption`,
:func:`with_slo_allowance`, which ``PlanningContext.for_request`` applies; they live in
``planner.context.evaluate`` beside it) for plan.json and the report.  Beyond it no plan can keep
the promise: the error names the limit (the share of the TTFT a prefill pass gets) and
what is achievable -- per GPU type, the fastest prefill pass for the longest prompt
(one prompt alone, the fastest configuration of the largest island) against that pass
budget, and the lowest TPOT (one sequence, at the median context) -- so the user sees
how far the ceilings are from the hardware.
"""

from __future__ import annotations

import numpy as np

from perfmodel.launch import vendor_violation
from perfmodel.parallel import ConfigGrid, enumerate_configs
from perfmodel.timing import IslandTiming
from planner.context.evaluate import (
    LayoutEvaluator,
    PlanningContext,
    SloExemption,
    _pct,
    inventory_sizes,
    island_sizes,
    probe_sizes,
    served_lengths,
    served_together,
    slo_allowance,
    strict_evaluator,
    unserved_lengths,
    with_slo_allowance,
    within_allowance,
)
from planner.core.defaults import SLO_EXEMPT_SHARE
from planner.fleet.inventory import Inventory


def best_latency_ms(ev: LayoutEvaluator, gpu: str, size: int, prompt: int, context: float
                    ) -> tuple[float, float]:
    """(lowest TTFT of one ``prompt``-token request alone, lowest TPOT of one sequence at
    ``context``) over the configurations of an island of ``size`` ``gpu``s that fit."""
    c = ev.context
    g = c.gpus[gpu]
    if vendor_violation(c.calib.engine, g):
        return float("inf"), float("inf")
    configs = enumerate_configs(size, c.model, c.calib.engine, g.gpus_per_domain)
    if not configs:
        return float("inf"), float("inf")
    grid = ConfigGrid.of(configs)
    s = np.array([[float(max(prompt, 1))]])
    timing = IslandTiming(g, c.model, grid.tp, grid.dp, grid.ep, c.calib)
    ttft = timing.prefill_s(s, c.workload.prefix_hit_rate)
    tpot = timing.steps(np.ones((len(grid), 1))).step_time(float(context))
    fits = timing.weights_fit[:, 0]
    if not fits.any():
        return float("inf"), float("inf")
    return (float(np.min(np.asarray(ttft)[fits])) * 1e3,
            float(np.min(np.asarray(tpot).reshape(len(grid), -1)[fits])) * 1e3)


def pass_budget_ms(ctx: PlanningContext) -> float | None:
    """The time one prefill pass may take (``TTFT_PASS_SHARE`` of the TTFT ceiling;
    the whole ceiling in the thesis's mode), None without a TTFT ceiling."""
    return ctx.table_slo.ttft_ms


def ceilings_text(ctx: PlanningContext) -> str:
    """"TTFT <= 1000 ms, TPOT <= 30 ms" (or "no latency ceiling")."""
    slo = ctx.slo
    return ", ".join(f"{name} <= {v:g} ms" for name, v in
                     (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms)) if v is not None) \
        or "no latency ceiling"


def pass_share_text(ctx: PlanningContext) -> str:
    """The real prefill limit, or "" when a pass gets the whole TTFT (thesis mode)."""
    ttft, budget = ctx.slo.ttft_ms, pass_budget_ms(ctx)
    if ttft is None or budget is None or budget == ttft:
        return ""
    return (f"a prefill pass gets {budget / ttft:.0%} of the TTFT ({budget:,g} ms of "
            f"{ttft:,g} ms); the rest is left for queueing and the KV transfer")


def unmet_slo(ev: LayoutEvaluator, inventory: Inventory) -> str | None:
    """Why no plan can meet the context's SLO on ``inventory`` (None if some can: every
    length meets it on some island, or those that cannot are within the allowance and
    served best-effort)."""
    c = ev.context
    slo = c.slo
    if slo.ttft_ms is None and slo.tpot_ms is None:
        return None
    pmf = c.workload.pmf
    need = pmf > 0
    strict = strict_evaluator(ev)
    missing, _ok = unserved_lengths(strict, inventory)
    if not missing.any():
        return None
    share = float(pmf[missing].sum())
    lengths = np.flatnonzero(missing)
    span = f"{int(lengths.min()):,}-{int(lengths.max()):,}"
    if within_allowance(share):
        if c.slo_exempt is not None or slo_allowance(strict, inventory) is not None:
            return None
        return (f"no islands of this inventory serve prompts of {span} tokens "
                f"({_pct(share)} of the workload's requests) even outside the SLO "
                f"({ceilings_text(c)}): their KV cache does not fit beside {c.model.name}'s "
                "weights on any island; add GPUs with more memory or more GPUs per type")
    longest = int(np.flatnonzero(need).max())
    median = int(c.workload.quantile(0.5))
    context = median + 0.5 * float(c.workload.decode_residence)
    entries = [e for e in inventory.entries if e.count >= 1]
    best = {e.name: [best_latency_ms(strict, e.name, g, longest, context)
                     for g in island_sizes(strict, e.name, e.count)] for e in entries}
    budget = pass_budget_ms(c)
    limit = pass_share_text(c)
    parts = []
    if slo.ttft_ms is not None:
        against = f" against the {budget:,g} ms pass budget" if budget != slo.ttft_ms else ""
        parts.append(f"fastest prefill pass for a {longest:,}-token prompt{against}: "
                     + ", ".join(f"{e.name} (up to {e.count}) "
                                 f"{_ms(min(t for t, _ in best[e.name]))}" for e in entries))
    parts.append("lowest TPOT: " + ", ".join(f"{e.name} (up to {e.count}) "
                                             f"{_ms(min(t for _, t in best[e.name]))}"
                                             for e in entries))
    hint = _ttft_hint(strict, inventory) if (missing & ~_ok["prefill"]).any() else ""
    return (f"the SLO ({ceilings_text(c)}) cannot be met for {_pct(share)} of the "
            f"workload's requests (input lengths {span}) on any islands this inventory can "
            f"hold together, more than the {_pct(SLO_EXEMPT_SHARE)} a plan may leave to "
            "miss it"
            + (f": {limit}" if limit else "") + "; best achievable: " + "; ".join(parts)
            + ". " + hint + "Raise --ttft/--tpot, add faster GPUs, or plan with --no-slo")


def _ttft_hint(ev: LayoutEvaluator, inventory: Inventory) -> str:
    """The TTFT ceiling below which even the prompts within the allowance's quantile
    cannot be prefilled in one pass on any island ("" without a pass budget)."""
    c = ev.context
    budget = pass_budget_ms(c)
    if budget is None or c.slo.ttft_ms is None:
        return ""
    length = int(c.workload.quantile(1.0 - SLO_EXEMPT_SHARE))
    sizes = inventory_sizes(ev, inventory)
    decoders = {name: [g for g in options if ev.island(name, g).decode.feasible]
                for name, options in sizes.items()}
    counts = {e.name: e.count for e in inventory.entries}

    def beside(name: str, g: int) -> bool:  # some decode island fits beside it
        return any(other != name or g + h <= counts[name]
                   for other, options in decoders.items() for h in options)

    fastest = min((best_latency_ms(ev, name, g, length, 1.0)[0]
                   for name, options in sizes.items() for g in options if beside(name, g)),
                  default=float("inf"))
    if not np.isfinite(fastest):
        return ""
    need = fastest * c.slo.ttft_ms / budget
    return (f"Serving {_pct(1 - SLO_EXEMPT_SHARE)} of requests (prompts up to {length:,} "
            f"tokens) needs --ttft of about {need:,.0f} ms or more. ")


def _ms(x: float) -> str:
    return "no configuration runs" if not np.isfinite(x) else f"{x:,.0f} ms" if x >= 10 \
        else f"{x:.1f} ms"


__all__ = ["SloExemption", "best_latency_ms", "ceilings_text", "pass_budget_ms",
           "pass_share_text", "probe_sizes", "served_lengths", "served_together",
           "slo_allowance", "unmet_slo", "with_slo_allowance", "within_allowance"]
