"""Seeds 000/001 behind the inner-solver protocol: mapping, adapters, registry, doc."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.decode import step_model
from perfmodel.memory import usable_bytes
from perfmodel.prefill import prefill_time
from planner.context.evaluate import LayoutEvaluator
from planner.context.thesis_cases import TABLE_5_2, context
from planner.core.errors import PlannerError
from planner.inner import INNER_SOLVERS, InnerSolver, make_inner_solver
from planner.inner.pipeline_map import (
    PipelineWorkload,
    block_bytes,
    holds_model,
    island_batch,
    island_config,
    island_server,
)
from planner.inner.result import InnerResult

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
    s = island_server("x", gpu, 32, m, wl, calib=ctx.calib)
    tp, dp, ep = island_config(32, m, gpu, wl, ctx.calib)
    assert (s.tp, s.ep) == (tp, ep) and tp * dp == 32
    b_g = s.batch // dp
    assert s.batch == dp * b_g and b_g >= 1
    assert island_batch(gpu, 32, m, wl, ctx.calib) == (s.batch, m.layers)
    whole_prefill = float(np.ravel(prefill_time(gpu, m, wl.mean_input, tp, dp, ep, 0.0,
                                                ctx.calib))[0])
    # each session also waits for the b_g prefills of its group (contention)
    assert s.tau_prefill_s * m.layers == pytest.approx(whole_prefill * b_g, rel=1e-9)
    step = float(np.ravel(step_model(gpu, m, float(b_g), tp, dp, ep, ctx.calib)
                          .step_time(wl.mean_input + 0.5 * wl.mean_output))[0])
    assert s.tau_decode_s * m.layers == pytest.approx(step, rel=1e-9)
    assert s.memory_bytes == pytest.approx(32 * float(usable_bytes(gpu, ctx.calib, m, tp)))
    assert block_bytes(m) * m.layers == pytest.approx(m.total_params * m.weight_bytes)
    assert holds_model(s, m)
    assert not holds_model(island_server("y", ctx.gpus["H20"], 4, m, wl, calib=ctx.calib), m)


def test_config_is_the_best_colocated_one(ctx, wl):
    """The chosen (tp, dp, ep) beats the naive largest-tp configuration."""
    m, gpu = ctx.model, ctx.gpus["DGX-B300"]
    naive = island_config(32, m)
    best = island_config(32, m, gpu, wl, ctx.calib)
    assert naive == (32, 1, 32) and best != naive
    # the naive config would prefill one prompt at a time on the whole island
    assert best[1] > 1


@pytest.mark.parametrize("name", ["seed000", "seed001"])
def test_single_island_capacity_is_colocated_throughput(ctx, wl, name):
    """A whole-model island alone: the pipeline capacity is the colocated island's
    ``dp / (t_pre + (d̄ − 1) t_step(b_g) / b_g)`` (seed 001 footnote 11 times the
    session cap), up to the small network term."""
    m, gpu = ctx.model, ctx.gpus["H800"]
    s = island_server("x", gpu, 32, m, wl, calib=ctx.calib)
    tp, dp, ep = island_config(32, m, gpu, wl, ctx.calib)
    b_g = s.batch // dp
    t_pre = s.tau_prefill_s * m.layers / b_g
    t_step = s.tau_decode_s * m.layers
    expected = dp / (t_pre + (wl.mean_output - 1.0) * t_step / b_g)
    r = LayoutEvaluator(ctx, make_inner_solver(name, context=ctx)).solve((("H800", 32),))
    assert r.feasible
    assert r.R_total == pytest.approx(expected, rel=0.03)


def test_pipeline_and_milp_agree_within_a_factor(ctx):
    """With contention modelled, pipelines of whole-model islands land near the MILP
    (the first mapping, without it, reported 5-50x the MILP)."""
    milp = LayoutEvaluator(ctx, make_inner_solver("maxrate")).solve(TABLE_5_2["a"]).R_total
    for name in ("seed000", "seed001"):
        r = LayoutEvaluator(ctx, make_inner_solver(name, context=ctx)).solve(TABLE_5_2["a"])
        assert 0.5 < r.R_total / milp < 2.0


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

    from planner.fleet.inventory import load_inventory
    from planner.plan import PlanRequest, make_plan

    inv = load_inventory(Path(__file__).resolve().parents[2] / "inventories/gpus.yaml")
    req = PlanRequest(inv, workload="thesis-fig4.2", search="exact", inner="seed000",
                      ranges=4)
    with pytest.raises(PlannerError, match="--search exact"):
        make_plan(req)


@pytest.mark.slow
def test_comparison_doc_regenerated(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from scripts.compare_inner import main  # noqa: F401

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "cmp.md"
    out.write_text("head\n<!-- TABLE -->\nold\n<!-- /TABLE -->\ntail\n")
    subprocess.run([sys.executable, "scripts/compare_inner.py", "--out", str(out), "--quick",
                    "--no-plans"], cwd=root, check=True, capture_output=True)
    text = out.read_text()
    assert "old" not in text and text.startswith("head") and text.endswith("tail\n")
    row = next(line for line in text.splitlines()
               if line.startswith("| DeepSeek-V3, thesis-fig4.2 | small islands H20x4 | seed001"))
    doc = (root / "docs/inner-comparison.md").read_text()
    assert row in doc


@pytest.mark.slow
def test_plan_with_pipeline_inner_reports_pipeline_figures():
    """make_plan with --inner seed001: the final evaluation is the pipeline's own
    throughput (no replay over MILP tables), baselines are labelled MILP and there is
    no "search gap" against a different model."""
    from pathlib import Path

    from planner.fleet.inventory import load_inventory
    from planner.plan import PlanRequest, make_plan

    inv = load_inventory(Path(__file__).resolve().parents[2] / "inventories/gpus.yaml")
    req = PlanRequest(inv, workload="thesis-fig4.2", budget=64.0, inner="seed001", ranges=4,
                      compare_homogeneous=False, compare_exact=True, exact_time_limit=20.0,
                      search_options={"iterations": 1, "batch_size": 3})
    plan = make_plan(req)
    ev, r = plan.evaluation, plan.result
    assert r.solver == "seed001" and r.R_total > 0
    assert ev.R_sustained == pytest.approx(r.R_total) and ev.D_total == 0.0
    assert ev.decode_tokens_per_s == pytest.approx(r.R_total * plan.context.workload.decode_mean)
    assert plan.exact is not None and plan.exact.label.endswith("(MILP)")
    assert plan.bo_gap is None
