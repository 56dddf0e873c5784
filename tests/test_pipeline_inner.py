"""Seeds 000/001 behind the inner-solver protocol: mapping, adapters, registry, doc."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.decode import step_model
from perfmodel.memory import usable_bytes
from perfmodel.prefill import prefill_time
from planner.errors import PlannerError
from planner.evaluate import LayoutEvaluator
from planner.inner import INNER_SOLVERS, InnerSolver, make_inner_solver
from planner.inner.pipeline_map import (
    PipelineWorkload,
    block_bytes,
    holds_model,
    island_config,
    island_server,
)
from planner.inner.result import InnerResult
from planner.thesis_cases import TABLE_5_2, context

SMALL = (("H20", 4),) * 4


@pytest.fixture(scope="module")
def ctx():
    return context()


@pytest.fixture(scope="module")
def wl(ctx):
    w = ctx.workload
    return PipelineWorkload.from_pmf(w.pmf, w.decode_mean, w.decode_max)


def test_mapping_matches_perf_model(ctx, wl):
    m, gpu = ctx.model, ctx.gpus["H800"]
    s = island_server("x", gpu, 32, m, wl)
    tp, dp, ep = island_config(32, m)
    whole_prefill = float(np.ravel(prefill_time(gpu, m, wl.mean_input, tp, dp, ep, 0.0,
                                                ctx.calib))[0])
    assert s.tau_prefill_s * m.layers == pytest.approx(whole_prefill, rel=1e-9)
    step = float(np.ravel(step_model(gpu, m, 32.0, tp, dp, ep, ctx.calib)
                          .step_time(wl.mean_input + 0.5 * wl.mean_output))[0])
    assert s.tau_decode_s * m.layers == pytest.approx(step, rel=1e-9)
    assert s.memory_bytes == pytest.approx(32 * usable_bytes(gpu, ctx.calib))
    assert block_bytes(m) * m.layers == pytest.approx(m.total_params * m.weight_bytes)
    assert holds_model(s, m)
    assert not holds_model(island_server("y", ctx.gpus["H20"], 4, m, wl), m)


@pytest.mark.parametrize("name", ["seed000", "seed001"])
def test_adapters_return_valid_results(ctx, name):
    solver = make_inner_solver(name, context=ctx)
    assert isinstance(solver, InnerSolver)
    ev = LayoutEvaluator(ctx, solver)
    r = ev.solve(TABLE_5_2["a"])
    assert r.feasible and r.solver == name
    assert r.R_total > 0 and r.R_total == pytest.approx(r.R_sustained)
    assert sum(r.prefill_rps) == pytest.approx(r.R_total)
    assert {a.role for a in r.islands} <= {"prefill", "idle"}
    assert r.extra["mean_response_s"] > 0
    assert InnerResult.from_json(r.to_json()).R_total == pytest.approx(r.R_total)


@pytest.mark.parametrize("name", ["seed000", "seed001"])
def test_small_islands_serve_only_in_pipeline(ctx, name):
    ev_milp = LayoutEvaluator(ctx, make_inner_solver("maxrate"))
    assert not ev_milp.solve(SMALL).feasible
    r = LayoutEvaluator(ctx, make_inner_solver(name, context=ctx)).solve(SMALL)
    assert r.feasible and r.R_total > 0
    # no island holds 61 blocks, so every chain spans at least two islands
    assert sum(a.role == "prefill" for a in r.islands) >= 2
    # one island alone cannot serve
    assert not LayoutEvaluator(ctx, make_inner_solver(name, context=ctx)).solve(
        SMALL[:1]).feasible


def test_registry(ctx):
    assert "seed000" in INNER_SOLVERS and "seed001" in INNER_SOLVERS
    with pytest.raises(PlannerError, match="context"):
        make_inner_solver("seed001")


def test_exact_search_rejected():
    from pathlib import Path

    from planner.inventory import load_inventory
    from planner.plan import PlanRequest, make_plan

    inv = load_inventory(Path(__file__).resolve().parents[1] / "inventories/gpus.yaml")
    req = PlanRequest(inv, workload="thesis-fig4.2", search="exact", inner="seed000",
                      ranges=4)
    with pytest.raises(PlannerError, match="--search exact"):
        make_plan(req)


def test_comparison_doc_regenerated(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from scripts.compare_inner import main  # noqa: F401

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "cmp.md"
    out.write_text("head\n<!-- TABLE -->\nold\n<!-- /TABLE -->\ntail\n")
    subprocess.run([sys.executable, "scripts/compare_inner.py", "--out", str(out)], cwd=root,
                   check=True, capture_output=True)
    text = out.read_text()
    assert "old" not in text and text.startswith("head") and text.endswith("tail\n")
    row = next(line for line in text.splitlines() if line.startswith("| 4 x (4 H20) | seed001"))
    doc = (root / "docs/inner-comparison.md").read_text()
    assert row in doc
