"""Workload <-> plain mapping (the YAML document of docs/workloads.md).

Top-level keys::

    format_version: 1
    name, description, provenance        # text
    max_len: 8000                        # optional, see below
    input: <distribution spec>           # required, planner.workload.families
    decode: {mean, max, dist}            # mean/max required unless dist implies them
    arrival: {rate_rps, cv}              # optional
    prefix_hit_rate: 0.0                 # optional
    clipped_mass: 0.0                    # optional: mass removed before this file was written
    joint: {input_edges, output_edges, counts, output_mean}   # optional
    stats: {...}                         # optional, informational (trace summary)

``max_len`` resolution, most specific first: the caller's argument, the file's
``max_len``, the largest length the input distribution can produce, and
:data:`~planner.workload.model.DEFAULT_MAX_LEN` (8192) for unbounded families.
Probability above ``max_len`` is removed and reported in ``Workload.clipped_mass``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.core.errors import PlannerError
from planner.workload.families import MAX_SUPPORTED_LEN, discretise, support_max
from planner.workload.fields import Loc
from planner.workload.model import DEFAULT_MAX_LEN, JointHistogram, Workload

FORMAT_VERSION = 1
#: Bins per axis of a joint histogram: `planner workload fit` writes a few dozen, and the
#: counts table is their product, so a longer list is refused before it is allocated.
MAX_JOINT_BINS = 1024
_TOP_KEYS = {"format_version", "name", "description", "provenance", "max_len", "input",
             "decode", "arrival", "prefix_hit_rate", "clipped_mass", "joint", "stats"}


def workload_from_dict(data: Any, *, source: str = "<dict>", max_len: int | None = None,
                       default_name: str | None = None) -> Workload:
    """Validate ``data`` and build the :class:`Workload` it declares."""
    loc = Loc(source)
    data = loc.mapping(data)
    loc.only_keys(data, _TOP_KEYS)
    version = loc.integer(data, "format_version", default=FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise loc.child("format_version").error(
            f"unsupported version {version} (this planner reads {FORMAT_VERSION})")
    name = loc.text(data, "name") or (default_name or "")
    if not name:
        raise loc.child("name").error("is required")

    input_spec = loc.mapping(loc.require(data, "input"))
    n = _resolve_max_len(data, input_spec, max_len, loc)
    pmf, spec_clip = discretise(input_spec, n, loc.child("input"))
    stored_clip = loc.number(data, "clipped_mass", default=0.0, ge=0.0)
    if stored_clip >= 1.0:
        raise loc.child("clipped_mass").error("must be < 1")
    clipped = 1.0 - (1.0 - stored_clip) * (1.0 - spec_clip)

    dmean, dmax, dpmf, dspec = _decode(data, loc)
    arrival = loc.child("arrival")
    arr = arrival.mapping(data.get("arrival") or {})
    arrival.only_keys(arr, {"rate_rps", "cv", "idc"})
    rate = arrival.number(arr, "rate_rps", default=None, gt=0)
    cv = arrival.number(arr, "cv", default=None, ge=0)
    idc = arrival.number(arr, "idc", default=None, ge=0)
    hit = loc.number(data, "prefix_hit_rate", default=0.0, ge=0.0, le=1.0)
    joint = _joint(data["joint"], loc.child("joint")) if data.get("joint") else None
    stats = data.get("stats")
    if stats is not None:
        stats = copy.deepcopy(dict(loc.child("stats").mapping(stats)))
    try:
        return Workload(
            name=name, pmf=pmf, decode_mean=dmean, decode_max=dmax, decode_pmf=dpmf,
            joint=joint, rate_rps=rate, cv=cv, idc=idc, prefix_hit_rate=hit,
            provenance=loc.text(data, "provenance"), description=loc.text(data, "description"),
            clipped_mass=clipped, trace_stats=stats,
            input_spec=copy.deepcopy(dict(input_spec)), decode_spec=dspec,
        )
    except PlannerError as err:
        raise PlannerError(f"{source}: {err}") from None


def _resolve_max_len(data: Mapping[str, Any], input_spec: Mapping[str, Any],
                     max_len: int | None, loc: Loc) -> int:
    if max_len is not None:
        if isinstance(max_len, bool) or int(max_len) != max_len or not (
                1 <= max_len <= MAX_SUPPORTED_LEN):
            raise PlannerError(f"max_len must be an integer in 1..{MAX_SUPPORTED_LEN}, "
                               f"got {max_len!r}")
        return int(max_len)
    n = loc.integer(data, "max_len", default=None, ge=1, le=MAX_SUPPORTED_LEN)
    if n is None:
        n = support_max(input_spec, loc.child("input"))
    return DEFAULT_MAX_LEN if n is None else n


def _decode(data: Mapping[str, Any], loc: Loc
            ) -> tuple[float, int, np.ndarray | None, dict[str, Any] | None]:
    dloc = loc.child("decode")
    dec = dloc.mapping(loc.require(data, "decode"))
    dloc.only_keys(dec, {"mean", "max", "dist"})
    dmax = dloc.integer(dec, "max", default=None, ge=1, le=MAX_SUPPORTED_LEN)
    dist = dec.get("dist")
    dpmf = None
    if dist is not None:
        if dmax is None:
            dmax = support_max(dist, dloc.child("dist"))
            if dmax is None:
                raise dloc.child("max").error("is required when decode.dist is unbounded")
        # decode.dist is truncated to decode.max: the islands support no longer outputs.
        dpmf, _ = discretise(dist, dmax, dloc.child("dist"))
    elif dmax is None:
        raise dloc.child("max").error("is required (or give decode.dist)")
    dmean = dloc.number(dec, "mean", default=None, ge=1)
    if dmean is None:
        if dpmf is None:
            raise dloc.child("mean").error("is required (or give decode.dist)")
        dmean = float(np.arange(dpmf.size) @ dpmf)
    if dmean > dmax:
        raise dloc.child("mean").error(f"{dmean:g} exceeds decode.max = {dmax}")
    return dmean, dmax, dpmf, (copy.deepcopy(dict(dist)) if dist is not None else None)


def _joint(raw: Any, loc: Loc) -> JointHistogram:
    j = loc.mapping(raw)
    loc.only_keys(j, {"input_edges", "output_edges", "counts", "output_mean"})
    ie = loc.array(j, "input_edges", integer=True, ge=0, min_size=2)
    oe = loc.array(j, "output_edges", integer=True, ge=0, min_size=2)
    for key, edges in (("input_edges", ie), ("output_edges", oe)):
        if edges.size - 1 > MAX_JOINT_BINS:
            raise loc.child(key).error(f"has {edges.size - 1:,} bins; at most "
                                       f"{MAX_JOINT_BINS:,} per axis")
    rows = loc.require(j, "counts")
    if not isinstance(rows, list) or len(rows) != ie.size - 1:
        raise loc.child("counts").error(f"expected {ie.size - 1} rows (one per input bin)")
    cloc = loc.child("counts")
    counts = np.zeros((ie.size - 1, oe.size - 1), dtype=np.float64)
    for i, row in enumerate(rows):
        values = cloc.array({i: row}, i, ge=0)  # type: ignore[dict-item, arg-type]
        if values.size != oe.size - 1:
            raise cloc.child(i).error(f"expected {oe.size - 1} entries (one per output bin)")
        counts[i] = values
    mean = loc.array(j, "output_mean", allow_null=True)
    try:
        return JointHistogram(ie, oe, counts, mean)
    except PlannerError as err:
        raise loc.error(str(err)) from None


# ------------------------------------------------------------------------------- to_dict
def _plain(x: Any) -> Any:
    """numpy scalars/arrays -> Python; integral floats stay floats (YAML keeps types)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def sparse_histogram(pmf: np.ndarray) -> dict[str, Any]:
    """A pmf as ``{type: histogram, values, weights}`` over its non-zero entries."""
    values = np.flatnonzero(pmf)
    return {"type": "histogram", "values": values.tolist(), "weights": pmf[values].tolist()}


def workload_to_dict(w: Workload) -> dict[str, Any]:
    out: dict[str, Any] = {"format_version": FORMAT_VERSION, "name": w.name}
    if w.description:
        out["description"] = w.description
    if w.provenance:
        out["provenance"] = w.provenance
    out["max_len"] = w.max_len
    if w.input_spec is not None:
        spec = copy.deepcopy(dict(w.input_spec))
        _, spec_clip = discretise(spec, w.max_len, Loc(f"workload {w.name!r}", "input"))
    else:
        spec, spec_clip = sparse_histogram(w.pmf), 0.0
    out["input"] = spec
    # Only the part of clipped_mass the input spec does not itself explain.
    stored = 1.0 - (1.0 - w.clipped_mass) / (1.0 - spec_clip)
    if stored > 1e-15:
        out["clipped_mass"] = stored
    dec: dict[str, Any] = {"mean": w.decode_mean, "max": w.decode_max}
    if w.decode_spec is not None:
        dec["dist"] = copy.deepcopy(dict(w.decode_spec))
    elif w.decode_pmf is not None:
        dec["dist"] = sparse_histogram(w.decode_pmf)
    out["decode"] = dec
    arrival = {k: v for k, v in (("rate_rps", w.rate_rps), ("cv", w.cv), ("idc", w.idc))
               if v is not None}
    if arrival:
        out["arrival"] = arrival
    out["prefix_hit_rate"] = w.prefix_hit_rate
    if w.joint is not None:
        counts = w.joint.counts
        integral = bool(np.all(counts == np.round(counts)))
        out["joint"] = {
            "input_edges": w.joint.input_edges.tolist(),
            "output_edges": w.joint.output_edges.tolist(),
            "counts": (counts.astype(np.int64) if integral else counts).tolist(),
            "output_mean": [None if not np.isfinite(m) else float(m)
                            for m in w.joint.output_mean],
        }
    if w.trace_stats is not None:
        out["stats"] = copy.deepcopy(dict(w.trace_stats))
    return {k: _plain(v) for k, v in out.items()}



def with_max_len(w: Workload, max_len: int) -> Workload:
    """The same workload re-expressed on ``0..max_len`` (truncating or padding)."""
    if max_len == w.max_len:
        return w
    return workload_from_dict(workload_to_dict(w), source=f"workload {w.name!r}",
                              max_len=max_len)
