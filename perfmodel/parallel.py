"""Parallel configurations of an island and their enumeration (seed 002 §4.6.1-4.6.2).

An island of G GPUs runs ``dp`` attention replicas of ``tp`` GPUs each (tp * dp = G).
For a MoE model the routed experts are sharded over ``ep`` GPUs and replicated G/ep
times; shared experts and dense MLPs follow the attention's tensor parallelism.

The thesis enumerates decode configurations as every pair of divisors (tp, dp) of G and
derives an expert count per device; its prefill enumeration requires tp * dp = G.  We
use one rule for both phases, tp * dp = G with ep a divisor of G, which covers the
thesis's configurations while keeping every GPU of the island busy (a (tp, dp) with
tp * dp < G would leave GPUs idle that the island still pays for).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from perfmodel.errors import InputError
from perfmodel.models import ModelSpec


@dataclass(frozen=True)
class ParallelConfig:
    tp: int
    dp: int
    ep: int

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    def label(self) -> str:
        return f"tp{self.tp}-dp{self.dp}-ep{self.ep}"

    @classmethod
    def from_label(cls, text: str) -> ParallelConfig:
        """The configuration :meth:`label` wrote (``"tp2-dp4-ep8"``); ``ValueError`` on
        anything else, or on a degree below 1."""
        m = _LABEL.match(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise ValueError(f"expected a configuration like 'tp2-dp4-ep8', got {text!r}")
        tp, dp, ep = (int(g) for g in m.groups())
        if min(tp, dp, ep) < 1:
            raise ValueError(f"parallel degrees must be >= 1, got {text!r}")
        return cls(tp, dp, ep)


_LABEL = re.compile(r"^tp(\d+)-dp(\d+)-ep(\d+)$")


@dataclass(frozen=True)
class ConfigGrid:
    """Configurations as column vectors, so phase models broadcast against lengths."""

    configs: tuple[ParallelConfig, ...]
    tp: np.ndarray  # (C, 1)
    dp: np.ndarray
    ep: np.ndarray

    @classmethod
    def of(cls, configs: list[ParallelConfig] | tuple[ParallelConfig, ...]) -> ConfigGrid:
        col = lambda attr: np.array([getattr(c, attr) for c in configs], float)[:, None]  # noqa: E731
        return cls(tuple(configs), col("tp"), col("dp"), col("ep"))

    def __len__(self) -> int:
        return len(self.configs)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def validate_config(cfg: ParallelConfig, gpus: int, model: ModelSpec) -> None:
    """Reject non-physical configurations, naming the offending field."""
    for field in ("tp", "dp", "ep"):
        if getattr(cfg, field) < 1:
            raise InputError(f"parallel config field '{field}' must be >= 1")
    if cfg.tp * cfg.dp != gpus:
        raise InputError(f"parallel config: tp*dp = {cfg.tp * cfg.dp} must equal the island "
                           f"size {gpus} (field 'tp' must divide the GPU count)")
    if gpus % cfg.ep:
        raise InputError(f"parallel config field 'ep' ({cfg.ep}) must divide {gpus}")
    if model.heads % cfg.tp:
        raise InputError(f"parallel config field 'tp' ({cfg.tp}) must divide the "
                           f"{model.heads} attention heads of {model.name}")
    if not model.is_moe and cfg.ep != 1:
        raise InputError(f"parallel config field 'ep' must be 1 for dense model {model.name}")


def enumerate_configs(gpus: int, model: ModelSpec, engine: str | None = None,
                      gpus_per_node: int | None = None) -> list[ParallelConfig]:
    """All valid (tp, dp, ep) for an island of ``gpus`` GPUs.

    ``engine`` (a name of ``perfmodel.engines``): only the layouts that engine launches
    (:func:`perfmodel.launch.layout_violation`, servers of ``gpus_per_node`` GPUs); None
    keeps every layout the perf model can price (tp | heads, ep | G, ep <= experts).
    An engine rule no layout of this size meets leaves the list empty;
    :func:`launch_reason` names the rule.  Cached on its arguments (the engine rules
    are a fixed table): every island build asks again, and checking each layout against
    the rules was a tenth of a cold island-table build."""
    if gpus < 1:
        raise InputError(f"island size must be >= 1, got {gpus}")
    key = None if engine is None else str(engine).strip().lower()
    return list(_configs(int(gpus), model, key, gpus_per_node))


@lru_cache(maxsize=4096)
def _configs(gpus: int, model: ModelSpec, engine: str | None,
             gpus_per_node: int | None) -> tuple[ParallelConfig, ...]:
    tps = [t for t in divisors(gpus) if model.heads % t == 0]
    eps = [e for e in divisors(gpus) if e <= model.routed_experts] if model.is_moe else [1]
    configs = [ParallelConfig(tp, gpus // tp, ep) for tp in tps for ep in eps]
    if engine is None:
        return tuple(configs)
    from perfmodel.launch import layout_violation

    return tuple(c for c in configs
                 if layout_violation(engine, model, c, gpus, gpus_per_node) is None)


def launch_reason(gpus: int, model: ModelSpec, engine: str | None,
                  gpus_per_node: int | None = None) -> str:
    """Why engine ``engine`` launches no layout of ``gpus`` GPUs for ``model``, in one
    line naming the rule (:func:`perfmodel.launch.binding_rule`); "" when some layout
    launches."""
    if enumerate_configs(gpus, model, engine, gpus_per_node):
        return ""
    from perfmodel.launch import binding_rule, rules_for

    rules = rules_for(engine)
    label = rules.label if rules else str(engine)
    top = binding_rule(engine, model, enumerate_configs(gpus, model), gpus, gpus_per_node)
    if top is None:
        return (f"{label} launches no layout of {gpus} GPUs for {model.name}: tp must "
                f"divide its {model.heads} attention heads")
    top = top[len(label) + 2:] if top.startswith(label + ": ") else top
    return f"{label} launches no layout of {gpus} GPUs for {model.name}: {top}"
