"""Hostile inventories and model configs fail as one line naming the file and field."""

from __future__ import annotations

import json

import pytest

from perfmodel.models import get_model
from planner.core.errors import PlannerError
from planner.fleet.inventory import load_inventory


@pytest.mark.parametrize("text, expect", [
    ("gpus:\n  - {type: H200, count: .nan}\n", "field 'count' must be finite"),
    ("gpus:\n  - {type: H200, count: .inf}\n", "field 'count' must be finite"),
    ("gpus:\n  - {type: H200, count: 1000000000}\n", r"field 'count' must be <= 1e\+06"),
    ("gpus:\n  - {type: H200, count: 4.5}\n", "field 'count' must be a whole number"),
    ("gpus:\n  - {type: H200, count: 4, min_island: .nan}\n", "field 'min_island' must be"),
    ("gpus:\n  - {type: H200, count: 4, price_per_hour: 1.0e-308}\n", "at least 1e-06"),
    ("gpus:\n  - {type: H200, count: 4, price_per_hour: .nan}\n",
     "field 'price_per_hour' must be finite"),
    ("gpus:\n  - {type: H200, count: 4}\n  - {type: h200, count: 4}\n", "more than once"),
    ("gpus:\n  - {type: H200, count: 4}\ngpus:\n  - {type: H20, count: 4}\n",
     "key 'gpus' appears twice"),
    ("gpus:\n  - {type: H200, count: 4, price_source: 7}\n", "field 'price_source' must be"),
])
def test_bad_inventory_is_one_line_naming_the_field(tmp_path, text, expect):
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    with pytest.raises(PlannerError, match=expect) as err:
        load_inventory(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_non_utf8_inventory_names_the_byte(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_bytes(b"gpus:\n  - {type: H2\xff0, count: 4}\n")
    with pytest.raises(PlannerError, match=r"not UTF-8 text \(byte 19"):
        load_inventory(path)


def test_deeply_nested_yaml_is_refused(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("gpus: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(PlannerError, match="nest"):
        load_inventory(path)


def test_a_directory_is_not_an_inventory(tmp_path):
    with pytest.raises(PlannerError, match="is a directory"):
        load_inventory(tmp_path)


def test_catalog_name_in_any_case_is_the_catalog_gpu(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("gpus:\n  - {type: h200, count: 4}\n")
    assert load_inventory(path).entries[0].name == "H200"


@pytest.mark.parametrize("field, value, expect", [
    ("hidden_size", 0.5, "must be a whole number"),
    ("hidden_size", "NaN", "must be a number"),
    ("num_key_value_heads", "abc", "must be a number"),
    ("vocab_size", 1e12, "must be <="),
    ("quantization_config", "fp8", "must be an object"),
])
def test_bad_model_config_is_one_line(tmp_path, field, value, expect):
    cfg = {"hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
           "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256}
    cfg[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(PlannerError, match=expect) as err:
        get_model(str(path))
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_nan_in_model_config_json_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": NaN}')
    with pytest.raises(PlannerError, match="NaN is not a number JSON allows"):
        get_model(str(path))


def test_planning_context_bounds_lengths_and_ranges():
    from perfmodel import SLO, get_gpu
    from planner.context.evaluate import MAX_PLAN_LEN, MAX_RANGES, PlanningContext
    from planner.workload import workload_from_dict

    huge = workload_from_dict({"name": "huge", "max_len": MAX_PLAN_LEN + 1,
                               "input": {"type": "point", "value": 1000},
                               "decode": {"max": 200, "dist": {"type": "point", "value": 100}}},
                              source="huge.yaml")
    common = {"model": "deepseek-v3", "gpus": {"H200": get_gpu("H200")}, "slo": SLO(),
              "engine": "trtllm"}
    with pytest.raises(PlannerError, match="planner plans prompts up to 262,144"):
        PlanningContext.build(workload=huge, ranges=8, **common)
    with pytest.raises(PlannerError, match=f"at most {MAX_RANGES:,}"):
        PlanningContext.build(workload="azure-conv-2023", ranges=100_000_000, **common)
