"""Workload mixtures (mix shifts) and the example spec of docs/whatif.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner.whatif import expand, load_spec, mix_workloads
from planner.workload import load_workload

REPO = Path(__file__).resolve().parents[2]


def test_mixture_pmf_is_the_weighted_sum():
    a, b = load_workload("azure-conv-2023"), load_workload("azure-code-2023")
    m = mix_workloads([(a, 0.7), (b, 0.3)], "mix")
    n = max(a.pmf.size, b.pmf.size)
    pa, pb = np.zeros(n), np.zeros(n)
    pa[: a.pmf.size], pb[: b.pmf.size] = a.pmf, b.pmf
    np.testing.assert_allclose(m.pmf, 0.7 * pa + 0.3 * pb, atol=1e-15)
    assert m.pmf.sum() == pytest.approx(1.0)
    assert m.decode_mean == pytest.approx(0.7 * a.decode_mean + 0.3 * b.decode_mean)
    assert m.decode_max == max(a.decode_max, b.decode_max)
    assert m.mean_input == pytest.approx(0.7 * a.mean_input + 0.3 * b.mean_input)
    # prefix hits are a fraction of input tokens: token-weighted
    tok = np.array([0.7 * a.mean_input, 0.3 * b.mean_input])
    hit = tok @ [a.prefix_hit_rate, b.prefix_hit_rate] / tok.sum()
    assert m.prefix_hit_rate == pytest.approx(hit)
    # weights are normalised; a share of 0 is the other workload itself
    assert np.allclose(mix_workloads([(a, 7), (b, 3)], "m").pmf, m.pmf)
    assert mix_workloads([(a, 0.0), (b, 1.0)], "m") is b


def test_example_spec_loads_and_expands():
    spec = load_spec(REPO / "docs" / "whatif-example.yaml")
    scenarios = expand(spec)
    studies = {s.study for s in scenarios}
    assert {"base", "budget", "price", "add", "remove", "workload", "equal_cost"} <= studies
    assert spec.marginal and spec.budget_sweep
    mixes = [w for w in spec.workloads if len(w.components) == 2]
    assert mixes and all(sum(s for _, s in w.components) == pytest.approx(1) for w in mixes)
    # every scenario of one workload shares its components key (one evaluator each)
    keys = {s.components for s in scenarios}
    assert len(keys) == 1 + len(spec.workloads) - sum(
        w.components == ((spec.workload, 1.0),) for w in spec.workloads)


def test_the_engine_defaults_per_vendor_and_a_named_one_must_run_every_type(tmp_path):
    from planner.core.errors import PlannerError
    from planner.whatif.spec import Flags

    inv = tmp_path / "amd.yaml"
    inv.write_text("gpus:\n  - {type: MI300X, count: 8, price_per_hour: 3.0}\n"
                   "  - {type: H100-SXM, count: 8, price_per_hour: 2.0}\n")
    spec = tmp_path / "spec.yaml"
    studies = "studies:\n  remove: [H100-SXM]\n"
    spec.write_text(f"inventory: {inv}\nbudget: 40\n{studies}")
    assert load_spec(spec).engine == "vllm"  # one engine runs both vendors
    spec.write_text(f"inventory: {inv}\nbudget: 40\nengine: trtllm\n{studies}")
    with pytest.raises(PlannerError, match="does not run on AMD GPUs") as err:
        load_spec(spec)
    assert "engine" in str(err.value) and err.value.exit_code == 2
    nvidia = tmp_path / "nv.yaml"
    nvidia.write_text("gpus:\n  - {type: H100-SXM, count: 8, price_per_hour: 2.0}\n")
    assert load_spec(None, Flags(inventory=nvidia, budget=40.0,
                                 budget_sweep="20,40")).engine == "trtllm"
