"""The searches with a batch's proposals scored on Ray workers (planner.core.execution):
the same history, values, counters and best layout as the serial search, and a plan
from the CLI identical to the serial plan apart from timings."""

from __future__ import annotations

import json

import pytest

from planner.outer import DividerBO, RandomSearch
from planner.outer.synthetic import SyntheticObjective, default_space

SPACE = default_space(512.0)


@pytest.fixture(scope="module")
def ray_executor():
    pytest.importorskip("ray")
    from planner.core.execution import RayExecutor

    ex = RayExecutor(workers=2)
    yield ex
    ex.close()


def _trace(res):
    return ([(h.layout, h.value, h.cached, h.phase) for h in res.history],
            res.best_layout, res.evaluations, res.cache_hits)


@pytest.mark.parametrize("search", [
    DividerBO(iterations=2, batch_size=4, sobol_trials=4, polish=4),
    RandomSearch(evaluations=24),
], ids=["divider", "random"])
def test_search_on_workers_is_the_serial_search(ray_executor, search, tmp_path):
    serial = search.search(SPACE, SyntheticObjective(SPACE), seed=5)
    parallel = search.search(SPACE, SyntheticObjective(SPACE), seed=5,
                             executor=ray_executor, checkpoint=tmp_path / "ck.json")
    assert _trace(parallel) == _trace(serial)


@pytest.mark.slow
def test_plan_with_workers_equals_serial_plan(run_cli, small_inventory, tmp_path):
    pytest.importorskip("ray")
    args = ("plan", "--inventory", str(small_inventory), "--search", "divider",
            "--iterations", "1", "--batch-size", "4", "--ranges", "8", "--no-exact",
            "--no-homogeneous", "--no-sim-check", "-q")
    plans = []
    for name, extra in (("serial", ()), ("ray", ("--workers", "2"))):
        rc, _, err = run_cli(*args, "--out", str(tmp_path / name), *extra)
        assert rc == 0, err
        plan = json.loads((tmp_path / name / "plan.json").read_text())
        for h in plan["search"]["history"]:
            h.pop("wall_time")
        plans.append({k: plan[k] for k in ("islands", "ranges", "summary")} |
                     {"history": plan["search"]["history"]})
    for p in plans:
        p["summary"].pop("timings_s", None)
    assert plans[0] == plans[1]
