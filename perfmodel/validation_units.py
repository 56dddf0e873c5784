"""Units of the published figures (``validation_cases.yaml``, ``posed/*.yaml``), the
phase each one measures, and the error's sign convention.

A unit is ``<quantity>`` or ``<quantity>_per_<scope>``:

* rates (tokens per second) -- ``output_tok_s``, ``input_tok_s`` and ``total_tok_s``
  (input + output tokens), per ``gpu``, ``node`` (8 GPUs) or ``instance`` (all the
  row's ``gpus``);
* times -- ``ttft_ms`` / ``ttft_mean_ms`` (time to first token), ``tpot_ms`` /
  ``itl_ms`` (time per output token; the engines' inter-token latency is the same step
  time), ``static_e2e_latency_s`` (one static batch from first prefill to last token).

**Error sign ("optimism" sense)**: positive = the model promises more than was
measured.  For a rate that is ours / published - 1 (we promise more tokens/s); for a
time it is published / ours - 1 (we promise a shorter time).  Either way an error of
+20 % means the measured capacity is our figure / 1.2.
"""

from __future__ import annotations

RATES = ("output_tok_s", "input_tok_s", "total_tok_s")
TIMES = ("ttft_ms", "ttft_mean_ms", "tpot_ms", "itl_ms", "static_e2e_latency_s")
SCOPES = {"gpu": None, "node": 8, "instance": None}  # None: 1 GPU / the row's gpus
PHASES = ("prefill", "decode", "aggregated", "disaggregated")


class NotPredictable(ValueError):
    """A validation row the model cannot be asked (the message is the one-line reason);
    defined here, below every reading module, and re-exported by perfmodel.validation."""


def parse(unit: str) -> tuple[str, str | None]:
    """``(quantity, scope)`` of ``unit``; scope is None for a time."""
    if unit in TIMES:
        return unit, None
    for q in RATES:
        if unit.startswith(q + "_per_") and unit[len(q) + 5:] in SCOPES:
            return q, unit[len(q) + 5:]
    raise ValueError(f"unknown unit '{unit}' (rates: {', '.join(RATES)} per "
                     f"{'/'.join(SCOPES)}; times: {', '.join(TIMES)})")


def is_time(unit: str) -> bool:
    """Whether ``unit`` is a latency (smaller is better)."""
    return parse(unit)[0] in TIMES


def scope_gpus(unit: str, gpus: int) -> float:
    """GPUs one figure of a rate ``unit`` covers (1, 8 or the row's ``gpus``)."""
    scope = parse(unit)[1]
    return {"gpu": 1.0, "node": 8.0, "instance": float(gpus)}[str(scope)]


def optimism_error(unit: str, published: float, ours: float) -> float:
    """Signed error, positive when the model promises more than was measured (module
    docstring): ours / published - 1 for rates, published / ours - 1 for times."""
    return published / ours - 1.0 if is_time(unit) else ours / published - 1.0


def phase(mode: str, unit: str) -> str:
    """The serving phase a figure measures, for error bands: TTFT -> prefill; TPOT, ITL
    and decode throughput -> decode; prefill throughput -> prefill; the throughput of a
    whole prefill/decode-split system (mode ``disaggregated``) -> disaggregated;
    aggregated, static and other throughput -> aggregated.  No island role maps to
    the disaggregated phase alone: a plan's prefill and decode islands take the union of
    their own phase's band and this one (``perfmodel.error_band.deployed_band``), and a
    colocated island's band is its aggregated class's (end-to-end rows reach it only
    through the all-rows class, its last fallback)."""
    q = parse(unit)[0]
    if q.startswith("ttft"):
        return "prefill"
    if q in ("tpot_ms", "itl_ms"):
        return "decode"
    if mode in ("prefill", "ttft"):
        return "prefill"
    if mode == "decode":
        return "decode"
    if mode == "disaggregated":
        return "disaggregated"
    return "aggregated"


def normalise_phase(name: str) -> str:
    """A phase from any of its names: ttft -> prefill; decode / itl / tpot -> decode;
    aggregated / static / throughput -> aggregated."""
    key = str(name).strip().lower()
    table = {"prefill": "prefill", "ttft": "prefill", "decode": "decode", "itl": "decode",
             "tpot": "decode", "aggregated": "aggregated", "static": "aggregated",
             "throughput": "aggregated", "agg": "aggregated",
             "disaggregated": "disaggregated"}
    if key not in table:
        raise ValueError(f"unknown phase '{name}' (one of {', '.join(sorted(table))})")
    return table[key]


__all__ = ["NotPredictable", "PHASES", "RATES", "TIMES", "is_time", "normalise_phase",
           "optimism_error", "parse", "phase", "scope_gpus"]
