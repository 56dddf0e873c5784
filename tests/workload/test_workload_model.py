"""Workload object, distribution families, YAML round trips and built-in loading."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from planner.core.errors import PlannerError
from planner.workload import (
    DEFAULT_MAX_LEN,
    JointHistogram,
    Workload,
    list_workloads,
    load_workload,
    read_workload,
    write_workload,
)
from planner.workload.schema import with_max_len, workload_from_dict, workload_to_dict


def _doc(input_spec, **extra):
    doc = {"name": "t", "input": input_spec, "decode": {"mean": 10, "max": 100}}
    doc.update(extra)
    return doc


def _build(input_spec, **extra) -> Workload:
    return workload_from_dict(_doc(input_spec, **extra), source="test.yaml")


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


# ------------------------------------------------------------------ built-ins
@pytest.mark.parametrize("name", list_workloads())
def test_builtin_pmf_is_a_distribution(name):
    w = load_workload(name)
    assert w.pmf.dtype == np.float64
    assert w.pmf.shape == (w.max_len + 1,)
    assert w.pmf[0] == 0.0
    assert np.all(w.pmf >= 0)
    assert w.pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert 1 <= w.decode_mean <= w.decode_max
    if w.decode_pmf is not None:
        assert w.decode_pmf.sum() == pytest.approx(1.0, abs=1e-12)
        assert w.decode_pmf.size == w.decode_max + 1
    assert not w.pmf.flags.writeable


def test_builtins_include_the_thesis_and_azure_workloads():
    names = list_workloads()
    for expected in ("azure-code-2023", "azure-conv-2023", "thesis-fig4.2"):
        assert expected in names


def test_thesis_fig42_matches_truncated_normal():
    w = load_workload("thesis-fig4.2")
    assert w.max_len == 8000
    assert (w.decode_mean, w.decode_max) == (100.0, 1000)
    # Independent check: continuous truncated-normal mean on [0, 8000] by quadrature.
    mu, sigma = 500.0, 2000.0
    x = np.linspace(0.0, 8000.0, 160_001)
    dens = np.exp(-0.5 * ((x - mu) / sigma) ** 2)
    cont_mean = float(np.sum(x * dens) / np.sum(dens))
    assert w.mean_input == pytest.approx(cont_mean, abs=1.0)
    # Ratio of two cell probabilities follows the normal density.
    ratio = w.pmf[4000] / w.pmf[500]
    assert ratio == pytest.approx(math.exp(-0.5 * (3500 / 2000) ** 2), rel=1e-4)


def test_unknown_workload_lists_known_names():
    with pytest.raises(PlannerError) as err:
        load_workload("no-such-workload")
    msg = str(err.value)
    assert "no-such-workload" in msg and "azure-code-2023" in msg and "thesis-fig4.2" in msg


def test_load_is_cached_and_max_len_truncates():
    a = load_workload("thesis-fig4.2")
    assert load_workload("thesis-fig4.2") is a
    b = load_workload("thesis-fig4.2", max_len=4000)
    assert b.max_len == 4000
    kept = a.pmf[:4001].sum()
    assert b.clipped_mass == pytest.approx(1 - kept, rel=1e-9)
    np.testing.assert_allclose(b.pmf, a.pmf[:4001] / kept, rtol=1e-9, atol=1e-18)
    c = with_max_len(a, 9000)  # padding: the truncation window of the spec is 8000
    assert c.max_len == 9000 and np.all(c.pmf[8001:] == 0)
    np.testing.assert_allclose(c.pmf[:8001], a.pmf, rtol=1e-12)


# ------------------------------------------------------------------ families
def test_point_and_uniform():
    w = _build({"type": "point", "value": 300})
    assert w.max_len == 300 and w.pmf[300] == 1.0 and w.quantile(0.5) == 300
    u = _build({"type": "uniform", "low": 10, "high": 19})
    assert u.max_len == 19
    np.testing.assert_allclose(u.pmf[10:20], 0.1)
    assert u.pmf[:10].sum() == 0
    assert u.mean_input == pytest.approx(14.5)
    assert u.quantile(0.0) == 10 and u.quantile(0.1) == 10 and u.quantile(0.11) == 11
    assert u.quantile(1.0) == 19


def test_lognormal_clipped_mass_is_the_analytic_tail():
    mu, sigma, n = math.log(1000), 1.0, 4000
    w = _build({"type": "lognormal", "mu": mu, "sigma": sigma}, max_len=n)
    tail = 1 - _phi((math.log(n + 0.5) - mu) / sigma)
    below = _phi((math.log(0.5) - mu) / sigma)  # the cell of length 0 is outside the support
    assert w.clipped_mass == pytest.approx(tail / (1 - below), rel=1e-9)
    # Median parametrisation is the same distribution.
    m = _build({"type": "lognormal", "median": 1000, "sigma": sigma}, max_len=n)
    np.testing.assert_allclose(m.pmf, w.pmf, rtol=1e-12)
    # Without clipping the median is the lognormal median.
    big = _build({"type": "lognormal", "median": 1000, "sigma": 0.5}, max_len=100_000)
    assert abs(big.quantile(0.5) - 1000) <= 1


def test_unbounded_family_defaults_to_8k():
    w = _build({"type": "lognormal", "median": 500, "sigma": 1.5})
    assert w.max_len == DEFAULT_MAX_LEN
    assert 0 < w.clipped_mass < 0.05


def test_mixture_weights_on_disjoint_supports():
    spec = {"type": "mixture", "components": [
        {"weight": 3, "type": "uniform", "low": 1, "high": 100},
        {"weight": 1, "type": "point", "value": 500},
    ]}
    w = _build(spec)
    assert w.max_len == 500
    assert w.pmf[1:101].sum() == pytest.approx(0.75)
    assert w.pmf[500] == pytest.approx(0.25)


def test_histogram_and_binned():
    h = _build({"type": "histogram", "values": [5, 7, 5], "weights": [1, 2, 1]})
    assert h.pmf[5] == pytest.approx(0.5) and h.pmf[7] == pytest.approx(0.5)
    b = _build({"type": "binned", "edges": [0, 4, 8], "weights": [3, 1]})
    # Bin [0, 4) spreads over lengths 1..3 (0 is not a request), [4, 8) over 4..7.
    np.testing.assert_allclose(b.pmf[1:4], 0.25)
    np.testing.assert_allclose(b.pmf[4:8], 0.0625)
    assert b.max_len == 7


def test_decode_dist_gives_mean_and_max():
    w = workload_from_dict({"name": "d", "input": {"type": "point", "value": 10},
                            "decode": {"dist": {"type": "uniform", "low": 1, "high": 9}}},
                           source="x.yaml")
    assert w.decode_max == 9 and w.decode_mean == pytest.approx(5.0)
    assert w.decode_quantile(0.5) == 5


@pytest.mark.parametrize("doc, fragment", [
    (_doc({"type": "gamma"}), "field 'input.type'"),
    (_doc({"type": "normal", "mu": 1, "sigma": -1}), "field 'input.sigma'"),
    (_doc({"type": "normal", "mu": 1, "sigam": 2}), "sigam"),
    (_doc({"type": "uniform", "low": 0, "high": 5}), "field 'input.low'"),
    (_doc({"type": "histogram", "values": [1, 2], "weights": [1]}), "field 'input.weights'"),
    (_doc({"type": "histogram", "values": [1, "x"], "weights": [1, 1]}),
     "field 'input.values[1]'"),
    ({"name": "t", "input": {"type": "point", "value": 3}, "decode": {"mean": 5}},
     "field 'decode.max'"),
    ({"name": "t", "input": {"type": "point", "value": 3},
      "decode": {"mean": 50, "max": 10}}, "field 'decode.mean'"),
    (_doc({"type": "point", "value": 3}, arrival={"rate_rps": 0}), "field 'arrival.rate_rps'"),
    (_doc({"type": "point", "value": 3}, colour="red"), "colour"),
    (_doc({"type": "mixture", "components": [{"type": "point", "value": 3}]}),
     "field 'input.components[0].weight'"),
])
def test_bad_documents_name_file_and_field(doc, fragment):
    with pytest.raises(PlannerError) as err:
        workload_from_dict(doc, source="bad.yaml")
    assert str(err.value).startswith("bad.yaml")
    assert fragment in str(err.value)
    assert err.value.exit_code == 2


def test_max_len_below_support_is_an_error():
    with pytest.raises(PlannerError, match="no probability"):
        _build({"type": "point", "value": 300}, max_len=100)


# ------------------------------------------------------------------ Workload object
def test_workload_validation():
    pmf = np.array([0.0, 0.5, 0.5])
    with pytest.raises(PlannerError, match="pmf\\[0\\]"):
        Workload("x", np.array([0.5, 0.5]), decode_mean=1, decode_max=2)
    with pytest.raises(PlannerError, match="sums to"):
        Workload("x", np.array([0.0, 0.5, 0.4]), decode_mean=1, decode_max=2)
    with pytest.raises(PlannerError, match="decode_mean"):
        Workload("x", pmf, decode_mean=5, decode_max=2)
    with pytest.raises(PlannerError, match="decode_pmf"):
        Workload("x", pmf, decode_mean=1, decode_max=3, decode_pmf=pmf)
    w = Workload("x", pmf, decode_mean=1.5, decode_max=2)
    assert list(w.lengths) == [0, 1, 2] and w.mean_input == pytest.approx(1.5)
    np.testing.assert_array_equal(w.quantile(np.array([0.25, 0.5, 0.75])), [1, 1, 2])


def test_decode_mean_given_input_uses_joint_and_falls_back():
    joint = JointHistogram(input_edges=[0, 100, 200, 300], output_edges=[1, 2, 4],
                           counts=[[1, 1], [0, 0], [2, 0]], output_mean=[2.5, np.nan, 1.0])
    pmf = np.zeros(301)
    pmf[[50, 250]] = 0.5
    w = Workload("j", pmf, decode_mean=3.0, decode_max=10, joint=joint)
    got = w.decode_mean_given_input(np.array([50, 150, 250, 300]))
    np.testing.assert_allclose(got, [2.5, 3.0, 1.0, 3.0])
    plain = Workload("p", pmf, decode_mean=3.0, decode_max=10)
    np.testing.assert_allclose(plain.decode_mean_given_input([1, 2]), [3.0, 3.0])


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", ["thesis-fig4.2", "example-mixture", "example-lognormal",
                                  "azure-code-2023"])
def test_to_dict_yaml_round_trip(name, tmp_path):
    w = load_workload(name)
    path = tmp_path / f"{name}.yaml"
    write_workload(path, w)
    text = path.read_text()
    assert len(text) < 60_000  # compact: specs, not max_len floats
    back = read_workload(path)
    assert back.name == w.name and back.max_len == w.max_len
    # Same spec, same arithmetic: bit-identical pmfs and identical content hashes.
    np.testing.assert_array_equal(back.pmf, w.pmf)
    assert back.fingerprint == w.fingerprint
    assert back.clipped_mass == pytest.approx(w.clipped_mass, rel=1e-9, abs=1e-15)
    assert (back.decode_mean, back.decode_max, back.rate_rps, back.cv, back.prefix_hit_rate) == (
        w.decode_mean, w.decode_max, w.rate_rps, w.cv, w.prefix_hit_rate)


def test_workload_without_spec_round_trips_as_sparse_histogram():
    pmf = np.zeros(11)
    pmf[[3, 10]] = [0.25, 0.75]
    w = Workload("raw", pmf, decode_mean=2.0, decode_max=4,
                 decode_pmf=np.array([0, 0.5, 0, 0, 0.5]), rate_rps=2.0, cv=1.5)
    d = workload_to_dict(w)
    assert d["input"] == {"type": "histogram", "values": [3, 10], "weights": [0.25, 0.75]}
    back = workload_from_dict(yaml.safe_load(yaml.safe_dump(d)))
    np.testing.assert_array_equal(back.pmf, w.pmf)
    np.testing.assert_array_equal(back.decode_pmf, w.decode_pmf)
    assert (back.rate_rps, back.cv) == (2.0, 1.5)


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: x\ninput: {type: point, value: 3\ndecode: {mean: 1, max: 2}\n")
    with pytest.raises(PlannerError) as err:
        load_workload(bad)
    assert "broken.yaml:" in str(err.value) and "invalid YAML" in str(err.value)
