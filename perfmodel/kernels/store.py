"""Fitted kernel tables on disk: ``perfmodel/data/kernels/<system>.json.gz``.

One file per measured system (aiconfigurator-core's name, e.g. ``h200_sxm``) holding,
per engine, the database version each operation was fitted from and the fitted model
(:mod:`perfmodel.kernels.models`).  Written by ``scripts/calibrate_kernels.py``; read
here, lazily and once per process.  The planner never needs aiconfigurator-core.

Operation keys: ``gemm:<kind>``, ``moe:<kind>``, ``moe_imbalance``,
``context_attention:<kind>``, ``decode_attention:<kv>``, ``mla_context:<kv>``,
``mla_decode:<kv>``, ``allreduce:<gpus>``, ``alltoall:<mode>:<phase>``.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from perfmodel.kernels.grid import LogGrid
from perfmodel.kernels.models import model_from_dict

ENGINES = ("trtllm", "sglang", "vllm")
DATA_DIR = "data/kernels"


@dataclass(frozen=True)
class SystemTables:
    system: str
    gpu: str  # catalog name of the measured GPU
    attribution: str
    versions: dict[str, dict[str, str]]  # engine -> op key -> database version
    ops: dict[str, dict[str, Any]]  # engine -> op key -> fitted model

    def get(self, engine: str, key: str):
        return self.ops.get(engine, {}).get(key)

    def engines(self) -> tuple[str, ...]:
        return tuple(e for e in ENGINES if self.ops.get(e))


def _decode(d: dict):
    if d.get("form") == "grid":
        return LogGrid.from_dict(d["grid"])
    return model_from_dict(d)


def encode(model) -> dict:
    if isinstance(model, LogGrid):
        return {"form": "grid", "grid": model.to_dict()}
    return model.to_dict()


def _files():
    return resources.files("perfmodel").joinpath(DATA_DIR)


@cache
def measured_systems() -> tuple[str, ...]:
    folder = _files()
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name[: -len(".json.gz")] for p in folder.iterdir()
                        if p.name.endswith(".json.gz")))


@cache
def load_system(system: str) -> SystemTables | None:
    """The fitted tables of one measured system, or None if they are not shipped."""
    if system not in measured_systems():
        return None
    raw = json.loads(gzip.decompress(_files().joinpath(f"{system}.json.gz").read_bytes()))
    ops = {eng: {key: _decode(m) for key, m in entry["ops"].items()}
           for eng, entry in raw["engines"].items()}
    versions = {eng: dict(entry["versions"]) for eng, entry in raw["engines"].items()}
    return SystemTables(raw["system"], raw["gpu"], raw["attribution"], versions, ops)


def dump_system(system: str, gpu: str, attribution: str,
                engines: dict[str, dict[str, tuple[str, Any]]]) -> bytes:
    """Serialise fitted tables: ``engines[engine][op key] = (db version, model)``.
    Deterministic bytes (sorted keys, fixed gzip mtime) so a re-run diffs cleanly."""
    doc = {"system": system, "gpu": gpu, "attribution": attribution, "engines": {
        eng: {"versions": {k: v for k, (v, _) in sorted(ops.items())},
              "ops": {k: encode(m) for k, (_, m) in sorted(ops.items())}}
        for eng, ops in sorted(engines.items())}}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)
