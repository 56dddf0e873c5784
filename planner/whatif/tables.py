"""A study's figures as rows and tables, and the words around them: shared by the
terminal (planner.cli.whatif), ``whatif.md``, ``whatif.csv`` and ``whatif.html``.

Pure functions of a :class:`~planner.whatif.run.WhatIfResult`; nothing here computes a
new figure.
"""

from __future__ import annotations

import math
from typing import Any, cast

from planner.whatif.pareto import STUDY_TITLES, comparable_points, pareto_points
from planner.whatif.request import plan_command, plan_request
from planner.whatif.run import WhatIfResult, scenario_label
from planner.whatif.scenarios import MIX
from planner.whatif.solve import CORRECTED, Outcome

#: What each study asks, in one plain line (whatif.html puts it under the study's title).
STUDY_INTROS: dict[str, str] = {
    "base": "The plan every other scenario is compared with: the inventory's GPU types "
            "mixed at the base budget.",
    "budget": "The same question at several budgets ($/h): what each budget buys with all "
              "GPU types mixed, and with each type alone.",
    "equal_cost": "Equal cost: for the same $/h, the mixed fleet against a fleet of each "
                  "single GPU type (heterogeneous vs homogeneous).",
    "price": "One GPU type's price changed (as a factor of its inventory price), "
             "everything else as in the base.",
    "add": "The inventory plus one more GPU type (its count and price), at the base budget.",
    "remove": "The inventory without one GPU type, at the base budget.",
    "workload": "The base inventory and budget serving another workload or a mixture of "
                "workloads; requests/s are of that workload, not comparable one to one "
                "with the base.",
    "marginal": "Marginal value: what the next X $/h is best spent on. Each option spends "
                "X more per hour; the gain is the extra requests/s over the base.",
}

#: One-line plain explanations of the terms a procurement reader may not know.
GLOSSARY: dict[str, str] = {
    "scenario": "one what-if case (a budget, the GPU types on offer with their prices, a "
                "workload), solved for its best layout",
    "base": "the scenario every other is compared with: the inventory's types mixed at "
            "the base budget",
    "mix": "all the GPU types on offer may be combined in one fleet (heterogeneous)",
    "<type> only": "a fleet of that single GPU type (homogeneous)",
    "availability": "how many GPUs of each type a scenario may use: the inventory's "
                    "counts, or as many as the budget buys on the market (unlimited)",
    "requests/s": "the capacity `planner plan` promises for the scenario: the rate at "
                  "which its closed loop finds the latency targets (SLO) hold in "
                  "simulation (in a sampled study some are corrected analytic figures; "
                  "see 'from')",
    "p10–p90": "the error band of requests/s: the perf model's 10th-90th percentile "
               "errors on held-out published measurements of its islands' classes "
               "(GPU family x engine x phase; docs/validation.md)",
    "analytic": "the performance model's capacity of the same plan, before the closed "
                "loop (`planner plan`'s analytic figure)",
    "from": "where a scenario's requests/s come from: its own closed loop, or its "
            "analytic figure corrected by the ratio measured on a sample of scenarios",
    "closed loop": "`planner plan`'s last step: the plan is simulated and its capacity "
                   "is the rate at which the SLO holds there",
    "vs base": "change of requests/s relative to the base scenario",
    "vs mix": "change of requests/s relative to the mix at the same budget",
    "$/h used": "what the GPUs of the chosen layout cost per hour; below the budget when "
                "more GPUs would not help or are not available",
    "$/M out tok": "dollars per million output (generated) tokens at the sustained rate",
    "status": "optimal: the solver proved no better layout exists in the performance "
              "model (within its tolerance); time limit or work limit: the best layout "
              "found when the solver stopped, with the gap to the proven bound; no plan: "
              "`planner plan` finds none (or none holds the SLO in simulation); answer: "
              "the closed loop chose `planner plan`'s single-type alternative",
    "budget sweep": "the same question asked at several budgets",
    "equal cost": "the mixed fleet against each single GPU type for the same $/h",
    "price sweep": "one GPU type's price changed, to see how sensitive the answer is to it",
    "factor": "the swept price divided by the inventory's price of that type",
    "marginal value": "what the next X $/h buys: the extra requests/s from spending X more "
                      "per hour, for each way of spending it",
    "gain, requests/s": "requests/s of the option minus those of the base",
    "per extra $/h": "the gain divided by the extra $/h: requests/s bought per extra dollar "
                     "per hour",
    "Pareto front": "the scenarios no other comparable scenario beats on both cost and "
                    "throughput: nothing cheaper serves as many requests/s",
    "island": "a group of GPUs of one type that serve requests together as one model "
              "replica",
    "SLO": "service-level objective: the latency ceilings (time to first token, time per "
           "output token) every request must keep",
    "length ranges": "the prompt-length buckets the planner assigns to islands; finer "
                     "ranges are more exact and slower to solve",
    "MIP gap": "how far, at most, the solver's answer may be below the best possible "
               "(a proven bound)",
}

#: Table headers explained on hover (whatif.html).
COLUMN_TERMS: dict[str, str] = {
    h: GLOSSARY[h] for h in ("requests/s", "p10–p90", "analytic", "from", "vs base", "vs mix",
                             "$/h used", "$/M out tok", "status", "factor",
                             "gain, requests/s", "per extra $/h")
} | {"option": f"mix: {GLOSSARY['mix']}; <type> only: {GLOSSARY['<type> only']}",
     "GPUs": "the GPUs the best layout uses (of those available)",
     "spend +X $/h on": "one way of spending the extra money per hour"}


def gpus_text(o: Outcome) -> str:
    return " + ".join(f"{n} {g}" for g, n in o.gpus.items()) or "none"


def islands_text(o: Outcome) -> str:
    return "; ".join(f"{r} {n} {g}" for (g, n), r in zip(o.layout, o.roles, strict=True))


def _mix_value(result: WhatIfResult, o: Outcome) -> float | None:
    if o.scenario.study not in ("budget", "equal_cost"):
        return None
    for p in result.outcomes:
        s = p.scenario
        if (s.study == o.scenario.study and s.budget == o.scenario.budget
                and s.option == MIX):
            return p.requests_per_s
    return None


def _ratio(a: float, b: float | None) -> float | None:
    return a / b if b and b > 0 else None


def rows(result: WhatIfResult) -> list[dict[str, Any]]:
    """One flat record per scenario (the CSV's rows)."""
    front = set(pareto_points(result))
    base = result.base.requests_per_s
    out = []
    for k, o in enumerate(result.outcomes):
        s = o.scenario
        out.append({
            "study": s.study, "scenario": s.name, "option": s.option, "workload": s.workload,
            "budget": s.budget, "availability": result.spec.availability,
            "requests_per_s": o.requests_per_s, "capacity": o.capacity,
            "requests_per_s_p10": o.requests_per_s_p10,
            "requests_per_s_p90": o.requests_per_s_p90,
            "analytic_requests_per_s": o.analytic_requests_per_s,
            "correction": o.correction, "vs_base": _ratio(o.requests_per_s, base),
            "vs_mix": _ratio(o.requests_per_s, _mix_value(result, o)),
            "cost_per_hour": o.cost_per_hour, "output_tokens_per_s": o.output_tokens_per_s,
            "usd_per_m_output_tokens": o.usd_per_m_output_tokens, "gpus": gpus_text(o),
            "islands": islands_text(o), "status": o.status, "gap": o.gap,
            "pareto": k in front, "seconds": o.seconds, "cached": o.cached})
    return out


# ------------------------------------------------------------------ display tables
def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:,.{digits}f}"


def _pct(r: float | None) -> str:
    return "-" if r is None else f"{r - 1:+.1%}"


def _status(o: Outcome) -> str:
    if o.status == "time_limit" and math.isfinite(o.gap):
        text = f"time limit (gap {o.gap:.1%})"
    else:
        text = o.status.replace("_", " ")
    if o.answer_from:
        text += f"; answer: {o.answer_from}"
    return text


def _from(o: Outcome) -> str:
    if o.capacity == CORRECTED:
        return f"corrected x{o.correction:.3f}"
    return o.capacity


def _band(lo: float, hi: float) -> str:
    if not (math.isfinite(lo) and lo > 0):
        return "—"
    return f"{_f(lo)}–{_f(hi) if math.isfinite(hi) else 'unbounded'}"


def capacity_columns(result: WhatIfResult) -> list[str]:
    """The capacity columns of a study table: requests/s, and beside it the analytic
    figure (unless requests/s are analytic) and, in a sampled study, where each comes
    from."""
    if result.mode == "off":
        return ["requests/s", "p10–p90"]
    return ["requests/s", "p10–p90", "analytic"] + (
        ["from"] if result.mode == "sample" else [])


def study_tables(result: WhatIfResult) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(study, title, header, rows) per study, in study order."""
    recs = rows(result)
    cap = capacity_columns(result)
    common = [*cap, "vs base", "$/h used", "$/M out tok", "GPUs", "status"]
    out = []
    for study, title in STUDY_TITLES.items():
        ks = [k for k, r in enumerate(recs) if r["study"] == study]
        if not ks:
            continue
        if study in ("budget", "equal_cost"):
            head = ["budget", "option"]
        elif study == "price":
            head = ["type", "price", "factor"]
        elif study == "marginal":
            head = ["spend +X $/h on", "gain, requests/s", "per extra $/h"]
        else:
            head = ["scenario"]
        header = head + common
        if study in ("budget", "equal_cost"):
            header.insert(len(head) + len(cap) + 1, "vs mix")
        body = []
        for k in ks:
            r, o = recs[k], result.outcomes[k]
            s, p = o.scenario, o.scenario.params
            if study in ("budget", "equal_cost"):
                first = [_f(s.budget, 0), s.option]
            elif study == "price":
                first = [p["gpu"], _f(p["price"]), f"{p['factor']:.2f}x"]
            elif study == "marginal":
                gain = o.requests_per_s - result.base.requests_per_s
                first = [s.name.split(": ", 1)[-1], f"{gain:+,.2f}",
                         _f(gain / cast(float, result.spec.marginal), 3)]
            else:
                first = [s.name]
            figures = {"requests/s": _f(r["requests_per_s"]),
                       "p10–p90": _band(r["requests_per_s_p10"], r["requests_per_s_p90"]),
                       "analytic": _f(r["analytic_requests_per_s"]), "from": _from(o)}
            row = first + [figures[c] for c in cap] + [
                _pct(r["vs_base"]), _f(r["cost_per_hour"]),
                _f(r["usd_per_m_output_tokens"]), r["gpus"], _status(o)]
            if study in ("budget", "equal_cost"):
                row.insert(len(head) + len(cap) + 1, _pct(r["vs_mix"]))
            body.append(row)
        out.append((study, title, header, body))
    return out


def tables(result: WhatIfResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per study, in study order: what the terminal and
    whatif.md show.  Columns common to every study follow its own first columns."""
    return [(title, header, body) for _, title, header, body in study_tables(result)]


def availability_text(result: WhatIfResult) -> str:
    spec = result.spec
    if spec.availability == "unlimited":
        return "unlimited market availability (each type: as many GPUs as the budget buys)"
    text = "inventory counts (a budget above the inventory's cost buys nothing more)"
    if spec.marginal and spec.marginal_beyond_inventory:
        text += ("; the marginal study may buy more GPUs than the inventory lists "
                 "(studies.marginal_beyond_inventory: true)")
    elif spec.marginal:
        text += "; the marginal study offers no more GPUs of a type than the inventory lists"
    return text


def method_text(result: WhatIfResult) -> str:
    """How every scenario was planned, in one sentence."""
    spec = result.spec
    slo = spec.slo
    ceilings = ", ".join(f"{n} <= {v:g} ms" for n, v in (("TTFT", slo.ttft_ms),
                                                          ("TPOT", slo.tpot_ms))
                         if v is not None) or "no latency ceilings"
    text = (f"Every scenario is planned as `planner plan` plans it: the same request (the "
            f"inventory with the scenario's GPUs and prices, its budget, model "
            f"{spec.model}, its workload, SLO {ceilings}, engine {spec.engine}, seed "
            f"{spec.seed}, {spec.ranges} length ranges, {spec.island_granularity}-"
            "granularity islands)")
    extra = spec.solver.differences()
    if extra:
        text += f" with solver settings other than `planner plan`'s: {', '.join(extra)}"
    base = plan_command(spec, plan_request(spec, result.base.scenario))
    return text + f". The base scenario is `{base}`."


def capacity_text(result: WhatIfResult) -> str:
    """Where the requests/s come from (the closed loop, a corrected sample, or the perf
    model), with a sampled study's measured error."""
    if result.mode == "off":
        return ("Closed loop off (closed_loop: off): requests/s are the perf model's "
                "analytic figures (`planner plan --no-sim-check`), not the capacity "
                "`planner plan` promises.")
    if result.mode == "every" or result.correction is None:
        return ("Each scenario's requests/s are `planner plan`'s headline for it, its "
                "closed loop's (the rate at which the SLO holds in simulation); "
                "'analytic' is the perf model's figure for the same plan.")
    c = result.correction

    def pct(x: float) -> str:
        return "not measured" if not math.isfinite(x) else f"{x:.1%}"

    parts = []
    for w in c.workloads.values():
        lo, hi = w.ratios
        spread = "" if lo == hi else f" (sampled x{lo:.3f} to x{hi:.3f})"
        factor = w.factor(1.0)  # the median: the same at every analytic figure
        parts.append(f"{w.workload}: x{factor:.3f}{spread} from {len(w.points)} closed "
                     f"scenario(s), {w.corrected} corrected, error max "
                     f"{pct(w.max_error)}, median {pct(w.median_error)}")
    return (f"Sampled closed loop (closed_loop: sample): the loop was closed for "
            f"{c.closed} distinct problems (up to {c.sample} per workload, the base "
            f"always) -- their requests/s are `planner plan`'s headline; the other "
            f"{c.corrected} scenarios' requests/s are their analytic figure times the "
            "median closed/analytic ratio of their workload's sample ('corrected' in the "
            f"'from' column): {'; '.join(parts)}. Measured error of the correction "
            f"(leave-one-out on the sample, max |corrected - closed| / closed): "
            f"{pct(c.max_error)}.")


def notes(result: WhatIfResult) -> list[str]:
    spec = result.spec
    loops = (f", {result.closed_loops} through the closed loop" if result.mode != "off"
             else "")
    return [
        f"Inventory '{spec.inventory.name}', model {spec.model}, base workload "
        f"{spec.workload}, base budget {spec.base_budget:g} $/h; availability: "
        f"{availability_text(result)}.",
        method_text(result),
        capacity_text(result),
        "Throughput is requests/s at the SLO, $/M out tok the $ per million output "
        "tokens at it.",
        f"{len(result.outcomes)} scenarios, {result.problems} distinct problems planned"
        f"{loops} in {result.seconds:.0f} s.",
    ]


PARETO_RULE = ("only scenarios of the base workload at the base prices are compared "
               "(price-sweep and workload scenarios are left out)")


def front_groups(result: WhatIfResult) -> list[tuple[float, float, list[str]]]:
    """The Pareto front by increasing cost: (requests/s, $/h, scenario labels) per
    distinct point (several scenarios are often the same problem)."""
    points: dict[tuple[float, float], list[str]] = {}
    for k in sorted(pareto_points(result), key=lambda i: result.outcomes[i].cost_per_hour):
        o = result.outcomes[k]
        points.setdefault((o.cost_per_hour, o.requests_per_s), []).append(
            scenario_label(o.scenario))
    return [(value, cost, names) for (cost, value), names in points.items()]


def left_out_of_front(result: WhatIfResult) -> int:
    """How many scenarios with throughput are not comparable with the base."""
    served = sum(o.requests_per_s > 0 for o in result.outcomes)
    return served - len(comparable_points(result))


def _point(o: Outcome, base: Outcome) -> str:
    vs = _pct(_ratio(o.requests_per_s, base.requests_per_s))
    s = o.scenario
    label = f"{s.name}, {s.option}" if s.study in ("budget", "equal_cost") else s.name
    return (f"{label} ({_f(o.requests_per_s)} requests/s for {_f(o.cost_per_hour)} $/h, "
            f"{vs} vs base)")


def _best(outs: list[Outcome]) -> Outcome:
    """Most requests/s; at equal throughput the cheaper."""
    return max(outs, key=lambda o: (o.requests_per_s, -o.cost_per_hour))


def _per_dollar(outs: list[Outcome]) -> str:
    """The budget study's best requests/s per $/h; a scenario on GPUs priced 0 (an
    inventory may list GPUs it already owns as free) serves at no cost, a ratio with no
    value, so it is named as such."""
    free = [o for o in outs if o.cost_per_hour <= 0]
    if free:
        top = max(free, key=lambda o: o.requests_per_s)
        return (f"; at no cost: {scenario_label(top.scenario)}, {_f(top.requests_per_s)} "
                "requests/s on GPUs priced 0 $/h")
    value = max(outs, key=lambda o: o.requests_per_s / o.cost_per_hour)
    return (f"; most requests/s per $/h: {scenario_label(value.scenario)}, "
            f"{value.requests_per_s / value.cost_per_hour:.2f} requests/s per $/h")


def highlights(result: WhatIfResult) -> list[tuple[str, str]]:
    """(label, sentence): the base plan, the marginal answer, then the best scenario of
    each study -- what whatif.html leads with."""
    base = result.base
    analytic = ("" if result.mode == "off" or not math.isfinite(
        base.analytic_requests_per_s) else
        f" (`planner plan`'s headline; analytic {_f(base.analytic_requests_per_s)})")
    out = [("Base plan", f"{_f(base.requests_per_s)} requests/s{analytic} for "
            f"{_f(base.cost_per_hour)} $/h with {gpus_text(base)}, "
            f"{_f(base.usd_per_m_output_tokens)} $ per million output tokens.")]
    if result.marginal is not None:
        out.append(("Marginal value", result.marginal.sentence))
    for study, title in STUDY_TITLES.items():
        if study in ("base", "marginal"):
            continue
        outs = [o for o in result.study(study) if o.requests_per_s > 0]
        if not result.study(study):
            continue
        if not outs:
            out.append((title, "no scenario of this study serves any request."))
            continue
        best = _best(outs)
        text = f"most throughput: {_point(best, base)}"
        if study == "budget":
            text += _per_dollar(outs)
        elif study == "equal_cost":
            singles = [o for o in outs if o.scenario.option != MIX]
            if singles and best.scenario.option == MIX:
                top = _best(singles)
                text += (f"; best single type: {top.scenario.option}, "
                         f"{_f(top.requests_per_s)} requests/s (the mix "
                         f"{_pct(_ratio(best.requests_per_s, top.requests_per_s))})")
        elif study in ("price", "workload") and len(outs) > 1:
            worst = min(outs, key=lambda o: (o.requests_per_s, o.cost_per_hour))
            text += f"; least: {_point(worst, base)}"
        out.append((title, text[0].upper() + text[1:] + "."))
    return out


__all__ = ["COLUMN_TERMS", "GLOSSARY", "PARETO_RULE", "STUDY_INTROS", "availability_text",
           "capacity_columns", "capacity_text", "front_groups", "gpus_text", "highlights",
           "islands_text", "left_out_of_front", "method_text", "notes", "rows",
           "study_tables", "tables"]
