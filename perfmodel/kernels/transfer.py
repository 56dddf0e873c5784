"""Which measured GPU's kernel fits to use for a GPU the database does not cover.

The fitted efficiencies are functions of an op's shape; evaluated with the target GPU's
own datasheet (peak, bandwidth, SM count) they give the target's times: the ideal
compute and memory times move, the kernel's measured excess over them is kept
(:meth:`perfmodel.kernels.models.EfficiencyModel.time_on`).  What transfers well is
therefore an architecture that executes the same kernels in the same way, so the rule
is:

* **compute ops** (GEMM, MoE, attention): the measured GPU minimising

      2 [different architecture family] + 1 [same family, different generation]
      + |log2(ridge_t / ridge_s)| + 0.5 |log2(SMs_t / SMs_s)|

  -- same architecture first, then the closest ridge point (where memory- and
  compute-bound ops change over), then the closest SM count (how many tiles fill a
  wave).  H800 and H20 map to Hopper (H100 and H200), MI300X to the Hopper part with
  the nearest ridge, Rubin to Blackwell Ultra;
* **communication** (all-reduce, expert all-to-all): the measured GPU with the same
  interconnect class (NVLink-class scale-up >= 150 GB/s, else PCIe) minimising
  ``|log2 link ratio| + 1 [other architecture family]`` (latency floors are the
  architecture's); the bandwidth term is then rescaled to the target's links.

The held-out validation of this rule (predict H200 from H100, B300 from B200, L40S
from A100) is in ``docs/validation.md``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from perfmodel.hardware import GPU, gpu_catalog

#: Architecture generations: a different family member transfers better than a stranger.
_GENERATION = {"ampere": "ampere", "ada": "ada", "hopper": "hopper",
               "blackwell": "blackwell", "blackwell-ultra": "blackwell",
               "blackwell-workstation": "blackwell", "rubin": "blackwell",
               "cdna3": "cdna3", "xe2": "xe2"}


def system_gpu(system: str) -> GPU | None:
    """The catalog GPU whose kernels the measured ``system`` holds."""
    for gpu in gpu_catalog().values():
        if gpu.kernel_system == system:
            return gpu
    return None


def _ridge(gpu: GPU) -> float:
    return gpu.fp16_tflops * 1e12 / (gpu.hbm_gbps * 1e9)


def compute_distance(target: GPU, source: GPU) -> float:
    if target.arch and target.arch == source.arch:
        family = 0.0
    elif target.arch and _GENERATION.get(target.arch) == _GENERATION.get(source.arch):
        family = 1.0
    else:
        family = 2.0
    return (family + abs(np.log2(_ridge(target) / _ridge(source)))
            + 0.5 * abs(np.log2(target.sms / source.sms)))


def interconnect_class(gpu: GPU) -> str:
    return "nvlink" if gpu.scaleup_gbps >= 150 else "pcie"


def _candidates(systems: Iterable[str]) -> list[tuple[str, GPU]]:
    out = []
    for s in systems:
        g = system_gpu(s)
        if g is not None:
            out.append((s, g))
    return out


def compute_source(target: GPU, systems: Iterable[str]) -> str | None:
    """Measured system whose compute-op fits transfer best to ``target``."""
    cands = _candidates(systems)
    if not cands:
        return None
    return min(cands, key=lambda sg: (compute_distance(target, sg[1]), sg[0]))[0]


def comm_source(target: GPU, systems: Iterable[str]) -> str | None:
    """Measured system whose communication fits transfer best to ``target``."""
    cands = _candidates(systems)
    if not cands:
        return None
    same = [sg for sg in cands if interconnect_class(sg[1]) == interconnect_class(target)]
    pool = same or cands

    def score(sg):
        family = _GENERATION.get(target.arch) != _GENERATION.get(sg[1].arch)
        return (abs(np.log2(target.scaleup_gbps / sg[1].scaleup_gbps)) + float(family),
                compute_distance(target, sg[1]), sg[0])
    return min(pool, key=score)[0]
