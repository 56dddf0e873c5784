"""The ``planner plan`` request of a what-if scenario.

A scenario's capacity is the one ``planner plan`` prints for it, so each scenario
becomes the :class:`~planner.context.request.PlanRequest` that ``planner plan`` builds
(planner/cli/plan.py) from the flags a user would give for it:

* ``--inventory`` -- the spec's inventory with the scenario's supply: each type's count
  is what the scenario makes available (the inventory's count, the market's
  ``floor(budget / price)`` under ``unlimited`` availability, the marginal study's
  extra GPUs) and its price the scenario's (a price sweep's point; an added type's);
  a type the scenario leaves out (``<T> only``, a removed type, none affordable) is not
  listed.  A scenario that leaves the inventory as it is gets the inventory itself;
* ``--budget`` -- the scenario's budget (every what-if scenario is budget mode);
* ``--model``, ``--engine``, ``--ranges``, ``--seed``, ``--island-granularity``,
  ``--ttft`` / ``--tpot`` / ``--no-slo`` -- the spec's;
* ``--workload`` -- the scenario's workload: the spec's name or path, or, for a mixture,
  a workload file holding the mixture (:func:`mixture_file`), which ``planner plan
  --workload`` reads the same way;
* ``--exact-time-limit`` -- ``solver.time_limit``; the exact search's other settings
  (``solver.mip_gap``, ``prune_tol``, ``max_island``) go into the request's
  ``search_options`` only where they differ from ``planner plan``'s, which sets none;
* everything else (search, inner solver, objective, colocated islands, the
  comparisons) -- ``planner plan``'s defaults, which are :class:`PlanRequest`'s.

tests/whatif/test_whatif_promise.py checks that the base scenario's request equals the
one ``planner plan`` builds and that their headlines are equal.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import replace
from pathlib import Path

from planner.context.request import PlanRequest
from planner.fleet.inventory import Inventory, InventoryEntry
from planner.whatif.scenarios import Scenario
from planner.whatif.spec import WhatIfSpec
from planner.whatif.workloads import load_mix
from planner.workload.schema import workload_to_dict
from planner.workload.yaml_io import dump_yaml, write_workload

#: Where mixture workloads are written for the requests that name them (one file per
#: distinct mixture, named by its content's hash: the same mixture is the same file).
MIXTURE_DIR = Path(tempfile.gettempdir()) / "planner-whatif-workloads"


def scenario_inventory(spec: WhatIfSpec, scenario: Scenario) -> Inventory:
    """The inventory ``planner plan`` is given for ``scenario`` (module docstring)."""
    entries = {e.name: e for e in (*spec.inventory.entries, *spec.add)}
    out: list[InventoryEntry] = []
    for t in scenario.supply:
        e = entries[t.name]
        if t.available < 1 and e.count != t.available:
            continue  # none affordable on the market: not on offer
        if e.count != t.available:
            e = replace(e, count=t.available)
        if e.price_per_hour != t.price_per_hour:
            # as an inventory file giving that price is read (planner.fleet.inventory)
            e = replace(e, gpu=replace(e.gpu, price_per_hour=t.price_per_hour),
                        price_per_hour=t.price_per_hour, price_origin="inventory")
        if e.min_island != t.min_island:
            e = replace(e, min_island=t.min_island)
        out.append(e)
    if tuple(out) == spec.inventory.entries:
        return spec.inventory
    return replace(spec.inventory, entries=tuple(out))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60] or "mixture"


def mixture_file(components: tuple[tuple[str, float], ...], label: str,
                 folder: Path = MIXTURE_DIR) -> Path:
    """A workload file holding the mixture ``components`` (planner.whatif.workloads):
    what ``planner plan --workload`` is given for a mixture.  Written once per content
    (atomically, so processes writing the same mixture side by side agree)."""
    mix = load_mix(components, label)
    digest = hashlib.sha256(dump_yaml(workload_to_dict(mix)).encode()).hexdigest()[:16]
    path = folder / f"{_slug(label)}-{digest}.yaml"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        write_workload(path, mix, header=f"planner whatif: the mixture {label!r}")
    return path


def scenario_workload(scenario: Scenario) -> str:
    """``--workload`` of ``scenario``: the workload's own name or path, or the file of
    its mixture."""
    comps = scenario.components or ((scenario.workload, 1.0),)
    if len(comps) == 1:
        return comps[0][0]
    shares = [c for c in comps if c[1] > 0]
    if len(shares) == 1:  # a share of 0 leaves the other workload itself
        return shares[0][0]
    return str(mixture_file(comps, scenario.workload))


def plan_request(spec: WhatIfSpec, scenario: Scenario) -> PlanRequest:
    """The request ``planner plan`` builds for ``scenario`` (module docstring), field
    for field as planner/cli/plan.py builds it."""
    return PlanRequest(scenario_inventory(spec, scenario), model=spec.model,
                       workload=scenario_workload(scenario), budget=scenario.budget,
                       target_rps=None, seed=spec.seed, ranges=spec.ranges, slo=spec.slo,
                       search_options=spec.solver.search_options(),
                       exact_time_limit=spec.solver.time_limit, engine=spec.engine,
                       island_granularity=spec.island_granularity)


def plan_command(spec: WhatIfSpec, req: PlanRequest) -> str:
    """The ``planner plan`` command line that builds ``req`` on the spec's inventory (for
    the base scenario: its request is the command's), for people; search options
    ``planner plan`` has no flag for are named after it."""
    default = PlanRequest(spec.inventory)
    flags = ["planner plan --inventory <the spec's inventory>"]
    if req.budget is not None:
        flags.append(f"--budget {req.budget:g}")
    for name, flag in (("model", "--model"), ("workload", "--workload"),
                       ("ranges", "--ranges"), ("seed", "--seed"), ("engine", "--engine"),
                       ("island_granularity", "--island-granularity"),
                       ("exact_time_limit", "--exact-time-limit")):
        value = getattr(req, name)
        if value != getattr(default, name):
            flags.append(f"{flag} {value:g}" if isinstance(value, float) else
                         f"{flag} {value}")
    if req.slo.ttft_ms is None and req.slo.tpot_ms is None:
        flags.append("--no-slo")
    else:
        for value, base, flag in ((req.slo.ttft_ms, default.slo.ttft_ms, "--ttft"),
                                  (req.slo.tpot_ms, default.slo.tpot_ms, "--tpot")):
            if value != base:
                flags.append(f"{flag} {value:g}")
    text = " ".join(flags)
    if req.search_options:
        text += (" (and the exact search's " + ", ".join(
            f"{k} {v:g}" for k, v in req.search_options.items())
            + ", which `planner plan` has no flag for)")
    return text


__all__ = ["MIXTURE_DIR", "mixture_file", "plan_command", "plan_request",
           "scenario_inventory", "scenario_workload"]
