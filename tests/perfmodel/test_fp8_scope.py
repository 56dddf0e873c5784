"""An FP8 checkpoint that quantizes the feed-forward layers only (Meta's FBGEMM FP8):
memory, attention GEMM precision, how a config or a run names it, and the validation
flip that shows what the scope is worth on the rows that use it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perfmodel import get_gpu, get_model
from perfmodel.kernels.library import kernels_for
from perfmodel.layers import attention_projections
from perfmodel.memory import attention_params_per_gpu, weight_bytes_per_gpu
from perfmodel.models import FFN_SCOPE_BF16_LAYERS, model_from_hf_config
from planner.core.errors import PlannerError

L405 = "llama-3.1-405b"


def test_ffn_scope_holds_attention_and_edge_mlps_in_bf16():
    fp8 = get_model(L405).with_dtypes("fp8")
    ffn = get_model(L405).with_dtypes("fp8_ffn")
    assert (fp8.fp8_scope, ffn.fp8_scope) == ("all", "ffn")
    assert ffn.weight_dtype == "fp8" and ffn.attn_weight_bytes == 2.0
    tp = 8
    # one extra byte per attention parameter on every layer, and per MLP parameter on
    # the first and last layers
    extra = (ffn.layers * attention_params_per_gpu(ffn, tp)
             + FFN_SCOPE_BF16_LAYERS * ffn.dense_mlp_params / tp)
    got = weight_bytes_per_gpu(ffn, tp, 1, 1) - weight_bytes_per_gpu(fp8, tp, 1, 1)
    assert got == pytest.approx(extra, rel=1e-12)
    # Llama-3.1-405B: about 9.6 GB more per GPU at TP8 (71.8 B attention parameters)
    assert 9.0e9 < got < 10.5e9


def test_ffn_scope_prices_attention_projections_at_bf16():
    ks = kernels_for(get_gpu("H100-SXM"), "vllm")
    fp8 = get_model(L405).with_dtypes("fp8")
    ffn = get_model(L405).with_dtypes("fp8_ffn")
    bf16 = get_model(L405).with_dtypes("bf16")
    rows = np.array([64.0, 4096.0])
    t_fp8, t_ffn, t_bf16 = (attention_projections(ks, m, rows, 8.0, absorbed=False)
                            for m in (fp8, ffn, bf16))
    assert np.allclose(t_ffn, t_bf16) and np.all(t_ffn > t_fp8)


def test_bf16_and_block_fp8_are_not_ffn_scoped():
    for dtype in ("bf16", "fp4"):
        m = replace(get_model(L405).with_dtypes(dtype), fp8_scope="ffn")
        assert not m.ffn_scoped and m.attn_gemm_kind == m.gemm_kind
    moe = get_model("deepseek-v3").with_dtypes("fp8_ffn")
    assert moe.bf16_mlp_layers == 0  # the edge-layer rule is Meta's dense checkpoints'


def test_config_with_fbgemm_skip_list_reads_as_ffn_scope():
    cfg = {"hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
           "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 32000,
           "quantization_config": {"quant_method": "fbgemm_fp8",
                                   "modules_to_not_convert": [
                                       "model.layers.0.self_attn.q_proj",
                                       "model.layers.0.mlp.down_proj", "lm_head"]}}
    assert model_from_hf_config(cfg, "tiny").fp8_scope == "ffn"
    cfg["quantization_config"]["modules_to_not_convert"] = ["lm_head"]
    m = model_from_hf_config(cfg, "tiny")
    assert m.fp8_scope == "all" and m.weight_dtype == "fp8"


def test_unknown_weight_dtype_lists_the_scoped_one():
    with pytest.raises(PlannerError, match="unknown weight dtype 'fp9'.*fp8_ffn"):
        get_model(L405).with_dtypes("fp9")
    with pytest.raises(PlannerError, match="unknown kv dtype 'fp8_ffn'"):
        get_model(L405).with_dtypes(kv_dtype="fp8_ffn")
    with pytest.raises(PlannerError, match="unknown kv dtype 'fp4'; known: bf16, fp8$"):
        get_model(L405).with_dtypes(kv_dtype="fp4")


def test_perf_cli_takes_the_scope(run_cli):
    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "8", "--model", L405,
                           "--engine", "vllm", "--mode", "agg", "--weight-dtype", "fp8_ffn",
                           "--tp", "8", "--dp", "1", "--ep", "1")
    assert rc == 0, err
    rc, out, err = run_cli("perf", "--gpu", "H100-SXM", "--gpus", "8", "--model", L405,
                           "--weight-dtype", "fp9")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "fp9" in err


def test_scope_flip_reports_the_all_fp8_posing():
    from perfmodel import validation as val

    cases = val.cases_by_id()
    scoped = [c for c in cases.values() if c.weights == "fp8_ffn"]
    assert scoped, "the rows on Meta's FP8 checkpoint are posed fp8_ffn"
    assert all(val.FLIPS["fp8_scope"](c).weights == "fp8" for c in scoped)
    other = next(c for c in cases.values() if c.weights == "fp8")
    assert val.FLIPS["fp8_scope"](other) is None
    # the scope costs memory: on the 256-prompt run the all-FP8 posing promises more
    case = cases["na-dstack-h100-l405b-tp8-2k2k-n256"]
    assert val.predict(val.FLIPS["fp8_scope"](case)) > 1.2 * val.predict(case)
