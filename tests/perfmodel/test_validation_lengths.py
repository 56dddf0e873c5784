"""Variable-length datasets in the validation harness: the running batch is priced at
its length-biased context (perfmodel.validation_lengths)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel import validation as val
from perfmodel.aggregated import aggregated_point
from perfmodel.calibration import Calibration
from perfmodel.hardware import get_gpu
from perfmodel.models import get_model
from perfmodel.validation_lengths import shape_for, shape_from_samples, shapes
from perfmodel.validation_split import load_posed


def test_fixed_lengths_are_the_identity_shape():
    shape = shape_from_samples("fixed", [500] * 7, [200] * 7)
    assert shape.prompt_ratio == pytest.approx(1.0)
    assert shape.output_ratio == pytest.approx(1.0)
    assert shape.decode_context(500, 200) == pytest.approx(600.0)
    assert shape.held(500, 200) == pytest.approx(100.0)


def test_the_running_batch_over_represents_long_answers():
    """Two requests, answers of 100 and 300 tokens: the batch holds the long one three
    times as often; its mean generated length is E[d^2] / 2E[d] = 125, not 100, and a
    long answer to the short prompt pulls the prompt mean to E[s d] / E[d] = 250."""
    shape = shape_from_samples("two", [400, 200], [100, 300])
    assert shape.output_ratio == pytest.approx((100 ** 2 + 300 ** 2) / 2 / 200 ** 2)
    assert shape.decode_context(300, 200) == pytest.approx(250.0 + 125.0)
    # a simulated steady batch: each request resident for d steps at generated 0..d-1
    s, d = np.array([400.0, 200.0]), np.array([100, 300])
    ctx = np.concatenate([s[i] + np.arange(d[i]) for i in range(2)])
    assert ctx.mean() == pytest.approx(shape.decode_context(300, 200), abs=1.0)


@pytest.mark.parametrize("inputs, outputs, message", [
    ([1, 2], [1], "equal, non-empty"), ([], [], "equal, non-empty"),
    ([5], [0], "outputs positive")])
def test_bad_tables_are_refused(inputs, outputs, message):
    with pytest.raises(ValueError, match=message):
        shape_from_samples("bad", inputs, outputs)


def test_shipped_shapes_agree_with_what_the_posed_rows_quote():
    """Each shipped table's mean prompt is the ``isl`` its MLPerf rows were posed at
    (taken from the same table before this rule existed), and every MLPerf row of the
    posed files names a dataset that has a shape."""
    from importlib import resources

    import yaml

    by_name = {s.name: s for s in shapes()}
    assert set(by_name) == {"open-orca-24576", "mlperf-moe-mix-15000",
                            "mlperf-deepseek-r1-4388"}
    assert by_name["mlperf-deepseek-r1-4388"].output_ratio > 2.0  # reasoning answers
    doc = yaml.safe_load(resources.files("perfmodel").joinpath(
        "data/length_shapes.yaml").read_text())["datasets"]
    mlperf = [r for r in load_posed() if r["id"].startswith(("mlp4", "mlp5", "amd-mlperf"))]
    assert len(mlperf) == 19
    for row in mlperf:
        shape = shape_for(row.get("dataset", ""))
        if row["model"] == "llama-3.1-405b":  # not scored (pp > 1), and no table shipped
            assert shape is None
            continue
        assert shape is not None, row["id"]
        if not row["id"].startswith("amd-mlperf"):  # those carry a placeholder isl
            assert row["isl"] == pytest.approx(doc[shape.name]["mean_prompt"], abs=1.0)
    assert shape_for("random 1k/1k") is None and shape_for("") is None


def test_a_dataset_shape_slows_the_row_and_its_flip_shows_by_how_much():
    case = val.cases_by_id()["mlp51-b200-dsr1-dep8-offline"]
    shape = shape_for(case.dataset)
    assert shape is not None
    fixed = replace(case, dataset="")
    assert val.predict(case) < 0.9 * val.predict(fixed)
    # the flips the table lists for a row (validation._score) are sensitivity(case)
    flipped = val.sensitivity(case)
    assert flipped["lengths"] == pytest.approx(val.error(case, val.predict(fixed)))
    # a fixed-length row has no such assumption
    other = next(c for cid, c in val.cases_by_id().items()
                 if cid.startswith("ix-") and not c.dataset)
    assert np.isnan(val.sensitivity(other)["lengths"])


def test_held_d_over_two_is_the_fixed_length_point():
    gpu, m = get_gpu("H100-SXM"), get_model("llama-3.1-8b")
    base = aggregated_point(gpu, m, 1, 1, 1, 1000, 400.0, 0.0, Calibration(), batch=64)
    same = aggregated_point(gpu, m, 1, 1, 1, 1000, 400.0, 0.0, Calibration(), batch=64,
                            held=200.0)
    longer = aggregated_point(gpu, m, 1, 1, 1, 1000, 400.0, 0.0, Calibration(), batch=64,
                              held=2000.0)
    assert same.pass_s == pytest.approx(base.pass_s)
    assert longer.pass_s > base.pass_s and longer.rps < base.rps
    # the KV each sequence holds grows too: the largest batch that fits shrinks
    free = aggregated_point(gpu, m, 1, 1, 1, 1000, 400.0, 0.0, Calibration())
    held = aggregated_point(gpu, m, 1, 1, 1, 1000, 400.0, 0.0, Calibration(), held=20000.0)
    assert held.batch < free.batch
