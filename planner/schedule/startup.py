"""How long an island takes to start serving: the schedule's start-up lag.

An island added for a slot must be serving when the slot's load arrives, so it is
started -- and, on demand or spot, paid for -- that long before (:mod:`planner.schedule.milp`).
The lag is the model's weights over the loading path plus the engine's own start
(process start, memory profiling, CUDA-graph capture)::

    lag = ENGINE_INIT_S + weight bytes / LOAD_BYTES_PER_S

taken for one server reading the whole model (an island of data-parallel replicas
reads it once per replica; a sharded one reads less per server, so this errs long,
which costs money, never SLO).  ``--startup-s`` overrides it.
"""

from __future__ import annotations

from perfmodel import get_model

#: Bytes/s of weights into GPU memory.  ServerlessLLM (Fu et al., OSDI 2024,
#: "ServerlessLLM: Low-Latency Serverless Inference for Large Language Models") reports
#: loading LLaMA-2-70B (130 GB of fp16 weights) in 84 s with the loaders it compares
#: against (read from a summary of its evaluation): 130e9 / 84 = 1.55 GB/s.  Its own
#: loader is several times faster; an engine started with the usual safetensors path
#: is the case to plan for.
LOAD_BYTES_PER_S = 130e9 / 84
LOAD_SOURCE = "ServerlessLLM (Fu et al., OSDI 2024): LLaMA-2-70B, 130 GB, loaded in 84 s"
#: Seconds an engine spends before serving beyond reading weights (process start,
#: memory profiling, CUDA-graph capture).  Anyscale ("Loading Llama-2 70b 20x faster
#: with Anyscale Endpoints", 2023) brought download *and* initialisation of
#: Llama-2-70B down to 20 s, so 20 s of start beside the weights' reading is not
#: pessimistic.
ENGINE_INIT_S = 20.0


def default_startup_s(model: str) -> float:
    """The lag of the module docstring for a built-in model name or config path."""
    m = get_model(model)
    total = float(m.total_params) * float(m.weight_bytes)
    return ENGINE_INIT_S + total / LOAD_BYTES_PER_S


def startup_source(model: str, seconds: float) -> str:
    """Where the lag comes from, for the report."""
    try:
        default = default_startup_s(model)
    except Exception:  # a model the catalog cannot price: the user's figure only
        default = -1.0
    if abs(seconds - default) < 1e-6:
        return (f"weights read at {LOAD_BYTES_PER_S / 1e9:.2f} GB/s ({LOAD_SOURCE}) plus "
                f"{ENGINE_INIT_S:g} s of engine start (Anyscale, 2023)")
    return "--startup-s"


__all__ = ["ENGINE_INIT_S", "LOAD_BYTES_PER_S", "default_startup_s", "startup_source"]
