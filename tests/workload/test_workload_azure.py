"""The built-in Azure workloads against the raw traces in ../shared (skipped without them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from script_module import load_script

from planner.workload import builtin_dir, load_workload, make_ranges, shared_dir

TRACE_DIR = shared_dir() / "traces" / "azure-llm-2023"
needs_traces = pytest.mark.skipif(
    not TRACE_DIR.is_dir(),
    reason=f"Azure traces not present at {TRACE_DIR} (../shared is not shipped with the repo)",
)
FILES = {"azure-code-2023": "AzureLLMInferenceTrace_code.csv",
         "azure-conv-2023": "AzureLLMInferenceTrace_conv.csv"}


def _raw(name):
    df = pd.read_csv(TRACE_DIR / FILES[name])
    t = pd.to_datetime(df["TIMESTAMP"], format="ISO8601")
    gaps = t.diff().dt.total_seconds().to_numpy()[1:]
    return df["ContextTokens"].to_numpy(), df["GeneratedTokens"].to_numpy(), gaps


@needs_traces
@pytest.mark.parametrize("name", sorted(FILES))
def test_builtin_matches_trace_statistics(name):
    inp, out, gaps = _raw(name)
    w = load_workload(name)
    assert w.trace_stats["requests"] == inp.size
    assert w.max_len == inp.max()  # covers the trace: nothing clipped
    assert w.clipped_mass == 0.0
    assert w.mean_input == pytest.approx(inp.mean(), rel=1e-12)
    for q in (0.5, 0.9, 0.99):
        assert w.quantile(q) == np.percentile(inp, 100 * q, method="inverted_cdf")
        assert w.decode_quantile(q) == np.percentile(out, 100 * q, method="inverted_cdf")
    assert w.decode_mean == pytest.approx(out.mean(), rel=1e-12)
    assert w.decode_max == out.max()
    # Exact pmf: probability of every observed length equals its relative frequency.
    values, counts = np.unique(inp, return_counts=True)
    np.testing.assert_allclose(w.pmf[values], counts / inp.size, rtol=1e-12)
    assert w.rate_rps == pytest.approx(1 / gaps.mean(), rel=1e-9)
    assert w.cv == pytest.approx(gaps.std() / gaps.mean(), rel=1e-9)
    # Conditional decode mean of one joint input bin against the raw rows.
    lo, hi = w.joint.input_edges[2], w.joint.input_edges[3]
    sel = (inp >= lo) & (inp < hi)
    assert w.decode_mean_given_input(lo) == pytest.approx(out[sel].mean(), rel=1e-12)
    assert w.joint.counts.sum() == inp.size
    assert "CC-BY 4.0" in w.provenance and "Splitwise" in w.provenance


@needs_traces
def test_thesis_8k_view_of_conversation_trace():
    inp, _, _ = _raw("azure-conv-2023")
    w = load_workload("azure-conv-2023", max_len=8000)
    assert w.clipped_mass == pytest.approx((inp > 8000).mean(), rel=1e-9)
    r = make_ranges(w, 250)
    assert r.prob.sum() == pytest.approx(1.0)
    kept = inp[inp <= 8000]
    k = 5
    frac = ((kept >= r.start[k]) & (kept < r.end[k])).mean()
    assert r.prob[k] == pytest.approx(frac, rel=1e-12)


@needs_traces
def test_committed_files_are_what_the_build_script_produces():
    module = load_script("build_azure_workloads")
    texts = module.build(TRACE_DIR)
    assert set(texts) == set(FILES)
    for name, text in texts.items():
        committed = (builtin_dir() / f"{name}.yaml").read_text(encoding="utf-8")
        assert committed == text, f"{name}.yaml is stale: run scripts/build_azure_workloads.py"
        # Derived data only: no timestamps from the trace.
        assert "2023-11-16 18:" not in committed
