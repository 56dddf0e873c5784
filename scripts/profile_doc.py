"""Regenerate the measured part of docs/profiles.md (issue 31's goals).

    .venv/bin/python scripts/profile_doc.py [--out docs/profiles.md]

Runs, as a user would (``planner`` in a fresh process, seed 0):

1. **the week**: ``planner plan --profile chat-week --peak-rps 100`` on
   ``inventories/tiers-2026.yaml`` (DeepSeek-V3, azure-conv-2023, the default SLO);
   the period's cost by tier and its savings against (a) reserved islands alone, sized
   for the peak, and (b) on-demand islands alone;
2. **the day replayed** on seeds and a router the planner never used:
   ``planner simulate RUN --profile --seed N`` under ``range`` (the planner's router)
   on seeds 1, 2 and 3, and ``jsq`` on seed 1 (:data:`REPLAYS`): the lowest SLO
   attainment over the busiest day's 24 slots;
3. **sensitivity** of the cost and the savings to the figures the plan assumes (the
   reserved and spot prices, spot itself, the start-up lag), on the perf model's tables
   (no simulation: the promise's correction is the same for all);
4. **drift**: ``--scenarios enterprise-week`` beside ``chat-week``: the reserved fleet
   kept by the smallest worst-case regret and each scenario's cost.

The figures land between the ``<!-- measured: begin -->`` and ``<!-- measured: end -->``
lines; the rest of the page is prose.  About five minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PLANNER = str(REPO / ".venv" / "bin" / "planner")
INVENTORY = "inventories/tiers-2026.yaml"
PROFILE, OTHER, PEAK = "chat-week", "enterprise-week", 100.0
#: (router, seed) of each replay of the busiest day: the planner's router on three seeds,
#: a router it never used on one.
REPLAYS = (("range", 1), ("range", 2), ("range", 3), ("jsq", 1))
BEGIN, END = "<!-- measured: begin -->", "<!-- measured: end -->"


def run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([PLANNER, *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def money(x: float | None) -> str:
    return "—" if x is None else f"${x:,.0f}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def bill_rows(run_d: dict) -> list[str]:
    rows = []
    named = [("this schedule", run_d["schedule"]["bill"])] + [
        (k.replace("_", " "), (v or {}).get("bill")) for k, v in run_d["baselines"].items()]
    for name, b in named:
        if b is None:
            rows.append(f"| {name} | cannot serve the profile | | | | |")
            continue
        rows.append(f"| {name} | {money(b['reserved'])} | {money(b['on_demand'])} | "
                    f"{money(b['spot'])} | {money(b['startup'])} | {money(b['total'])} |")
    return rows


def sensitivity() -> list[str]:
    """Cost and savings on the perf model's tables as one assumption moves."""
    from planner.core.defaults import DEFAULT_SLO
    from planner.fleet.inventory import load_inventory
    from planner.fleet.tiers import PriceTiers
    from planner.schedule.solve import Columns, ScheduleRequest, best_schedule
    from planner.schedule.startup import default_startup_s
    from planner.workload.profile_io import load_profile

    inv = load_inventory(REPO / INVENTORY)
    prof = load_profile(PROFILE).scaled(PEAK)
    lag = default_startup_s("deepseek-v3")

    def tiers(f_res: float, f_spot: float | None):
        out = inv
        entries = []
        for e in out.entries:
            t = e.tiers
            entries.append(replace(e, given_tiers=PriceTiers(
                t.on_demand * f_res, t.on_demand, t.on_demand_max,
                None if f_spot is None else t.on_demand * f_spot,
                t.spot_max if f_spot is not None else 0, t.spot_preemption)))
        return replace(out, entries=tuple(entries))

    cases = [("as shipped: reserved 0.60, spot 0.35 of on-demand, lag "
              f"{lag:.0f} s", tiers(0.60, 0.35), lag),
             ("reserved 0.40 of on-demand", tiers(0.40, 0.35), lag),
             ("reserved 0.80 of on-demand", tiers(0.80, 0.35), lag),
             ("no spot", tiers(0.60, None), lag),
             ("no spot, reserved 0.40", tiers(0.40, None), lag),
             ("start-up lag 0 s", tiers(0.60, 0.35), 0.0),
             (f"start-up lag ×4 ({4 * lag:.0f} s)", tiers(0.60, 0.35), 4 * lag)]
    rows = ["| assumption | week's cost | reserved | on demand + spot | vs reserved only "
            "| vs on demand only |", "|---|---:|---:|---:|---:|---:|"]
    for label, inventory, startup in cases:
        req = ScheduleRequest(prof, inventory, "deepseek-v3", "azure-conv-2023",
                              DEFAULT_SLO, startup_s=startup, ranges=8)
        s = best_schedule(Columns.build(req).problem())
        if s is None or s.baselines is None:
            rows.append(f"| {label} | cannot serve | | | | |")
            continue
        base = s.baselines
        sav = {k: None if v is None else 1 - s.bill.total / v.bill.total
               for k, v in base.items()}
        rows.append(f"| {label} | {money(s.bill.total)} | {money(s.bill.reserved)} | "
                    f"{money(s.bill.on_demand + s.bill.spot)} | "
                    f"{pct(sav['reserved_only'])} | {pct(sav['on_demand_only'])} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "profiles.md"))
    args = ap.parse_args()
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        week = Path(tmp) / "week"
        secs = run(["plan", "--profile", PROFILE, "--peak-rps", f"{PEAK:g}", "--inventory",
                    INVENTORY, "--out", str(week), "--quiet"])
        d = json.loads((week / "schedule.json").read_text())
        replays = {}
        for router, seed in REPLAYS:
            run(["simulate", str(week), "--profile", "--router", router, "--seed", str(seed),
                 "-q"])
            replays[(router, seed)] = json.loads((week / "day-replay.json").read_text())
        b = d["schedule"]["bill"]
        lines += [f"**The week** (`planner plan --profile {PROFILE} --peak-rps {PEAK:g} "
                  f"--inventory {INVENTORY}`; DeepSeek-V3 on azure-conv-2023, TTFT "
                  f"{d['slo']['ttft_ms']:g} ms, TPOT {d['slo']['tpot_ms']:g} ms; "
                  f"{secs:.0f} s wall on 2 cores, of which "
                  f"{d['timings_s']['setup'] + d['timings_s']['solve']:.1f} s tables and "
                  "MILPs):", "",
                  "| | reserved | on demand | spot | of which start-ups | week's cost |",
                  "|---|---:|---:|---:|---:|---:|", *bill_rows(d), "",
                  f"Savings of the schedule: **{pct(d['savings']['reserved_only'])}** against "
                  f"(a) reserved islands alone sized for the peak, **"
                  f"{pct(d['savings']['on_demand_only'])}** against (b) on-demand islands "
                  f"alone.  The week's cost is {money(b['total'])} "
                  f"({money(b['total'] / d['profile']['period_hours'])}/h on average) for a "
                  f"mean of {d['summary']['mean_rps']:,.1f} requests/s and a peak of "
                  f"{d['summary']['peak_rps']:,.1f}.", "",
                  "Reserved fleet: " + (", ".join(
                      f"{r['islands']} × {r['gpu']} ×{r['size']} {r['role']}"
                      for r in d["schedule"]["reserved"]) or "none (at these prices no island "
                      "costs less reserved than rented by the hour for this week)")
                  + ".", "",
                  f"**The promise.** The planner held the busiest day's 24 slots at ≥ 99.5 % "
                  f"in {d['hold_rounds']} round(s) (lowest "
                  f"{pct(d['summary']['lowest_attainment'])}).  Replayed on seeds it never "
                  "used (`planner simulate RUN --profile --seed N`):", "",
                  "| router | --seed | slots | lowest SLO attainment | slots below 99 % |",
                  "|---|---:|---:|---:|---:|"]
        for (router, seed), rp in replays.items():
            lines.append(f"| {router}{' (the planner’s)' if router == 'range' else ''} | "
                         f"{seed} | {len(rp['slots'])} | {pct(rp['lowest_attainment'])} | "
                         f"{len(rp['slots_below_99'])} |")
        lines += ["", "**Sensitivity** (perf-model tables, no simulation; the week's cost "
                  "and the savings as one assumption moves):", "", *sensitivity(), ""]
        drift = Path(tmp) / "drift"
        secs2 = run(["plan", "--profile", PROFILE, "--scenarios", OTHER, "--peak-rps",
                     f"{PEAK:g}", "--inventory", INVENTORY, "--out", str(drift), "--quiet"])
        dd = json.loads((drift / "schedule.json").read_text())
        lines += [f"**Drift** (`--scenarios {OTHER}` beside `{PROFILE}`, both at peak "
                  f"{PEAK:g} requests/s; {secs2:.0f} s): kept **{dd['procurement']['kept']}**"
                  ".", "", "| scenario | week's cost | its own fleet's | regret | lowest SLO "
                  "attainment |", "|---|---:|---:|---:|---:|"]
        for sc in dd["scenarios"]:
            lines.append(f"| {sc['name']} | {money(sc['bill']['total'])} | "
                         f"{money(sc['own_bill'])} | {money(sc['regret'])} | "
                         f"{pct(sc['lowest_attainment'])} |")
        lines += ["", "| candidate reserved fleet | worst-case regret |", "|---|---:|"]
        for c in dd["procurement"]["candidates"]:
            lines.append(f"| {c['label']} | {money(c['worst_regret'])} |")
    out = Path(args.out)
    text = out.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    out.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
