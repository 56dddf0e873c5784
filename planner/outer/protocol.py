"""Outer-search protocol: inventory + budget/target + evaluator -> best layout + history.

The outer loop of seed 002 (§4.9) proposes *island layouts* — multisets of homogeneous
islands ``(GPU type, size)`` — and asks the inner loop how fast each one serves the
workload.  Every search in :mod:`planner.outer` (Bayesian optimisation over the divider
or direct encoding, random search, the exact MILP) implements :class:`OuterSearch`
against the same :class:`LayoutObjective`, so that their results and convergence
histories are directly comparable (thesis Figs. 5.5-5.12).

Two modes, set by :class:`SearchSpace`:

* **throughput** (``target_rps is None``): maximise ``value`` = R_total, requests/s,
  over layouts that fit the inventory and, if ``budget`` is set, cost at most
  ``budget`` $/h.  The thesis minimises rho_max = 1 / R_total; maximising R_total is
  the same problem with a better-conditioned objective (no pole at zero throughput).
* **target** (``target_rps`` set): minimise $/h over layouts whose ``value`` is at
  least ``target_rps`` (and that fit the budget if one is set).

A layout *qualifies* when its score is feasible and it meets the mode's constraints;
the *best* layout is the best qualifying one, ranked by (value, then lower cost) in
throughput mode and by (cost, then higher value) in target mode.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from planner.core.atomic import write_text_atomic
from planner.core.errors import PlannerError
from planner.core.execution import Executor
from planner.fleet.servers import ServerShape

Island = tuple[str, int]  # (GPU type name, island size in GPUs)
Layout = tuple[Island, ...]  # canonical: sorted, islands of size 0 dropped

# Budgets and costs are sums of a few hundred float products: compare with a tolerance
# so that a layout costing exactly the budget is not rejected by rounding.
COST_TOL = 1e-9

#: Capabilities an outer search declares (``capabilities`` class attribute, read by
#: :data:`planner.outer.registry.OUTER_SEARCHES`):
#: it treats the objective as a black box -- any layout -> score callable, so the
#: simulated objective and the pipeline inner solvers can drive it (the exact MILP
#: needs an evaluator's per-island tables instead);
BLACK_BOX = "black-box"
#: it runs in iterations of a batch of candidates (``iterations=``, ``batch_size=``).
ITERATIVE = "iterative"


def canonical_layout(islands: Iterable[Island]) -> Layout:
    """The canonical form of a multiset of islands: sorted, empty islands dropped."""
    return tuple(sorted((str(t), int(g)) for t, g in islands if int(g) > 0))


def layout_cost(layout: Iterable[Island], prices: Mapping[str, float]) -> float:
    """$/h of a layout: the sum over its islands of price x GPUs (the one place a
    layout is priced)."""
    return float(sum(prices[t] * g for t, g in layout))


def affordable(money: float, price: float) -> int:
    """How many GPUs at ``price`` $/h each ``money`` $/h buys: floor(money / price),
    with the one cost tolerance (``COST_TOL``, relative) so that a budget equal to a
    whole number of GPUs buys them despite rounding.  ``price`` must be > 0 (callers
    decide what a free GPU means)."""
    return int(math.floor(money / price * (1 + COST_TOL)))


def layout_text(layout: Layout) -> str:
    """A layout as one short string, islands grouped by type and size:
    ``"H20:2*3+8;H200:32"`` is three 2-GPU and one 8-GPU H20 island and one 32-GPU
    H200 island.  What a search history stores per proposal: a 4,096-GPU layout of
    hundreds of islands stays a few dozen characters (:func:`parse_layout_text`
    inverts it)."""
    groups: dict[str, dict[int, int]] = {}
    for t, g in canonical_layout(layout):
        groups.setdefault(t, {})
        groups[t][g] = groups[t].get(g, 0) + 1
    return ";".join(t + ":" + "+".join(f"{g}*{k}" if k > 1 else str(g)
                                       for g, k in sizes.items())
                    for t, sizes in groups.items())


def parse_layout_text(text: str, max_islands: int = 1_000_000) -> Layout:
    """The layout :func:`layout_text` wrote; ``ValueError`` on anything else, and on
    more than ``max_islands`` islands (``H20:1*10000000000000``, 20 characters, is ten
    trillion)."""
    islands: list[Island] = []
    for part in filter(None, text.split(";")):
        t, sep, sizes = part.rpartition(":")
        if not sep or not t:
            raise ValueError(f"not a layout: {text!r}")
        for item in sizes.split("+"):
            g, _, k = item.partition("*")
            size, repeat = int(g), int(k) if k else 1
            if size < 1 or repeat < 1:
                raise ValueError(f"not a layout (islands of >= 1 GPU): {text!r}")
            if len(islands) + repeat > max_islands:
                raise ValueError(f"more than {max_islands:,} islands")
            islands.extend([(t, size)] * repeat)
    return canonical_layout(islands)


def layout_counts(layout: Layout) -> dict[str, int]:
    """GPUs of each type the layout uses."""
    out: dict[str, int] = {}
    for t, g in layout:
        out[t] = out.get(t, 0) + g
    return out


@dataclass(frozen=True)
class Score:
    """What the inner loop says about one layout."""

    value: float  # objective to maximise: R_total in requests/s (0 if infeasible)
    cost_per_hour: float  # $/h of the GPUs the layout uses
    feasible: bool
    detail: object = None  # the inner result; opaque to the searches, never serialised


class LayoutObjective(Protocol):
    def __call__(self, layout: Layout) -> Score: ...


@dataclass(frozen=True)
class TypeSupply:
    """What the search may use of one GPU type.

    ``gpus_per_node`` > 0 puts the type at server granularity (:mod:`planner.fleet.servers`):
    islands are whole servers or a power-of-two share of one, packed into the
    ``installed`` GPUs' servers (``installed``: the inventory's count, which a budget may
    cap ``available`` below; 0 means ``available``).  0 is the thesis's free sizes."""

    name: str
    available: int
    price_per_hour: float
    min_island: int = 1
    gpus_per_node: int = 0
    installed: int = 0

    @property
    def shape(self) -> ServerShape | None:
        """The type's servers, or None at GPU granularity."""
        if self.gpus_per_node <= 0:
            return None
        return ServerShape.of(self.installed or self.available, self.gpus_per_node)

    def allowed(self, size: int) -> bool:
        """Whether the search may propose an island of ``size`` GPUs of this type."""
        shape = self.shape
        return size >= self.min_island and (shape is None or shape.allowed(size))

    def sizes(self, hi: int | None = None) -> list[int]:
        """Island sizes the search may propose, ascending, up to ``hi`` and what is
        available."""
        top = self.available if hi is None else min(hi, self.available)
        lo = max(1, self.min_island)
        shape = self.shape
        if shape is None:
            return list(range(lo, top + 1))
        return shape.sizes(lo, top)

    def snap_down(self, size: int) -> int:
        """The largest proposable size not above ``size`` (0: none)."""
        shape = self.shape
        g = size if shape is None else shape.snap_down(size)
        # every allowed size below g is smaller still: none clears min_island if g does not
        return g if g >= max(self.min_island, 1) else 0

    def fit_sizes(self, sizes: list[int], min_island: int = 1) -> list[int]:
        """``sizes`` made proposable: each snapped down to an allowed size of at least
        ``min_island`` (a smaller one is dropped: its GPUs stay idle), then the smallest
        islands shrunk or dropped until the islands fit the type's servers.  Never
        raises a size, so a sum that held a budget still does."""
        floor = max(min_island, self.min_island)
        out = sorted((g for g in (self.snap_down(int(x)) for x in sizes) if g >= floor),
                     reverse=True)
        while out and not self.holds(out):
            g = self.snap_down(out[-1] - 1)
            if g >= floor:
                out[-1] = g
            else:
                out.pop()
        return out

    def holds(self, sizes: list[int]) -> bool:
        """Whether islands of ``sizes`` GPUs fit what is available (and its servers)."""
        if sum(sizes) > self.available or not all(self.allowed(g) for g in sizes):
            return False
        shape = self.shape
        return shape is None or shape.packs(sizes)


@dataclass(frozen=True)
class SearchSpace:
    """The inventory the search draws from and the mode's constraints."""

    types: tuple[TypeSupply, ...]
    budget: float | None = None  # $/h ceiling
    target_rps: float | None = None  # if set: minimise cost subject to value >= target

    def __post_init__(self) -> None:
        names = [t.name for t in self.types]
        if not names:
            raise PlannerError("search space: no GPU types")
        if len(set(names)) != len(names):
            raise PlannerError(f"search space: GPU type listed twice in {names}")
        for t in self.types:
            if t.available < 0:
                raise PlannerError(f"search space: {t.name}.available must be >= 0")
            if not (t.price_per_hour >= 0 and math.isfinite(t.price_per_hour)):
                raise PlannerError(f"search space: {t.name}.price_per_hour must be >= 0")
            if t.min_island < 1:
                raise PlannerError(f"search space: {t.name}.min_island must be >= 1")
        if self.budget is not None and not self.budget > 0:
            raise PlannerError("search space: budget must be > 0 $/h")
        if self.target_rps is not None and not self.target_rps > 0:
            raise PlannerError("search space: target_rps must be > 0 requests/s")

    @classmethod
    def from_inventory(cls, inventory: Any, *, budget: float | None = None,
                       target_rps: float | None = None,
                       granularity: str = "server") -> SearchSpace:
        """From a :class:`planner.fleet.inventory.Inventory` (entries with name, count,
        price_per_hour, min_island, node); ``granularity`` "server" proposes whole
        servers and shares of one (:mod:`planner.fleet.servers`), "gpu" any size.

        Under a budget a type's supply is what the budget buys of it, if that is less
        than the inventory lists: no layout can use more, and the searches size their
        parameters by the supply -- 1,000,000 H200 at 512 $/h would otherwise leave
        the divider's n_t almost nowhere feasible (7 of 256 samples measured)."""
        types = []
        for e in inventory.entries:
            count = int(e.count)
            if budget is not None and e.price_per_hour > 0:
                count = min(count, affordable(budget, float(e.price_per_hour)))
            if count > 0:  # a type with nothing available cannot appear in any layout
                node = int(e.node) if granularity == "server" else 0
                types.append(TypeSupply(e.name, count, float(e.price_per_hour),
                                        int(e.min_island), node, int(e.count) if node else 0))
        return cls(types=tuple(types), budget=budget, target_rps=target_rps)

    @property
    def prices(self) -> dict[str, float]:
        return {t.name: t.price_per_hour for t in self.types}

    @property
    def full_cost(self) -> float:
        """$/h of the whole inventory."""
        return sum(t.available * t.price_per_hour for t in self.types)

    @property
    def procures(self) -> bool:
        """Whether the search must choose how many GPUs of each type to use.

        In throughput mode with an inventory that fits the budget the answer is no:
        more GPUs never lower the weight-free throughput, so the thesis uses all of
        them.  With a binding budget, or in target mode (where every GPU costs), yes.
        """
        if self.target_rps is not None:
            return True
        return self.budget is not None and self.full_cost > self.budget * (1 + COST_TOL)

    def cost(self, layout: Layout) -> float:
        return layout_cost(layout, self.prices)

    def fits(self, layout: Layout) -> bool:
        """Within the inventory, its servers, the minimum island sizes and the budget."""
        supply = {t.name: t for t in self.types}
        sizes: dict[str, list[int]] = {}
        for t, g in layout:
            if t not in supply:
                return False
            sizes.setdefault(t, []).append(g)
        if not all(supply[t].holds(gs) for t, gs in sizes.items()):
            return False
        return self.budget is None or self.cost(layout) <= self.budget * (1 + COST_TOL)

    def qualifies(self, score: Score) -> bool:
        if not score.feasible:
            return False
        if self.budget is not None and score.cost_per_hour > self.budget * (1 + COST_TOL):
            return False
        return self.target_rps is None or score.value >= self.target_rps * (1 - COST_TOL)

    def rank_key(self, score: Score) -> tuple[float, float]:
        """Larger is better among qualifying scores."""
        if self.target_rps is None:
            return (score.value, -score.cost_per_hour)
        return (-score.cost_per_hour, score.value)

    def merit(self, score: Score | None) -> float:
        """The figure the convergence plots show: best R_total (throughput mode, 0 when
        nothing qualifies yet) or best $/h (target mode, +inf until the target is met)."""
        if self.target_rps is None:
            return 0.0 if score is None else score.value
        return math.inf if score is None else score.cost_per_hour

    def to_dict(self) -> dict[str, Any]:
        return {"types": [asdict(t) for t in self.types], "budget": self.budget,
                "target_rps": self.target_rps}


@dataclass(frozen=True)
class HistoryPoint:
    """One proposal of a search, in the order the search made it."""

    index: int  # 0-based proposal (trial) index
    wall_time: float  # seconds since the search started (across resumes)
    layout: Layout
    value: float
    cost: float
    feasible: bool
    best: float  # SearchSpace.merit of the best qualifying layout so far
    cached: bool = False  # layout seen before in this search: not re-evaluated
    phase: str = ""  # "sobol" | "bo" | "random" | ...

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["layout"] = layout_text(self.layout)
        d["best"] = _finite_or_none(self.best)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HistoryPoint:
        best = d["best"]
        lay = d["layout"]
        return cls(index=int(d["index"]), wall_time=float(d["wall_time"]),
                   layout=parse_layout_text(lay) if isinstance(lay, str)
                   else canonical_layout((t, g) for t, g in lay),
                   value=float(d["value"]), cost=float(d["cost"]),
                   feasible=bool(d["feasible"]),
                   best=math.inf if best is None else float(best),
                   cached=bool(d.get("cached", False)), phase=str(d.get("phase", "")))


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass
class SearchResult:
    """Best layout found, its score, and the full convergence history."""

    name: str
    best_layout: Layout | None  # None: nothing qualified (target unmet / all infeasible)
    best_score: Score | None
    history: list[HistoryPoint] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    evaluations: int = 0  # distinct layouts passed to the objective in this search
    cache_hits: int = 0  # proposals answered from the per-search cache
    wall_time: float = 0.0  # seconds, summed over resumed sessions
    resumed: bool = False
    # Objective calls that re-ran a layout restored from a checkpoint only to recover
    # its (unserialised) inner result; included in ``evaluations``.
    detail_refreshes: int = 0

    def best_so_far(self) -> list[float]:
        return [h.best for h in self.history]

    def to_json(self) -> dict[str, Any]:
        s = self.best_score
        return {
            "name": self.name,
            "best_layout": None if self.best_layout is None else [list(i) for i in
                                                                  self.best_layout],
            "best_score": None if s is None else {
                "value": s.value, "cost_per_hour": s.cost_per_hour, "feasible": s.feasible},
            "history": [h.to_dict() for h in self.history],
            "settings": self.settings,
            "evaluations": self.evaluations,
            "cache_hits": self.cache_hits,
            "wall_time": self.wall_time,
            "resumed": self.resumed,
            "detail_refreshes": self.detail_refreshes,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SearchResult:
        s = d.get("best_score")
        lay = d.get("best_layout")
        return cls(
            name=str(d["name"]),
            best_layout=None if lay is None else canonical_layout((t, g) for t, g in lay),
            best_score=None if s is None else Score(float(s["value"]),
                                                    float(s["cost_per_hour"]),
                                                    bool(s["feasible"])),
            history=[HistoryPoint.from_dict(h) for h in d.get("history", [])],
            settings=dict(d.get("settings", {})),
            evaluations=int(d.get("evaluations", 0)),
            cache_hits=int(d.get("cache_hits", 0)),
            wall_time=float(d.get("wall_time", 0.0)),
            resumed=bool(d.get("resumed", False)),
            detail_refreshes=int(d.get("detail_refreshes", 0)),
        )

    def save(self, path: Path) -> None:

        write_text_atomic(Path(path), json.dumps(self.to_json(), indent=1))


Progress = Callable[[int, int, float], None]  # (proposals done, proposals planned, best)


class OuterSearch(Protocol):
    name: str

    def search(self, space: SearchSpace, objective: LayoutObjective, *, seed: int,
               progress: Progress | None = None, checkpoint: Path | None = None,
               executor: Executor | None = None) -> SearchResult:
        """``executor`` (planner.core.execution) may score a batch's proposals side by side;
        the result must be the serial one."""
        ...
