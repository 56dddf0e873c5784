"""Work the island benchmark shares between its calls gives exactly what a fresh
evaluation gives: the chosen configuration's rows read from the comparison of all
configurations (``island._SharedRows``), both micro-batch readings of a decode step in
one stacked evaluation (``decode.step_model``), and the one-size path of a ring
collective (``layers._ring``)."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from perfmodel import SLO, Calibration, WorkloadShape, get_gpu, get_model
from perfmodel.decode import decode_components, mtp_yield, step_from_components, step_model
from perfmodel.island import (
    _decode_rps,
    _lengths,
    _prefill_rps,
    _selection_lengths,
    _SharedRows,
    island_configs,
)
from perfmodel.kernels.library import kernels_for
from perfmodel.layers import _ring
from perfmodel.parallel import ConfigGrid


def _shape(max_len=4000):
    s = np.arange(max_len + 1, dtype=float)
    pmf = np.exp(-0.5 * ((s - 700) / 1500) ** 2)
    pmf[0] = 0
    return WorkloadShape(pmf / pmf.sum(), 200.0, 1000)


CASES = [("H200", 16, "deepseek-v3", "sglang"), ("B200", 8, "deepseek-v3", "trtllm"),
         ("H100-SXM", 8, "llama-3.1-70b", "vllm")]


@pytest.mark.parametrize("gpu,size,model,engine", CASES)
@pytest.mark.parametrize("slo", [SLO(), SLO(ttft_ms=1500, tpot_ms=40)])
def test_chosen_rows_read_from_the_comparison_equal_a_fresh_evaluation(gpu, size, model,
                                                                      engine, slo):
    g, m, calib = get_gpu(gpu), get_model(model), Calibration(engine=engine)
    shape = _shape()
    grid = ConfigGrid.of(island_configs(g, size, m, calib))
    assert len(grid) > 1
    s_sel, _ = _selection_lengths(shape)
    s_all = _lengths(shape)
    for fn in (_prefill_rps, _decode_rps):
        shared = _SharedRows(len(grid))
        fn(g, m, grid, shape, slo.strict, calib, s_sel, shared)
        for i in (0, len(grid) - 1):
            one = ConfigGrid.of([grid.configs[i]])
            fresh = fn(g, m, one, shape, slo, calib, s_all)
            read = fn(g, m, one, shape, slo, calib, s_all, shared.chosen(i))
            for a, b in zip(fresh, read, strict=True):
                np.testing.assert_array_equal(a, b)


def test_a_view_without_a_stored_entry_computes_afresh():
    rows = _SharedRows(3).chosen(1)
    assert rows.array(("absent",), lambda: np.ones((1, 4))).shape == (1, 4)


@pytest.mark.parametrize("gpu,size,engine", [("H200", 16, "sglang"), ("B200", 8, "trtllm")])
def test_stacked_micro_batch_readings_equal_two_evaluations(gpu, size, engine):
    """step_model prices both readings (overlap allowed or not) in one call; each must be
    what its own call gives, and the faster is kept per element."""
    g, m, calib = get_gpu(gpu), get_model("deepseek-v3"), Calibration(engine=engine)
    grid = ConfigGrid.of(island_configs(g, size, m, calib))
    batch = np.array([[1.0, 8.0, 64.0, 256.0, 1024.0]])
    k_yield = mtp_yield(calib, m)[1]
    over = step_from_components(decode_components(g, m, batch, grid.tp, grid.dp, grid.ep,
                                                  calib), m, k_yield)
    plain = step_from_components(decode_components(g, m, batch, grid.tp, grid.dp, grid.ep,
                                                   calib, overlap=False), m, k_yield)
    got = step_model(g, m, batch, grid.tp, grid.dp, grid.ep, calib)
    better = over.step_time(1024.0) <= plain.step_time(1024.0)
    assert better.any() and (~better).any() or engine == "trtllm"
    for f in fields(got):
        if f.name.endswith("count"):
            continue
        want = np.where(better, *np.broadcast_arrays(getattr(over, f.name),
                                                     getattr(plain, f.name)))
        if f.name in ("d_floor", "m_floor"):  # the eager floor may only raise them
            assert np.all(np.asarray(getattr(got, f.name)) >= want)
        else:
            np.testing.assert_array_equal(np.broadcast_to(getattr(got, f.name), want.shape),
                                          want)


def test_ring_one_size_path_equals_the_per_size_path():
    ks = kernels_for(get_gpu("H200"), "sglang")
    nbytes = np.geomspace(1e3, 1e9, 7)[None, :]
    mixed, _ = _ring(ks, "allgather", nbytes, np.array([[4.0], [4.0], [1.0]]), 8)
    alone, _ = _ring(ks, "allgather", nbytes, np.array([[4.0]]), 8)
    np.testing.assert_array_equal(mixed[0], alone[0])
    np.testing.assert_array_equal(mixed[2], 0.0)
    assert np.all(alone > 0)
