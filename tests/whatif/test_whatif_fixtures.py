"""Helpers (no tests) shared by tests/whatif/test_whatif_*.py: a small inventory -- 16 H200 @ 4
$/h and 32 H20 @ 1 $/h with islands of at least 8 GPUs -- and few length ranges, so a
study takes seconds, not minutes.

:func:`write_spec` writes specs with the closed loop off (each scenario's figure is
``planner plan --no-sim-check``'s, seconds rather than a simulation each) and no
latency ceilings (the throughput-only mode, whose orderings the studies check);
tests/whatif/test_whatif_promise.py runs the closed loop and the default SLO."""

from __future__ import annotations

from pathlib import Path

import yaml

from planner.whatif.solve import CLOSED, WhatIfRunner

SMALL_INVENTORY = {
    "name": "small",
    "min_island": 8,
    "gpus": [{"type": "H200", "count": 16, "price_per_hour": 4.0},
             {"type": "H20", "count": 32, "price_per_hour": 1.0}],
}


def write_spec(folder: Path, studies: dict, **top) -> Path:
    """Write the small inventory and a spec using it; returns the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.yaml").write_text(yaml.safe_dump(SMALL_INVENTORY))
    data = {"inventory": "small.yaml", "ranges": 6, "closed_loop": "off", "slo": "none",
            "solver": {"prune_tol": 0.0, "mip_gap": 1e-6}, **top, "studies": studies}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ------------------------------------------------------------------ a study without solving
#: requests/s per GPU of each type in :class:`FakeRunner` (made-up, H200 the fastest).
SPEED = {"H200": 3.0, "H20": 1.0, "H800": 2.0}

#: A spec with every kind of study the report renders (a price sweep and a workload
#: study, which the Pareto front must leave out, and a marginal study).
FAKE_STUDIES = {"budget_sweep": [32, 64], "equal_cost": True,
                "prices": {"H20": ["0.5x", "1.5x"]}, "remove": ["H200"],
                "workloads": ["azure-code-2023"], "marginal": 16}


def fake_ratio(value: float) -> float:
    """The fake closed loop's headline / analytic: larger fleets keep more of their
    analytic capacity (made-up, smooth, below 1)."""
    return value / (value + 8.0)


class FakeRunner(WhatIfRunner):
    """planner.whatif.solve.WhatIfRunner with instant, deterministic solves (the
    fastest GPUs first, in islands of 8, within the supply and budget; a closed solve's
    headline is the analytic figure times :func:`fake_ratio`); its caching of repeated
    problems is the real runner's.  ``calls`` counts the solves by (key, kind)."""

    calls: dict | None = None

    def _solve_new(self, sc, solve=CLOSED):
        from planner.whatif.solve import ANALYTIC, CLOSED_LOOP, NO_PLAN, Outcome

        if FakeRunner.calls is not None:
            key = (sc.key(), solve)
            FakeRunner.calls[key] = FakeRunner.calls.get(key, 0) + 1

        left, layout = sc.budget, []
        for t in sorted(sc.supply, key=lambda t: -SPEED.get(t.name, 1.0) / t.price_per_hour):
            n = min(t.available, int(left // t.price_per_hour)) // 8 * 8
            layout += [(t.name, 8)] * (n // 8)
            left -= n * t.price_per_hour
        cost = sum(next(t.price_per_hour for t in sc.supply if t.name == g) * n
                   for g, n in layout)
        value = sum(SPEED.get(g, 1.0) * n for g, n in layout)
        if sc.workload != self.spec.workload:
            value *= 0.5
        roles = tuple("prefill" if k % 2 else "decode" for k in range(len(layout)))
        rate = value * fake_ratio(value) if solve == CLOSED else value
        capacity = NO_PLAN if not layout else CLOSED_LOOP if solve == CLOSED else ANALYTIC
        return Outcome(sc, "optimal" if layout else "no plan", rate, cost, tuple(layout),
                       roles, value, 0.0 if layout else float("nan"), 0.01, 200.0,
                       analytic_requests_per_s=value, capacity=capacity)


def fake_result(folder: Path, studies: dict | None = None, **top):
    """run_whatif on the small inventory with :class:`FakeRunner` (no MILP: instant)."""
    from unittest import mock

    from planner.whatif import load_spec, run_whatif

    spec = load_spec(write_spec(folder, dict(FAKE_STUDIES if studies is None else studies),
                                **{"budget": 48, **top}))
    with mock.patch("planner.whatif.run.WhatIfRunner", FakeRunner):
        return run_whatif(spec)
