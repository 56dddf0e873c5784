"""The fitted kernel models: compact, serialisable, vectorised.

Three forms cover every operation (the fits are in :mod:`perfmodel.kernels.fit`):

* :class:`EfficiencyModel` -- ``t = floor + t_roof / exp(g(u))`` with ``g`` a
  :class:`~perfmodel.kernels.grid.LogGrid` of log efficiency over log2 shape
  coordinates (GEMM, MoE, prefill and decode attention).  The roofline is evaluated with the
  *target* GPU's datasheet, so a model fitted on one GPU transfers to another by
  roofline position (:mod:`perfmodel.kernels.transfer`).
* :class:`CurveModel` -- a latency curve over log2 message bytes (all-reduce at one GPU
  count), with bandwidth extrapolation beyond the largest measured message.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from perfmodel.kernels.grid import LogGrid


@dataclass(frozen=True)
class EfficiencyModel:
    floor_s: float
    grid: LogGrid
    peak: float  # FLOP/s the efficiencies are relative to (the fitted GPU's datasheet)
    bandwidth: float  # bytes/s likewise
    sms: float = 0.0  # the fitted GPU's streaming multiprocessors (0: unknown)

    def time(self, t_roof, *coords):
        return self.floor_s + np.asarray(t_roof) * np.exp(-self.grid(*coords))

    def time_on(self, flops, nbytes, peak: float, bandwidth: float, *coords,
                sms: float = 0.0):
        """Seconds for an op of ``flops`` and ``nbytes`` on a GPU of ``peak`` FLOP/s,
        ``bandwidth`` bytes/s and ``sms`` streaming multiprocessors.

        On the fitted GPU this is ``t = floor + max(C, M) / eta`` with C = F / P and
        M = B / W the op's ideal compute and memory times.  Another GPU changes C and M;
        what the measured time holds besides them is kept (the resource-sum transfer):

        * write the fitted time as ``t - floor = C + M + r``;
        * ``r >= 0``: the kernel did not overlap its loads with its math, and spent ``r``
          more on work neither resource explains (issue, synchronisation, epilogue,
          scale promotion, wave tails).  That work runs at the rate of the SMs, so on
          the target ``t' = floor + C' + M' + r S / S'``;
        * ``r < 0``: the kernel hid a share ``phi = -r / min(C, M)`` of the smaller
          resource's time under the larger; on the target it hides the same share,
          ``t' = floor + C' + M' - phi min(C', M')``.

        Deep in one regime this keeps the measured efficiency's *excess time* rather
        than the efficiency itself: a GEMM at 65 % of an H100's FP8 peak stays at 65 %
        on an H200 (same SMs and peak), but reaches ~89 % on an H20, whose SMs are the
        same with tensor cores a quarter as fast; and a memory-bound kernel whose
        compute was negligible on the H100 pays for it on the H20, where the two are
        comparable and add.  Published DeepGEMM benchmarks of one kernel on both GPUs
        bear out the second effect (docs/validation.md, part b).  Without SM counts
        (``sms`` 0 on either side) ``r`` is kept as it is.
        """
        eff = np.exp(self.grid(*coords))
        flops, nbytes = np.asarray(flops, float), np.asarray(nbytes, float)
        c_s, m_s = flops / self.peak, nbytes / self.bandwidth
        if peak == self.peak and bandwidth == self.bandwidth and sms in (0.0, self.sms):
            return self.floor_s + np.maximum(c_s, m_s) / eff
        c_t, m_t = flops / peak, nbytes / bandwidth
        smaller = np.minimum(c_s, m_s)
        # at most all of min(C, M) is hidden (a fitted eta above 1 would hide more)
        r = np.maximum(np.maximum(c_s, m_s) / eff - (c_s + m_s), -smaller)
        rate = (self.sms / sms) if (sms > 0 and self.sms > 0) else 1.0
        # r scales with the SMs when it is extra work, with min(C, M) when it is overlap
        hidden = np.minimum(c_t, m_t) / np.maximum(smaller, 1e-30)
        return self.floor_s + c_t + m_t + r * np.where(r >= 0.0, rate, hidden)

    def with_sms(self, sms: float) -> EfficiencyModel:
        return EfficiencyModel(self.floor_s, self.grid, self.peak, self.bandwidth, float(sms))

    def to_dict(self) -> dict:
        return {"form": "efficiency", "floor_s": self.floor_s, "peak": self.peak,
                "bandwidth": self.bandwidth, "sms": self.sms, "grid": self.grid.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> EfficiencyModel:
        return cls(float(d["floor_s"]), LogGrid.from_dict(d["grid"]), float(d["peak"]),
                   float(d["bandwidth"]), float(d.get("sms", 0.0)))


@dataclass(frozen=True)
class CurveModel:
    """ln(latency) at log2(bytes) nodes; beyond the last node, the last segment's
    bandwidth (bytes per second between the last two nodes) carries on linearly."""

    log2_bytes: np.ndarray
    log_t: np.ndarray

    def time(self, nbytes):
        b = np.maximum(np.asarray(nbytes, float), 1.0)
        u = np.log2(b)
        t = np.exp(np.interp(u, self.log2_bytes, self.log_t))
        x0, x1, t0, t1 = self._last_segment
        slope = max((t1 - t0) / (x1 - x0), 0.0)
        return np.where(b > x1, t1 + (b - x1) * slope, t)

    @cached_property
    def _last_segment(self) -> tuple[float, float, float, float]:
        """(x0, x1, t0, t1): bytes and seconds of the last two nodes, which carry the
        curve on beyond its last node (computed once per curve)."""
        return (2.0 ** self.log2_bytes[-2], 2.0 ** self.log2_bytes[-1],
                np.exp(self.log_t[-2]), np.exp(self.log_t[-1]))

    @cached_property
    def floor(self) -> float:
        """Seconds of the smallest measured message: the curve's latency floor."""
        return float(np.exp(self.log_t[0]))

    def bus_bandwidth(self) -> float:
        """Bytes/s of the largest measured message (its marginal rate)."""
        x0, x1, t0, t1 = self._last_segment
        return float((x1 - x0) / max(t1 - t0, 1e-12))

    def to_dict(self) -> dict:
        return {"form": "curve", "log2_bytes": [float(x) for x in self.log2_bytes],
                "log_t": [round(float(x), 5) for x in self.log_t]}

    @classmethod
    def from_dict(cls, d: dict) -> CurveModel:
        return cls(np.asarray(d["log2_bytes"], float), np.asarray(d["log_t"], float))


@dataclass(frozen=True)
class AllToAllModel:
    """Expert-parallel dispatch or combine within a scale-up domain:
    ``t = t0 + bytes / (link bandwidth x eff)`` with bytes sent per GPU."""

    t0_s: float
    eff: float
    link: float  # bytes/s per GPU of the fitted system's scale-up link

    def to_dict(self) -> dict:
        return {"form": "alltoall", "t0_s": self.t0_s, "eff": self.eff, "link": self.link}

    @classmethod
    def from_dict(cls, d: dict) -> AllToAllModel:
        return cls(float(d["t0_s"]), float(d["eff"]), float(d["link"]))


FORMS: dict[str, type[EfficiencyModel] | type[CurveModel] | type[AllToAllModel]] = {
    "efficiency": EfficiencyModel, "curve": CurveModel, "alltoall": AllToAllModel}


def model_from_dict(d: dict):
    return FORMS[d["form"]].from_dict(d)
