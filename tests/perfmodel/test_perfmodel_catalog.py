"""GPU and model catalogs: contents, published parameter counts, input validation."""

from __future__ import annotations

import pytest

from perfmodel import get_gpu, get_model, gpu_catalog, gpu_from_datasheet, list_models
from perfmodel.models import model_from_hf_config
from planner.core.errors import PlannerError

REQUIRED_GPUS = ["H20", "H800", "H100-SXM", "H200", "B200", "DGX-B300", "GB200-NVL72",
                 "Rubin-NVL144", "A100-80G", "L40S", "MI300X"]


def test_catalog_has_required_gpus_with_dated_sourced_prices():
    cat = gpu_catalog()
    for name in REQUIRED_GPUS:
        gpu = cat[name]
        assert gpu.hbm_gb > 0 and gpu.hbm_gbps > 0 and gpu.fp16_tflops > 0
        assert gpu.price_per_hour > 0 and gpu.price_source and gpu.price_date
        assert 0 <= gpu.comm_sms < gpu.sms


def test_thesis_figures_carried_over():
    # ../shared/reference/shallowsim_gpu_info.csv: H20 148/296 TFLOPS, 96 GB; H200 141 GB
    h20, h200 = get_gpu("H20"), get_gpu("h200")
    assert (h20.fp16_tflops, h20.fp8_tflops, h20.hbm_gb) == (148, 296, 96)
    assert h200.hbm_gb == 141 and h200.gpus_per_domain == 8
    assert get_gpu("Rubin-NVL144").gpus_per_domain == 144


def test_precision_fallback():
    a100 = get_gpu("A100-80G")
    assert a100.tflops("fp8") == a100.fp16_tflops  # no fp8 units: upcast to bf16
    b200 = get_gpu("B200")
    assert b200.tflops("fp4") == 9000


def test_unknown_gpu_lists_known():
    with pytest.raises(PlannerError, match="known GPUs: .*H200"):
        get_gpu("H9000")


@pytest.mark.parametrize("field,value,message", [
    ("hbm_gbps", 0, "must be > 0"),
    ("hbm_gb", -1, "must be > 0"),
    ("fp16_tflops", "fast", "must be a number"),
    ("scaleout_gbps", None, "is missing"),
])
def test_datasheet_gpu_rejects_nonphysical(field, value, message):
    values = {"name": "X1", "fp16_tflops": 100, "hbm_gb": 64, "hbm_gbps": 2000,
              "scaleup_gbps": 100, "scaleout_gbps": 25, "gpus_per_domain": 8, "sms": 100}
    gpu_from_datasheet(values, "inv.yaml")  # valid as given
    values[field] = value
    with pytest.raises(PlannerError, match=f"inv.yaml: GPU 'X1' field '{field}' {message}"):
        gpu_from_datasheet(values, "inv.yaml")


# Published parameter counts (model cards): total and active, in billions.
@pytest.mark.parametrize("name,total,active", [
    ("deepseek-v3", 671, 37),
    ("deepseek-r1", 671, 37),
    ("llama-3.1-70b", 70.6, 70.6),
    ("llama-3.1-8b", 8.03, 8.03),
    ("qwen3-32b", 32.8, 32.8),
    ("qwen3-235b-a22b", 235, 22),
    ("mixtral-8x7b", 46.7, 12.9),
])
def test_parameter_counts_match_model_cards(name, total, active):
    m = get_model(name)
    assert m.total_params / 1e9 == pytest.approx(total, rel=0.03)
    # ``active_params`` counts the LM head but not the input embedding (a lookup, no
    # FLOPs); model cards count both, which matters only for small models.
    assert (m.active_params + m.embed_params) / 1e9 == pytest.approx(active, rel=0.06)


def test_architecture_features():
    ds = get_model("deepseek-v3")
    assert ds.is_moe and ds.is_mla and ds.weight_dtype == "fp8" and ds.dense_layers == 3
    assert ds.kv_bytes_per_token_layer == (512 + 64) * 2  # latent + rope key, bf16
    llama = get_model("llama-3.1-70b")
    assert not llama.is_moe and not llama.is_mla and llama.kv_heads == 8
    assert llama.kv_bytes_per_token_layer == 2 * 8 * 128 * 2
    assert get_model("mixtral-8x7b").experts_per_token == 2
    assert set(list_models()) >= {"deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b"}


def test_dtype_override_and_errors(tmp_path):
    m = get_model("llama-3.1-70b").with_dtypes("fp8", "fp8")
    assert m.weight_bytes == 1 and m.kv_bytes == 1
    with pytest.raises(PlannerError, match="unknown kv dtype 'int3'"):
        get_model("llama-3.1-70b").with_dtypes(kv_dtype="int3")
    with pytest.raises(PlannerError, match="unknown model 'gpt-5'.*deepseek-v3"):
        get_model("gpt-5")
    bad = tmp_path / "cfg.json"
    bad.write_text('{"hidden_size": 4096, "num_hidden_layers": 32}')
    with pytest.raises(PlannerError, match="cfg.json: field 'num_attention_heads' is missing"):
        get_model(str(bad))
    bad.write_text("{not json")
    with pytest.raises(PlannerError, match="not valid JSON"):
        get_model(str(bad))


def test_config_json_roundtrip(tmp_path):
    cfg = {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
           "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 32000}
    p = tmp_path / "tiny.json"
    import json

    p.write_text(json.dumps(cfg))
    m = get_model(str(p))
    assert m == model_from_hf_config(cfg, "tiny")
    assert m.head_dim == 128
