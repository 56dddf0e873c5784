"""Whether an SLO can be met at all on an inventory, and if not, what can be.

A plan must serve every input length of the workload within the TTFT and TPOT
ceilings.  Before searching, :func:`check_slo` asks, for each length with demand,
whether *some* island of the inventory meets both ceilings there (the planner's own
island tables at every power-of-two size of each type and at its whole count: the
largest island is not always the fastest -- past a few nodes expert parallelism grows
with the island and its all-to-all slows a lone prompt down).  If some
lengths can be served by none, no plan exists; the error names what is achievable --
per GPU type, the lowest TTFT for the longest prompt (one prompt alone, the fastest
configuration of the largest island) and the lowest TPOT (one sequence, at the median
context) -- so the user sees how far the ceilings are from the hardware.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from perfmodel.launch import vendor_violation
from perfmodel.parallel import ConfigGrid, enumerate_configs
from perfmodel.timing import IslandTiming
from planner.context.evaluate import LayoutEvaluator
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


def probe_sizes(count: int) -> list[int]:
    """Island sizes the SLO check tries for a type with ``count`` GPUs."""
    sizes, g = {count}, 1
    while g < count:
        sizes.add(g)
        g *= 2
    return sorted(sizes)


def _sizes(ev: LayoutEvaluator, name: str, count: int) -> list[int]:
    """:func:`probe_sizes`, at server granularity only those a plan may use (whole
    servers or a share of one, planner.fleet.servers) and the largest of them."""
    shapes = ev.context.servers
    if not shapes or name not in shapes:
        return probe_sizes(count)
    shape = shapes[name]
    top = shape.snap_down(min(count, shape.gpus))
    return sorted({g for g in probe_sizes(count) if shape.allowed(g)} | ({top} if top else set()))


def served_lengths(ev: LayoutEvaluator, sizes: Mapping[str, Iterable[int]]
                   ) -> dict[str, np.ndarray]:
    """Per phase ("prefill", "decode"), the input lengths some island of ``sizes``
    ({GPU type: island sizes}) serves within the context's SLO; a colocated island, where
    the context offers them, serves both phases."""
    n = len(ev.context.workload.pmf)
    ok = {"prefill": np.zeros(n, bool), "decode": np.zeros(n, bool)}
    for name, options in sizes.items():
        for g in options:
            table = ev.island(name, g)
            both = ev.colocated_table(name, g) if ev.context.colocated else None
            for phase in ok:
                ok[phase] |= np.asarray(getattr(table, phase).rps)[:n] > 0
                if both is not None:
                    ok[phase] |= np.asarray(both.rps)[:n] > 0
    return ok


def unmet_slo(ev: LayoutEvaluator, inventory: Inventory) -> str | None:
    """Why no plan can meet the context's SLO on ``inventory`` (None if some can)."""
    c = ev.context
    slo = c.slo
    if slo.ttft_ms is None and slo.tpot_ms is None:
        return None
    pmf = c.workload.pmf
    need = pmf > 0
    ok = served_lengths(ev, {e.name: _sizes(ev, e.name, e.count)
                             for e in inventory.entries if e.count >= 1})
    missing = need & ~(ok["prefill"] & ok["decode"])
    if not missing.any():
        return None
    lengths = np.flatnonzero(missing)
    longest = int(np.flatnonzero(need).max())
    median = int(c.workload.quantile(0.5))
    context = median + 0.5 * float(c.workload.decode_residence)
    best = []
    for e in inventory.entries:
        if e.count < 1:
            continue
        ttft, tpot = (min(x) for x in zip(*(best_latency_ms(ev, e.name, g, longest, context)
                                             for g in _sizes(ev, e.name, e.count)),
                                          strict=True))
        best.append(f"{e.name} (up to {e.count}): TTFT {_ms(ttft)} for a {longest:,}-token "
                    f"prompt, TPOT {_ms(tpot)}")
    ceilings = ", ".join(f"{name} <= {v:g} ms" for name, v in
                         (("TTFT", slo.ttft_ms), ("TPOT", slo.tpot_ms)) if v is not None)
    if slo.ttft_ms is not None and c.table_slo.ttft_ms != slo.ttft_ms:
        ceilings += (f"; a prefill pass gets {c.table_slo.ttft_ms:g} ms of the TTFT, the "
                     "rest is left for waiting")
    share = float(pmf[missing].sum())
    return (f"the SLO ({ceilings}) cannot be met for {100 * share:.3g}% of the workload's "
            f"requests (input lengths {int(lengths.min()):,}-{int(lengths.max()):,}) on any "
            f"island of this inventory; best achievable: " + "; ".join(best)
            + ". Raise --ttft/--tpot, add faster GPUs, or plan with --no-slo")


def _ms(x: float) -> str:
    return "no configuration runs" if not np.isfinite(x) else f"{x:,.0f} ms" if x >= 10 \
        else f"{x:.1f} ms"


__all__ = ["best_latency_ms", "served_lengths", "unmet_slo"]
