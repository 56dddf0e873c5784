"""Issue 32: model configs that contradict themselves and datasheets beyond physics are
one line naming the file and the field, exit 2 -- not a plan, not a numpy warning."""

from __future__ import annotations

import json

import pytest

from perfmodel.models import get_model

BASE = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
MOE = {**BASE, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 2048,
       "first_k_dense_replace": 1}


@pytest.mark.parametrize("cfg,field", [
    ({**BASE, "num_key_value_heads": 64}, "num_key_value_heads"),
    ({**BASE, "num_key_value_heads": 12}, "num_key_value_heads"),
    ({**BASE, "head_dim": 0, "hidden_size": 16, "num_attention_heads": 32}, "head_dim"),
    ({**MOE, "num_experts_per_tok": 16}, "num_experts_per_tok"),
    ({**MOE, "first_k_dense_replace": 40}, "first_k_dense_replace"),
    ({**MOE, "n_group": 3}, "n_group"),
    ({**MOE, "n_group": 4, "topk_group": 5}, "topk_group"),
])
def test_contradictory_configs(run_cli, tmp_path, cfg, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    rc, _, err = run_cli("perf", "--model", str(path), "--gpu", "H200", "--gpus", "8")
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and field in lines[0] and str(path) in lines[0]


def test_the_consistent_configs_still_load(tmp_path):
    for cfg in (BASE, MOE):
        path = tmp_path / "ok.json"
        path.write_text(json.dumps(cfg))
        assert get_model(str(path)).layers == 32


@pytest.mark.parametrize("field,value", [("hbm_gbps", 1e308), ("fp16_tflops", 1e7),
                                         ("hbm_gb", 1e9), ("sms", 10**6)])
def test_datasheets_within_physical_bounds(run_cli, tmp_path, field, value):
    sheet = {"fp16_tflops": 400, "fp8_tflops": 800, "hbm_gb": 96, "hbm_gbps": 3000,
             "scaleup_gbps": 200, "scaleout_gbps": 50, "gpus_per_domain": 8, "sms": 120,
             field: value}
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - type: MyAccel\n    count: 16\n    price_per_hour: 1.2\n"
                   f"    datasheet: {json.dumps(sheet)}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and field in lines[0]
    assert not (tmp_path / "o").exists()
