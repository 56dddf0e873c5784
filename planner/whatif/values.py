"""Values of a what-if spec: small value types and the parsers of single fields.

Every parser takes a :class:`~planner.workload.fields.Loc` (the file or flag and the
dotted field) and raises its one-line :class:`PlannerError` on a bad value.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfmodel import reading
from perfmodel.errors import check_number
from perfmodel.hardware import resolve_gpu
from planner.context.request import PlanRequest
from planner.core.defaults import MAX_BUDGETS, MAX_MIXED
from planner.core.errors import PlannerError
from planner.fleet.inventory import (
    MAX_BUDGET,
    MAX_COUNT,
    MAX_PRICE,
    InventoryEntry,
    check_price,
)
from planner.outer.exact import ExactSearch
from planner.workload.fields import Loc
from planner.workload.registry import resolve_workload_path


def plan_default(cls: Any, name: str) -> Any:
    """The default of ``cls``'s parameter (a dataclass field or an ``__init__``
    argument) ``name``: the what-if's solver defaults are ``planner plan``'s own."""
    fields = getattr(cls, "__dataclass_fields__", None)
    if fields is not None and name in fields:
        return fields[name].default
    return inspect.signature(cls.__init__).parameters[name].default


#: Islands of any size up to availability, as ``planner plan`` (the exact search's
#: default); a spec may cap them (``solver.max_island``).
DEFAULT_MAX_ISLAND: int | None = plan_default(ExactSearch, "max_island")
_ADD = {"type", "count", "price_per_hour", "min_island", "datasheet"}
_MIX = {"mix", "share", "name"}


@dataclass(frozen=True)
class SolverOptions:
    """Settings of every scenario's exact MILP (planner.outer.exact); the defaults are
    ``planner plan``'s (its ``--exact-time-limit`` and the exact search's own), so a
    scenario's request is the one ``planner plan`` builds.  Values other than these go
    into the request's ``search_options`` (:meth:`search_options`)."""

    time_limit: float = plan_default(PlanRequest, "exact_time_limit")
    mip_gap: float = plan_default(ExactSearch, "mip_rel_gap")
    prune_tol: float = plan_default(ExactSearch, "prune_tol")
    max_island: int | None = DEFAULT_MAX_ISLAND

    def search_options(self) -> dict[str, Any]:
        """The exact search's options that differ from ``planner plan``'s (empty at the
        defaults, as ``planner plan`` passes none)."""
        out: dict[str, Any] = {}
        for name, key in (("mip_gap", "mip_rel_gap"), ("prune_tol", "prune_tol"),
                          ("max_island", "max_island")):
            value = getattr(self, name)
            if value != plan_default(ExactSearch, key):
                out[key] = value
        return out

    def differences(self) -> list[str]:
        """The settings that differ from ``planner plan``'s, for people."""
        d = SolverOptions()
        return [f"{k} {'none' if v is None else format(v, 'g')}"
                for k in ("time_limit", "mip_gap", "prune_tol", "max_island")
                if (v := getattr(self, k)) != getattr(d, k)]


#: How each scenario's capacity is obtained (docs/whatif.md, "The closed loop").
CLOSED_LOOP_MODES = ("auto", "every", "sample", "off")
#: ``auto`` closes the loop for every scenario of a study with at most this many
#: distinct problems, and for a sample beyond it.
AUTO_EVERY_LIMIT = 24
#: Scenarios of each workload whose loop ``sample`` closes (the base always among them).
DEFAULT_SAMPLE = 6


@dataclass(frozen=True)
class ClosedLoopOptions:
    """``every``: each scenario through ``planner plan``'s closed loop; ``sample``: the
    loop closed for ``sample`` scenarios of each workload (the base always), the others'
    analytic figures corrected by the sample's measured ratio; ``off``: the analytic
    figure (``planner plan --no-sim-check``); ``auto``: ``every`` up to
    :data:`AUTO_EVERY_LIMIT` distinct problems, else ``sample``."""

    mode: str = "auto"
    sample: int = DEFAULT_SAMPLE

    def resolve(self, problems: int) -> str:
        """The mode a study of ``problems`` distinct problems runs in."""
        if self.mode != "auto":
            return self.mode
        return "every" if problems <= AUTO_EVERY_LIMIT else "sample"


@dataclass(frozen=True)
class PriceSweep:
    """Prices of one GPU type to try; ``factors[k] = prices[k] / inventory price``."""

    gpu: str
    prices: tuple[float, ...]
    factors: tuple[float, ...]


@dataclass(frozen=True)
class WorkloadMix:
    """A workload of the workload study: one workload (``components`` of length 1) or a
    mixture whose pmf is the weighted sum of its components' (weights sum to 1)."""

    label: str
    components: tuple[tuple[str, float], ...]


# ------------------------------------------------------------------ value parsers
def positive(value: Any, loc: Loc, *, integer: bool = False, zero: bool = False,
             le: float | None = None) -> float:
    """A number > 0 (>= 0 with ``zero``; whole with ``integer``; at most ``le``); text is
    parsed, since flags and ``"0.8x"``-style fields arrive as strings."""
    if zero:
        return check_number(value, loc.error, integer=integer, ge=0, le=le, parse_text=True)
    return check_number(value, loc.error, integer=integer, gt=0, le=le, parse_text=True)


def budget_value(value: Any, loc: Loc) -> float:
    """A budget, $/h: > 0 and at most what any inventory can cost."""
    return positive(value, loc, le=MAX_BUDGET)


#: A budget range; signs are matched so that a negative end or step is refused as one
#: ("must be > 0"), not as an unreadable number.
_RANGE = re.compile(r"^\s*([-0-9.eE+]+)\s*\.\.\s*([-0-9.eE+]+)\s*(?::\s*([-0-9.eE+]+))?\s*$")


def parse_budgets(text: str, loc: Loc) -> tuple[float, ...]:
    """``"128,256,512"``, ``"128..2048"`` (doubling) or ``"100..500:100"`` (a step)."""
    m = _RANGE.match(text)
    if m:
        lo, hi = budget_value(m[1], loc), budget_value(m[2], loc)
        if hi < lo:
            raise loc.error(f"range {text!r} ends below its start")
        out: list[float] = []
        b = lo
        step = positive(m[3], loc) if m[3] else None
        while b <= hi * (1 + 1e-12) and len(out) <= MAX_BUDGETS:
            out.append(b)
            b = b + step if step else 2 * b
        if len(out) > MAX_BUDGETS:
            raise loc.error(f"range {text!r} has more than {MAX_BUDGETS:,} budgets")
        return tuple(out)
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise loc.error("expected budgets like 128,256,512 or 128..2048")
    loc.items(parts, MAX_BUDGETS, "budgets")
    return tuple(budget_value(p.strip(), loc) for p in parts)


def price_value(value: Any, base: float, loc: Loc) -> tuple[float, float]:
    """(price, factor) from ``3.2`` ($/GPU-h) or ``"0.8x"`` (a factor of ``base``)."""
    if isinstance(value, str) and value.strip().lower().endswith("x"):
        factor = positive(value.strip()[:-1], loc, zero=True)
        return factor * base, factor
    price = positive(value, loc, zero=True)
    return price, (price / base if base > 0 else math.nan)


def workload_ref(value: Any, loc: Loc, base_dir: Path | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise loc.error(f"expected a workload name or YAML path, got {value!r}")
    text = value.strip()
    if base_dir is not None and ("/" in text or text.endswith((".yaml", ".yml"))):
        p = Path(text)
        if not p.is_absolute() and (base_dir / p).is_file():
            text = str(base_dir / p)
    try:
        resolve_workload_path(text)
    except PlannerError as err:
        raise loc.error(str(err)) from None
    return text


def workload_label(name: str) -> str:
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def workload_items(item: Any, loc: Loc, base_dir: Path | None) -> list[WorkloadMix]:
    """A name, or ``{mix: [a, b], share: s | [s...], name?}``: (1 - s) a + s b for each
    share s of the second workload; ``mix`` may also be a mapping ``{a: w_a, b: w_b}``
    of weights (normalised to sum 1)."""
    if not isinstance(item, Mapping):
        ref = workload_ref(item, loc, base_dir)
        return [WorkloadMix(workload_label(ref), ((ref, 1.0),))]
    loc.only_keys(item, _MIX)
    mix = loc.require(item, "mix")
    at = loc.child("mix")
    if isinstance(mix, Mapping):
        if "share" in item:
            raise loc.child("share").error("give weights in 'mix' or a 'share', not both")
        if len(mix) < 2:
            raise at.error("a mixture needs at least two workloads")
        if len(mix) > MAX_MIXED:
            raise at.error(f"mixes {len(mix):,} workloads; at most {MAX_MIXED}")
        refs = [workload_ref(k, at.child(str(k)), base_dir) for k in mix]
        weights = [positive(v, at.child(str(k))) for k, v in mix.items()]
        total = sum(weights)
        comps = tuple((r, w / total) for r, w in zip(refs, weights, strict=True))
        label = item.get("name") or " + ".join(f"{w:.0%} {workload_label(r)}" for r, w in comps)
        return [WorkloadMix(str(label), comps)]
    if not isinstance(mix, Sequence) or isinstance(mix, str) or len(mix) != 2:
        raise at.error("expected two workloads [a, b] (with 'share') or a mapping of weights")
    a, b = (workload_ref(v, at.child(i), base_dir) for i, v in enumerate(mix))
    shares = loc.require(item, "share")
    shares = loc.child("share").items(shares if isinstance(shares, list) else [shares],
                                      MAX_BUDGETS, "shares")
    out = []
    for i, s in enumerate(shares):
        sl = loc.child("share").child(i) if isinstance(item["share"], list) \
            else loc.child("share")
        s = positive(s, sl, zero=True)
        if s > 1:
            raise sl.error(f"a share of the second workload must be in [0, 1], got {s:g}")
        label = item.get("name") or f"{1 - s:.0%} {workload_label(a)} + {s:.0%} {workload_label(b)}"
        if len(shares) > 1 and item.get("name"):
            label = f"{item['name']} ({s:.0%})"
        out.append(WorkloadMix(str(label), ((a, 1.0 - s), (b, s))))
    return out


def add_entry(item: Any, loc: Loc, default_min: int, unlimited: bool) -> InventoryEntry:
    item = loc.mapping(item)
    loc.only_keys(item, _ADD)
    name = loc.require(item, "type")
    if not isinstance(name, str) or not name.strip():
        raise loc.child("type").error(f"expected a GPU name, got {name!r}")
    name = name.strip()
    sheet = item.get("datasheet")
    if "datasheet" in item and not isinstance(sheet, Mapping):
        raise loc.child("datasheet").error("expected a mapping of datasheet numbers")
    try:
        gpu = resolve_gpu(name, sheet, f"{loc.source}: field '{loc.child('datasheet').path}'")
    except PlannerError as err:
        if sheet is not None:
            raise
        raise loc.child("type").error(str(err)) from None
    if "count" in item or not unlimited:
        count = int(positive(loc.require(item, "count"), loc.child("count"), integer=True,
                             le=MAX_COUNT))  # the inventory's own bound
    else:
        count = 0  # market availability: the budget decides
    price = item.get("price_per_hour", gpu.price_per_hour or None)
    if price is None:
        raise loc.child("price_per_hour").error("is required (no catalog price)")
    price = check_price(positive(price, loc.child("price_per_hour"), zero=True,
                                 le=MAX_PRICE), loc.child("price_per_hour").error)
    min_island = int(positive(item.get("min_island", default_min), loc.child("min_island"),
                               integer=True, le=MAX_COUNT))
    return InventoryEntry(replace(gpu, price_per_hour=price), count, price, min_island)


def parse_add_flag(text: str) -> dict[str, Any]:
    """``TYPE:COUNT:PRICE`` (PRICE optional: the catalog's) -> an ``add`` mapping."""
    parts = text.split(":")
    loc = Loc("--add")
    if len(parts) not in (2, 3) or not parts[0].strip():
        raise loc.error(f"expected TYPE:COUNT:PRICE (e.g. B200:32:6.0), got {text!r}")
    item: dict[str, Any] = {"type": parts[0].strip(),
                            "count": positive(parts[1], Loc("--add COUNT"), integer=True,
                                              le=MAX_COUNT)}
    if len(parts) == 3:  # 0 $/h is a price an inventory may give too (GPUs one owns)
        item["price_per_hour"] = positive(parts[2], Loc("--add PRICE"), zero=True,
                                          le=MAX_PRICE)
    return item


def read_yaml(path: Path) -> Any:
    if not path.exists():
        raise PlannerError(f"what-if spec '{path}' does not exist")
    return reading.read_yaml(path, "what-if spec")
