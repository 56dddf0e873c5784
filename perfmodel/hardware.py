"""GPU catalog: the datasheet numbers the analytic model needs, and a loader.

The built-in catalog is ``perfmodel/data/gpus.csv`` (one row per GPU type, every figure
with its source; prices carry a source and a date).  A user defines a GPU the catalog
lacks by giving the same fields in their inventory file (:func:`gpu_from_datasheet`).

Units: TFLOPS are *dense* (no sparsity), bandwidths are GB/s *per GPU, per direction*,
memory in GB (10^9 bytes).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from importlib import resources
from typing import Any

from perfmodel.errors import InputError, at, check_number

_NUMERIC_FIELDS = (
    "fp16_tflops",
    "fp8_tflops",
    "fp4_tflops",
    "hbm_gb",
    "hbm_gbps",
    "scaleup_gbps",
    "scaleout_gbps",
    "gpus_per_domain",
    "sms",
    "comm_sms",
    "l2_mb",
    "price_per_hour",
)
# Fields that must be strictly positive for the model to be physical.
_INTEGER_FIELDS = ("gpus_per_domain", "sms", "comm_sms")
_POSITIVE_FIELDS = ("fp16_tflops", "hbm_gb", "hbm_gbps", "scaleup_gbps", "scaleout_gbps",
                    "gpus_per_domain", "sms")


#: Upper bounds of a datasheet's numbers: 100 times the largest figure of any GPU in
#: the catalog (2026: 25,600 fp4 TFLOPS, 288 GB and 8,000 GB/s of HBM, 900 GB/s of
#: scale-up, 144 GPUs per domain, 304 SMs), rounded up.  A real accelerator of the next
#: generations stays far inside them; a value beyond is a unit mistake (GB/s written as
#: bit/s) or a corrupt file, and would make every island of the type look free.
_UPPER = {"fp16_tflops": 1e6, "fp8_tflops": 2e6, "fp4_tflops": 4e6, "hbm_gb": 3e4,
          "hbm_gbps": 1e6, "scaleup_gbps": 1e5, "scaleout_gbps": 1e5,
          "gpus_per_domain": 16384, "sms": 32768, "comm_sms": 32768, "l2_mb": 3e4,
          "price_per_hour": 1e6}


#: Architecture families the kernel-transfer rule knows (perfmodel.kernels.transfer).
ARCHITECTURES = ("ampere", "ada", "hopper", "blackwell", "blackwell-ultra",
                 "blackwell-workstation", "rubin", "cdna3", "cdna4", "xe2")


#: A binary gigabyte: the catalog's memory sizes are in it (:attr:`GPU.visible_bytes`).
GIB = float(1 << 30)

@dataclass(frozen=True)
class GPU:
    """One GPU type.  ``gpus_per_domain`` is the scale-up (NVLink-class) domain size."""

    name: str
    fp16_tflops: float
    fp8_tflops: float
    fp4_tflops: float
    hbm_gb: float
    hbm_gbps: float
    scaleup_gbps: float
    scaleout_gbps: float
    gpus_per_domain: int
    sms: int
    comm_sms: int
    l2_mb: float = 0.0  # last-level on-chip cache (0 = unknown); see perfmodel.kernels
    price_per_hour: float = 0.0
    price_source: str = ""
    price_date: str = ""
    spec_source: str = ""
    arch: str = ""  # architecture family (hopper, blackwell, ...); "" = unknown
    kernel_system: str = ""  # measured-kernel system of this exact GPU ("" = none)

    @property
    def visible_bytes(self) -> float:
        """Device memory the driver reports, what an engine sizes its pools from.

        Datasheet capacities of HBM parts are binary gigabytes: nvidia-smi totals are
        81,559 MiB on an "80 GB" H100, 143,771 MiB on a "141 GB" H200, 183,359 MiB on a
        "180 GB" B200, 196,592 MiB on a "192 GB" MI300X, and torch reports 79.22 GiB on
        the H100 (vllm PR 10511) -- so ``hbm_gb`` GiB x 0.99.  GDDR parts with ECC on
        (Ada: L40S, L4) lose a sixteenth: 46,068 MiB of the L40S's 48 GiB (x 0.937)."""
        return self.hbm_gb * GIB * (0.937 if self.arch == "ada" else 0.99)

    def tflops(self, precision: str) -> float:
        """Dense peak for a compute precision; falls back to the widest supported one.

        A GPU without fp8 (A100) runs fp8 weights as bf16 GEMMs (weight-only upcast),
        so its fp8 rate is its fp16 rate; likewise fp4 falls back to fp8, then fp16.
        """
        order = {"fp4": ("fp4_tflops", "fp8_tflops", "fp16_tflops"),
                 "fp8": ("fp8_tflops", "fp16_tflops"),
                 "fp16": ("fp16_tflops",), "bf16": ("fp16_tflops",)}[precision]
        for attr in order:
            value = getattr(self, attr)
            if value > 0:
                return value
        return self.fp16_tflops

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def spec_key(self) -> tuple:
        """The physical figures only: prices and sources do not change performance, so
        caches keyed by this survive a price sweep."""
        return (*(getattr(self, f) for f in _NUMERIC_FIELDS if f != "price_per_hour"),
                self.arch, self.kernel_system)


def _validate(values: dict[str, Any], where: str) -> GPU:
    name = str(values.get("name", "")).strip()
    if not name:
        raise InputError(f"{where}: field 'name' is missing")
    parsed: dict[str, Any] = {"name": name}
    for key in _NUMERIC_FIELDS:
        raw = values.get(key, 0 if key in ("fp8_tflops", "fp4_tflops", "comm_sms", "l2_mb",
                                           "price_per_hour") else None)
        if raw is None or raw == "":
            raise InputError(f"{where}: GPU '{name}' field '{key}' is missing")
        bound = {"gt": 0} if key in _POSITIVE_FIELDS else {"ge": 0}
        parsed[key] = check_number(raw, at(f"{where}: GPU '{name}' field '{key}'"),
                                   integer=key in _INTEGER_FIELDS, parse_text=True,
                                   le=_UPPER[key], **bound)
    if parsed["comm_sms"] >= parsed["sms"]:
        raise InputError(f"{where}: GPU '{name}' field 'comm_sms' must be below 'sms'")
    for key in ("price_source", "price_date", "spec_source", "arch", "kernel_system"):
        parsed[key] = str(values.get(key, "") or "").strip()
    if parsed["arch"] and parsed["arch"] not in ARCHITECTURES:
        raise InputError(f"{where}: GPU '{name}' field 'arch' must be one of "
                           f"{', '.join(ARCHITECTURES)}, got {parsed['arch']!r}")
    unknown = set(values) - {f.name for f in fields(GPU)}
    if unknown:
        raise InputError(f"{where}: GPU '{name}' has unknown field(s) {sorted(unknown)}; "
                           f"known: {[f.name for f in fields(GPU)]}")
    return GPU(**parsed)


@lru_cache(maxsize=1)
def gpu_catalog() -> dict[str, GPU]:
    """The built-in catalog, keyed by name."""
    text = resources.files("perfmodel").joinpath("data/gpus.csv").read_text()
    rows = csv.DictReader(text.splitlines())
    return {row["name"]: _validate(row, "perfmodel/data/gpus.csv") for row in rows}


def get_gpu(name: str) -> GPU:
    """Look a GPU up by name (case-insensitive); unknown names list the known ones."""
    catalog = gpu_catalog()
    for key, gpu in catalog.items():
        if key.lower() == name.lower():
            return gpu
    raise InputError(f"unknown GPU '{name}'; known GPUs: {', '.join(catalog)} "
                       "(or define it from datasheet numbers in the inventory file)")


def gpu_from_datasheet(values: dict[str, Any], where: str = "inventory") -> GPU:
    """A GPU defined by the user from datasheet numbers (same fields as the catalog)."""
    return _validate(values, where)


def resolve_gpu(name: str, datasheet: Mapping[str, Any] | None = None,
                where: str = "inventory") -> GPU:
    """The GPU an inventory entry names: built from its ``datasheet`` when it has one
    (a GPU the catalog lacks, or one described by its own numbers; a ``name`` inside
    the datasheet wins), else the catalog's entry (an unknown name raises
    :func:`get_gpu`'s error, which the caller prefixes with its location).  The one
    place a GPU name becomes a GPU -- inventories, what-if specs and the inventory
    stored in plan.json all come through here.  ``where`` names the datasheet in
    errors."""
    if datasheet is None:
        return get_gpu(name)
    return gpu_from_datasheet({"name": name, **datasheet}, where)
