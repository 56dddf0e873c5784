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

import numpy as np

from perfmodel.kernels.grid import LogGrid


@dataclass(frozen=True)
class EfficiencyModel:
    floor_s: float
    grid: LogGrid
    peak: float  # FLOP/s the efficiencies are relative to (the fitted GPU's datasheet)
    bandwidth: float  # bytes/s likewise

    def time(self, t_roof, *coords):
        return self.floor_s + np.asarray(t_roof) * np.exp(-self.grid(*coords))

    def time_on(self, flops, nbytes, peak: float, bandwidth: float, *coords):
        """Seconds for an op of ``flops`` and ``nbytes`` on a GPU of ``peak`` FLOP/s and
        ``bandwidth`` bytes/s.

        On the fitted GPU this is ``floor + t_roof / eta``.  On another GPU the measured
        inefficiency is charged to the resource that bound the op where it was measured:
        charged to compute, the op keeps its compute efficiency and may turn
        memory-bound at full bandwidth (time T_c); charged to memory, the reverse (T_m).
        The two are blended by the op's compute share w = 1 / (1 + (B/W / F/P)^2) on the
        fitted GPU, which is 1 deep in its compute-bound region and 0 deep in its
        memory-bound one, and continuous across its ridge point.  (A single efficiency
        ratio applied to the target's roofline would scale a memory-side inefficiency
        by the target's compute speed -- on a compute-starved GPU like the H20 that
        overstates it several times.)
        """
        eff = np.exp(self.grid(*coords))
        flops, nbytes = np.asarray(flops, float), np.asarray(nbytes, float)
        if peak == self.peak and bandwidth == self.bandwidth:
            return self.floor_s + np.maximum(flops / peak, nbytes / bandwidth) / eff
        ratio = (nbytes / self.bandwidth) / np.maximum(flops / self.peak, 1e-30)
        w = 1.0 / (1.0 + ratio * ratio)
        t_c = np.maximum(flops / (peak * eff), nbytes / bandwidth)
        t_m = np.maximum(flops / peak, nbytes / (bandwidth * eff))
        return self.floor_s + w * t_c + (1.0 - w) * t_m

    def to_dict(self) -> dict:
        return {"form": "efficiency", "floor_s": self.floor_s, "peak": self.peak,
                "bandwidth": self.bandwidth, "grid": self.grid.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> EfficiencyModel:
        return cls(float(d["floor_s"]), LogGrid.from_dict(d["grid"]), float(d["peak"]),
                   float(d["bandwidth"]))


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
        x1, x0 = 2.0 ** self.log2_bytes[-1], 2.0 ** self.log2_bytes[-2]
        t1, t0 = np.exp(self.log_t[-1]), np.exp(self.log_t[-2])
        slope = max((t1 - t0) / (x1 - x0), 0.0)
        return np.where(b > x1, t1 + (b - x1) * slope, t)

    def bus_bandwidth(self) -> float:
        """Bytes/s of the largest measured message (its marginal rate)."""
        x1, x0 = 2.0 ** self.log2_bytes[-1], 2.0 ** self.log2_bytes[-2]
        t1, t0 = np.exp(self.log_t[-1]), np.exp(self.log_t[-2])
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
