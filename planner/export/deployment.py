"""What an export needs to know about a plan, read and checked once.

:func:`read_deployment` reads ``RUN_DIR/plan.json`` through the run folder's own reader
(:func:`planner.run.schema.load_plan`: schema version, sections, island fields, a
configuration label that parses and covers the island) into the plan's typed
:class:`planner.run.deployment.Deployment`, and then checks what only a launch needs,
each failure one line naming the file and the field, exit 2:

* ``request.engine`` is an engine with a launch command (TensorRT-LLM, SGLang, vLLM;
  ``roofline`` is the thesis's model, not an engine);
* ``request.model`` is a model the perf model knows (its Hugging Face name is the
  ``_source`` of its config, ``perfmodel/data/models``);
* every serving island's configuration is one the perf model accepts for that model
  (:func:`perfmodel.parallel.validate_config`: ep divides the island, tp the heads, ep 1
  for a dense model);
* an island's ``servers`` (issue 27 item 1) name no server twice and cover the island.

A plan that passes those but that the plan's engine cannot start -- a GPU of another
vendor or a layout outside its rules (:mod:`perfmodel.launch`), an island that does not
split evenly over its servers -- is refused with exit 1, naming the island and the
rule: the plan is valid, the engine is the limit.

Servers: an island lists the servers it runs on when the plan has them
(``islands[].servers``; GPUs per server from the inventory's ``gpus_per_node`` or the
plan's ``servers[].gpus``); older plans get ``ceil(size / 8)`` servers of 8 GPUs.
Islands that share a server get consecutive GPU indices on it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from perfmodel.engines import ENGINES, EngineLimits, EngineProfile
from perfmodel.hardware import GPU
from perfmodel.launch import engine_slots, gpu_vendor, layout_violation, vendor_violation
from perfmodel.models import ModelSpec, get_model
from perfmodel.parallel import validate_config
from planner.core.errors import PlannerError
from planner.inner.registry import needs_context
from planner.run.deployment import DeployedIsland, Deployment
from planner.run.schema import load_plan

#: Engines an export writes launch commands for (perfmodel.engines names).
LAUNCHABLE = ("trtllm", "sglang", "vllm")
#: GPUs per server when neither the plan nor the GPU's catalog entry says (HGX boards).
DEFAULT_GPUS_PER_NODE = 8
#: Ports of island k: BASE_PORT + PORT_STRIDE * k + offset (HTTP 0, PD bootstrap 1,
#: distributed init 2, KV side channel 3, data-parallel RPC / master 4): unique across
#: the plan, so islands that share a server never collide.
BASE_PORT, PORT_STRIDE = 20000, 10


class CannotLaunch(PlannerError):
    """The plan is valid but its engine cannot start one of its islands (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class IslandLaunch:
    """One serving island as an engine starts it."""

    index: int  # position in plan.json's islands
    name: str  # island-03-decode-h20: file names, Kubernetes names
    gpu: GPU
    size: int
    role: str  # prefill / decode / both
    tp: int
    dp: int
    ep: int
    batch: int  # plan.json's batch (per attention group for decode, per pass for prefill)
    token_budget: int | None  # prefill tokens per pass (plan.json token_budget)
    servers: tuple[str, ...]  # server ids (plan.json servers, else islands[i].s0, ..)
    gpus_per_server: int  # GPUs of this island on each of its servers
    gpus_per_node: int  # GPUs a server has
    gpu_offset: int  # first GPU index on a server it shares with other islands
    expert_slots: int  # routed-expert slots the engine holds (0: dense)
    redundant_experts: int  # slots beyond the routed experts
    location: Mapping[str, Any] | None
    vendor: str  # nvidia / amd / intel
    port_base: int = BASE_PORT  # a fleet's later services start above the earlier ones

    @property
    def multi_server(self) -> bool:
        return len(self.servers) > 1

    @property
    def port(self) -> int:
        return self.port_base + PORT_STRIDE * self.index

    def port_of(self, offset: int) -> int:
        return self.port + offset

    @property
    def config(self) -> str:
        return f"tp{self.tp}-dp{self.dp}-ep{self.ep}"


@dataclass(frozen=True)
class LaunchPlan:
    """A plan's :class:`~planner.run.deployment.Deployment` as an export launches it:
    the engine, the model's checkpoint and each serving island's launch facts."""

    source: str  # the plan.json path, for messages
    plan: Mapping[str, Any]  # the file's other sections (ranges, summary, request)
    deployment: Deployment
    engine: EngineProfile
    model_path: str  # Hugging Face name, the default of $MODEL_PATH
    islands: tuple[IslandLaunch, ...]  # serving islands, plan order

    @property
    def model(self) -> ModelSpec:
        return self.deployment.model

    @property
    def idle(self) -> tuple[int, ...]:
        """Plan indices of idle islands (not launched)."""
        return self.deployment.idle

    @property
    def servers(self) -> int:
        """Distinct servers the serving islands use."""
        return len({s for i in self.islands for s in i.servers})

    @property
    def disaggregated(self) -> bool:
        return any(i.role == "decode" for i in self.islands)


def _fail(source: str, field: str, problem: str, exit_code: int = 2) -> PlannerError:
    cls = CannotLaunch if exit_code == 1 else PlannerError
    return cls(f"{source}: field '{field}' {problem}")


def dns_name(text: str) -> str:
    """``text`` as a DNS-1035 label piece: lower case, letters, digits and '-'."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-") or "x"


def island_name(index: int, role: str, gpu: str) -> str:
    return f"island-{index:02d}-{role}-{dns_name(gpu)}"[:63].rstrip("-")


def hf_name(model: ModelSpec) -> str:
    """The Hugging Face repository of a built-in model (its config's ``_source``: "Hugging
    Face deepseek-ai/DeepSeek-V3 config.json ..."), else the model's name."""
    try:
        raw = json.loads(resources.files("perfmodel").joinpath(
            f"data/models/{model.name}.json").read_text())
    except (OSError, ValueError):
        return model.name
    m = re.search(r"Hugging Face (\S+/\S+)", str(raw.get("_source", "")))
    return m.group(1) if m else model.name


def _engine(plan: Mapping[str, Any], source: str) -> EngineProfile:
    name = plan["request"].get("engine")
    if name is None:
        name = "trtllm"  # plans older than request.engine were priced with the default
    key = str(name).strip().lower()
    if key == "roofline":
        raise _fail(source, "request.engine", "is 'roofline', the thesis's analytic model, "
                    "not a serving engine: there is no launch command to export (re-plan "
                    "with --engine trtllm, sglang or vllm)")
    if key not in ENGINES or key not in LAUNCHABLE:
        raise _fail(source, "request.engine", f"names {name!r}, which is not an engine "
                    f"export launches ({', '.join(LAUNCHABLE)})")
    limits = EngineLimits.from_dict(plan["request"].get("engine_limits"),
                                    f"{source}: request.engine_limits")
    return ENGINES[key].with_limits(limits)


def _model(plan: Mapping[str, Any], source: str) -> ModelSpec:
    name = plan["request"].get("model")
    if not isinstance(name, str) or not name:
        raise _fail(source, "request.model", f"must name a model, got {name!r}")
    try:
        return get_model(name)
    except PlannerError as err:
        raise _fail(source, "request.model", str(err)) from None


def _servers(raw: tuple[int, ...], where: str, source: str, size: int,
             gpn: int) -> tuple[tuple[str, ...], int]:
    """Server ids of an island and GPUs per server: the plan's (server granularity), or
    servers of its own for an older plan."""
    if not raw:
        n = max(1, math.ceil(size / gpn))
        return tuple(f"{where}.s{k}" for k in range(n)), gpn  # servers of its own
    if len(set(raw)) != len(raw):
        raise _fail(source, f"{where}.servers", "names a server twice")
    if len(raw) * gpn < size:
        raise _fail(source, f"{where}.servers", f"holds {len(raw)} x {gpn} GPUs, fewer than "
                    f"the island's {size}")
    return tuple(str(s) for s in raw), gpn


def _check_launch(engine: EngineProfile, model: ModelSpec, isl: DeployedIsland, gpn: int,
                  n_servers: int, where: str, source: str) -> None:
    """Exit 1 naming the rule when the engine cannot start this island
    (:mod:`perfmodel.launch`: its vendors and layouts)."""
    if isl.size % n_servers:
        raise _fail(source, f"{where}.size", f"is {isl.size} GPUs over {n_servers} servers "
                    f"of {gpn}, not the same number on each: {engine.label} starts the same "
                    "ranks on every node (issue 27 item 1 plans whole servers)", 1)
    wrong_vendor = vendor_violation(engine.name, isl.gpu)
    if wrong_vendor:
        raise _fail(source, f"{where}.gpu", f"is {isl.gpu.name}: {wrong_vendor}", 1)
    cfg = isl.layout
    violation = layout_violation(engine.name, model, cfg, isl.size,
                                 gpn if n_servers > 1 else None)
    if violation:
        raise _fail(source, f"{where}.config", f"{cfg.label()}: {violation}", 1)


@dataclass(frozen=True)
class Placement:
    """Where a plan's servers sit among servers other plans share (a fleet's services):
    each plan server id to (the shared server's id, the first GPU index the plan may
    use on it), and the first port of the plan's islands."""

    servers: Mapping[str, tuple[str, int]]
    port_base: int = BASE_PORT


def read_deployment(run_dir: Path | str, placement: Placement | None = None) -> LaunchPlan:
    """The launch plan of ``RUN_DIR/plan.json`` (module docstring for the checks); with
    ``placement``, its servers and ports among other plans' (:class:`Placement`)."""
    path = Path(run_dir) / "plan.json"
    plan = load_plan(path)
    source = str(path)
    if needs_context(str(plan["request"].get("inner"))):
        raise _fail(source, "request.inner", f"is {plan['request'].get('inner')!r}, a "
                    "pipeline plan whose islands are chains of blocks; export launches "
                    "prefill/decode islands (plan with the default --inner maxrate)")
    engine = _engine(plan, source)
    _model(plan, source)  # names the field of an unknown model
    try:
        dep = Deployment.from_plan(plan)
    except PlannerError as err:
        raise PlannerError(f"{source}: {err}") from None
    model = dep.model
    islands: list[IslandLaunch] = []
    used_on: dict[str, int] = {}  # server id -> GPUs already given to islands
    server_gpus = {srv.index: srv.gpus for srv in dep.servers}
    for isl in dep.islands:
        where = f"islands[{isl.index}]"
        cfg = isl.layout
        try:
            validate_config(cfg, isl.size, model)
        except PlannerError as err:
            raise _fail(source, f"{where}.config", f"{cfg.label()!r}: {err}") from None
        default = dep.gpus_per_node.get(isl.gpu.name) or (
            server_gpus.get(isl.servers[0], DEFAULT_GPUS_PER_NODE) if isl.servers
            else DEFAULT_GPUS_PER_NODE)
        servers, gpn = _servers(isl.servers, where, source, isl.size, default)
        _check_launch(engine, model, isl, gpn, len(servers), where, source)
        base = 0
        if placement is not None:
            base = placement.servers.get(servers[0], (servers[0], 0))[1]
            servers = tuple(placement.servers.get(s, (s, 0))[0] for s in servers)
        per_server = isl.size // len(servers)
        offset = 0
        if len(servers) == 1 and isl.servers:
            offset = used_on.get(servers[0], base)
            if offset + per_server > gpn:
                raise _fail(source, f"{where}.servers", f"puts {offset + per_server} GPUs on "
                            f"server {servers[0]!r} of {gpn}")
            used_on[servers[0]] = offset + per_server
        slots, extra = engine_slots(engine.name, model, cfg.ep)
        loc = isl.location
        islands.append(IslandLaunch(
            index=isl.index, name=island_name(isl.index, isl.role, isl.gpu.name),
            gpu=isl.gpu, size=isl.size, role=isl.role, tp=cfg.tp, dp=cfg.dp, ep=cfg.ep,
            batch=isl.batch, token_budget=isl.token_budget or None,
            servers=servers, gpus_per_server=per_server, gpus_per_node=gpn,
            gpu_offset=offset, expert_slots=slots, redundant_experts=extra,
            location=None if loc is None else {"pod": loc.pod, "rack": loc.rack,
                                               "node": loc.node},
            vendor=gpu_vendor(isl.gpu),
            port_base=BASE_PORT if placement is None else placement.port_base))
    roles = {i.role for i in islands}
    if "decode" in roles and not roles & {"prefill", "both"}:
        raise _fail(source, "islands", "has decode islands but none that prefills")
    if "prefill" in roles and "decode" not in roles:
        raise _fail(source, "islands", "has prefill islands but no decode island to hand "
                    "their KV caches to")
    return LaunchPlan(source=source, plan=plan, deployment=dep, engine=engine,
                      model_path=hf_name(model), islands=tuple(islands))


__all__ = ["BASE_PORT", "PORT_STRIDE", "CannotLaunch", "IslandLaunch", "LAUNCHABLE",
           "LaunchPlan", "Placement", "dns_name", "island_name", "read_deployment"]
