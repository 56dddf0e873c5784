"""Where a GPU without measured kernels gets its kernel timings (issue 29).

The fitted efficiencies are functions of an op's shape; evaluated with the target GPU's
own datasheet (peak, bandwidth, SM count) they give the target's times: the ideal
compute and memory times move, the kernel's measured excess over them is kept
(:meth:`perfmodel.kernels.models.EfficiencyModel.time_on`).  What transfers well is
therefore an architecture that executes the same kernels in the same way -- the same
vendor's compilers, libraries and memory system first.  The rule:

1. **measured** -- the GPU's own measured system;
2. **transfer** -- else the nearest measured architecture *of the GPU's own vendor*:

   * compute ops (GEMM, MoE, attention): the measured GPU minimising

         2 [different architecture family] + 1 [same family, different generation]
         + |log2(ridge_t / ridge_s)| + 0.5 |log2(SMs_t / SMs_s)|

     -- same architecture first, then the closest ridge point (where memory- and
     compute-bound ops change over), then the closest SM count (how many tiles fill a
     wave).  H800 and H20 map to Hopper (H100 and H200), Rubin to Blackwell;
   * communication (all-reduce, expert all-to-all): the measured GPU with the same
     interconnect class (NVLink-class scale-up >= 150 GB/s, else PCIe) minimising
     ``|log2 link ratio| + 1 [other architecture family]`` (latency floors are the
     architecture's); the bandwidth term is then rescaled to the target's links;

3. **vendor prior** -- else, where the vendor ships kernel priors derived from its
   published kernel figures (``perfmodel/data/kernels/priors_<vendor>.yaml``,
   :mod:`perfmodel.kernels.priors`), those: AMD today, with no measured AMD system;
4. **cross-vendor transfer** -- else (a vendor with neither) the same distance over
   every measured GPU, which lands on another vendor's part: a transfer nothing
   validates, which :func:`provenance` says (``cross_vendor``).

The held-out validation of the transfer (predict H200 from H100, B300 from B200, L40S
from A100) is in ``docs/validation.md``; the priors' check against published figures
not used to set them is in ``docs/perfmodel.md`` ("AMD kernel priors").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from perfmodel.hardware import GPU, gpu_catalog
from perfmodel.launch import gpu_vendor

#: Architecture generations: a different family member transfers better than a stranger.
_GENERATION = {"ampere": "ampere", "ada": "ada", "hopper": "hopper",
               "blackwell": "blackwell", "blackwell-ultra": "blackwell",
               "blackwell-workstation": "blackwell", "rubin": "blackwell",
               "cdna3": "cdna3", "cdna4": "cdna4", "xe2": "xe2"}


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


def same_vendor(target: GPU, systems: Iterable[str]) -> list[str]:
    """The measured systems of ``target``'s vendor."""
    vendor = gpu_vendor(target)
    return [s for s, g in _candidates(systems) if gpu_vendor(g) == vendor]


def compute_source(target: GPU, systems: Iterable[str], any_vendor: bool = False
                   ) -> str | None:
    """Measured system of ``target``'s vendor whose compute-op fits transfer best to it
    (None when its vendor has none); ``any_vendor``: over every system (the
    cross-vendor fallback of rule 4)."""
    cands = _candidates(systems if any_vendor else same_vendor(target, systems))
    if not cands:
        return None
    return min(cands, key=lambda sg: (compute_distance(target, sg[1]), sg[0]))[0]


def comm_source(target: GPU, systems: Iterable[str], any_vendor: bool = False
                ) -> str | None:
    """Measured system of ``target``'s vendor whose communication fits transfer best to
    it (``any_vendor``: over every system)."""
    cands = _candidates(systems if any_vendor else same_vendor(target, systems))
    if not cands:
        return None
    same = [sg for sg in cands if interconnect_class(sg[1]) == interconnect_class(target)]
    pool = same or cands

    def score(sg):
        family = _GENERATION.get(target.arch) != _GENERATION.get(sg[1].arch)
        return (abs(np.log2(target.scaleup_gbps / sg[1].scaleup_gbps)) + float(family),
                compute_distance(target, sg[1]), sg[0])
    return min(pool, key=score)[0]


@dataclass(frozen=True)
class Provenance:
    """Where a GPU's kernel timings come from (module docstring): its own measured
    tables, another measured GPU's efficiencies run at this GPU's datasheet peaks, or
    its vendor's kernel priors."""

    gpu: str
    vendor: str
    measured: bool
    compute_from: str | None  # catalog GPU whose compute fits are used (None: own / none)
    compute_vendor: str | None
    comm_from: str | None
    prior: str | None = None  # the vendor's priors file, when they price the GPU

    @property
    def cross_vendor(self) -> bool:
        """Transferred from another vendor's part: a different compiler stack, kernel
        library and memory system, which the transfer rule was never validated across."""
        return self.compute_vendor is not None and self.compute_vendor != self.vendor

    @property
    def rule(self) -> str:
        """``measured``, ``transfer``, ``vendor prior``, ``cross-vendor transfer`` or
        ``none`` (nothing measured to transfer from)."""
        if self.measured:
            return "measured"
        if self.prior:
            return "vendor prior"
        if self.compute_from is None:
            return "none"
        return "cross-vendor transfer" if self.cross_vendor else "transfer"

    def sentence(self) -> str:
        if self.measured:
            return f"{self.gpu}: measured kernels"
        if self.prior:
            return (f"{self.gpu}: no measured kernels; priced from {self.vendor.upper()} "
                    f"kernel priors ({self.prior}), set from {self.vendor.upper()}'s "
                    "published kernel figures and checked against others")
        if self.compute_from is None:
            return f"{self.gpu}: no measured kernels to transfer from"
        text = (f"{self.gpu}: no measured kernels; compute efficiencies transferred from "
                f"{self.compute_from}")
        if self.comm_from and self.comm_from != self.compute_from:
            text += f", communication from {self.comm_from}"
        if self.cross_vendor:
            text += (f" -- an {str(self.compute_vendor).upper()} part's, for an "
                     f"{self.vendor.upper()} GPU: unvalidated for its vendor")
        return text

    def label(self) -> str:
        """Short form for a catalog column: ``measured``, ``transferred from H200``,
        ``vendor prior (priors_amd.yaml)``, ``cross-vendor: RTX-PRO-6000``."""
        rule = self.rule
        if rule == "measured":
            return "measured"
        if rule == "vendor prior":
            return f"vendor prior ({self.prior})"
        if rule == "transfer":
            return f"transferred from {self.compute_from}"
        if rule == "cross-vendor transfer":
            return f"cross-vendor: transferred from {self.compute_from}"
        return "none"


def provenance(gpu: GPU) -> Provenance:
    """:class:`Provenance` of ``gpu`` under the rule of this module."""
    from perfmodel.kernels.priors import has_priors, prior_file
    from perfmodel.kernels.store import measured_systems

    systems = measured_systems()
    vendor = gpu_vendor(gpu)
    if gpu.kernel_system and gpu.kernel_system in systems:
        return Provenance(gpu.name, vendor, True, None, None, None)
    others = [s for s in systems if s != gpu.kernel_system]
    comp, comm = compute_source(gpu, others), comm_source(gpu, others)
    if comp is None and has_priors(vendor):
        return Provenance(gpu.name, vendor, False, None, None, None, prior_file(vendor))
    if comp is None:  # rule 4: no measured part and no priors of its vendor
        comp = compute_source(gpu, others, any_vendor=True)
        comm = comm or comm_source(gpu, others, any_vendor=True)
    comp_gpu = system_gpu(comp) if comp else None
    comm_gpu = system_gpu(comm) if comm else None
    return Provenance(gpu.name, vendor, False, comp_gpu.name if comp_gpu else None,
                      gpu_vendor(comp_gpu) if comp_gpu else None,
                      comm_gpu.name if comm_gpu else None)
