"""Collective communication times: tensor-parallel all-reduce and expert-parallel
all-to-all (dispatch + combine), over scale-up (NVLink-class) or scale-out links.

Times in seconds; arguments broadcast like :mod:`perfmodel.roofline`.
"""

from __future__ import annotations

import numpy as np

from perfmodel.calibration import Calibration
from perfmodel.hardware import GPU
from perfmodel.models import ModelSpec


def allreduce_time(tokens, tp, gpu: GPU, model: ModelSpec, calib: Calibration):
    """Ring all-reduce of ``tokens`` bf16 hidden vectors across ``tp`` GPUs.

    Each GPU sends and receives 2 (tp - 1) / tp of the buffer.  A group larger than the
    scale-up domain runs at scale-out bandwidth.
    """
    buffer = tokens * model.hidden * 2.0
    bw = np.where(tp <= gpu.gpus_per_domain, gpu.scaleup_gbps * calib.scaleup_efficiency,
                  gpu.scaleout_gbps * calib.scaleout_efficiency) * 1e9
    t = 2.0 * (tp - 1.0) / tp * buffer / bw + calib.allreduce_latency_us * 1e-6
    return np.where(tp > 1, t, 0.0)


def alltoall_time(tokens_per_gpu, ep, gpu: GPU, model: ModelSpec, calib: Calibration):
    """Expert-parallel dispatch (fp8 activations) plus combine (bf16) for one MoE layer.

    Each token goes to ``k`` experts spread uniformly over ``ep`` GPUs in
    D = ceil(ep / domain) scale-up domains.  Within a domain every expert copy crosses
    NVLink once: k (1 - 1/ep) copies.  Across domains a token is sent once per remote
    domain that holds one of its experts and forwarded inside it (DeepEP's scheme), the
    expected number of such domains being (D - 1)(1 - (1 - 1/D)^k), capped by the
    model's group-limited routing (DeepSeek-V3: at most ``topk_group`` = 4 groups).
    Scale-up and scale-out transfers run concurrently, so the slower one sets the time.
    """
    k = model.experts_per_token
    bytes_per_copy = model.hidden * (1.0 + 2.0)  # dispatch fp8 + combine bf16
    domains = np.ceil(ep / gpu.gpus_per_domain)
    remote = (domains - 1.0) * (1.0 - (1.0 - 1.0 / domains) ** k)
    if model.route_groups_limit:
        remote = np.minimum(remote, model.route_groups_limit)
    intra = tokens_per_gpu * k * (1.0 - 1.0 / ep) * bytes_per_copy
    inter = tokens_per_gpu * remote * bytes_per_copy
    t_intra = intra / (gpu.scaleup_gbps * calib.scaleup_efficiency * 1e9)
    t_inter = inter / (gpu.scaleout_gbps * calib.scaleout_efficiency * 1e9)
    latency = np.where(domains > 1, calib.a2a_latency_inter_us, calib.a2a_latency_intra_us)
    t = np.maximum(t_intra, t_inter) * calib.expert_imbalance + 2.0 * latency * 1e-6
    return np.where(ep > 1, t, 0.0)
