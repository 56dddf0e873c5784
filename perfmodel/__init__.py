"""Shallowsim-style analytic performance model for MoE and dense LLMs on any GPU.

No profiling and no weights: phase times come from datasheet numbers (``hardware``),
Hugging Face config fields (``models``) and documented efficiency constants
(``calibration``).  The planner's entry point is :func:`benchmark_island`.
"""

from perfmodel import float_path  # noqa: F401  (first: numpy's float path, before numpy)
from perfmodel.calibration import DEFAULT_CALIBRATION, Calibration
from perfmodel.decode import step_model
from perfmodel.hardware import GPU, get_gpu, gpu_catalog, gpu_from_datasheet
from perfmodel.island import SLO, IslandTable, PhaseTable, WorkloadShape, benchmark_island
from perfmodel.memory import max_decode_batch, thesis_batch_rule, weight_bytes_per_gpu
from perfmodel.models import ModelSpec, get_model, list_models, model_from_hf_config
from perfmodel.parallel import ParallelConfig, enumerate_configs
from perfmodel.prefill import prefill_time

__all__ = [
    "Calibration", "DEFAULT_CALIBRATION", "GPU", "IslandTable", "ModelSpec", "ParallelConfig",
    "PhaseTable", "SLO", "WorkloadShape", "benchmark_island", "enumerate_configs", "get_gpu",
    "get_model", "gpu_catalog", "gpu_from_datasheet", "list_models", "max_decode_batch",
    "model_from_hf_config", "prefill_time", "step_model", "thesis_batch_rule",
    "weight_bytes_per_gpu",
]
