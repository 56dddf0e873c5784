"""`planner export` of a fleet run: each service's launch files and one router config.

    EXPORT/<service>/...     what `planner export` writes for that service's run folder
                             (launch scripts or manifests, its router.json, README)
    EXPORT/router.json       the fleet's router: a request's service (the OpenAI API
                             ``model`` field) picks the service, then that service's
                             length-range routing applies
    EXPORT/README.md         the services, their folders and how to start them

Island host variables are per service (``$CHAT_ISLAND_00_HOST``), and so are Kubernetes
object names (``chat-island-00-...``, ``chat-planner-router``): one router and one
namespace must tell the services apart.

The fleet buys GPUs for all its services together, so two services' islands may share
a server: each service's plan numbers its servers from 0, and :func:`fleet_placement`
lays those onto the fleet's servers -- first fit, type by type, a service's partly used
server beside another's -- so that islands sharing a server get disjoint GPU indices,
and every island of the fleet its own ports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from planner.export import export_files
from planner.export.deployment import BASE_PORT, PORT_STRIDE, Placement, dns_name
from planner.services.run import SERVICES, load_fleet_run

FLEET_ROUTER_SCHEMA = "hetero-planner fleet router config 1"
_TEXT = (".json", ".yaml", ".yml", ".md", ".sh", ".txt")


def env_prefix(service: str) -> str:
    """``code-v2`` -> ``CODE_V2_``: the service's prefix on its host variables."""
    return re.sub(r"[^A-Z0-9]", "_", service.upper()) + "_"


def _prefixed(data: bytes, prefix: str) -> bytes:
    text = data.decode("utf-8")
    return re.sub(r"(\$\{?)ISLAND_", lambda m: f"{m.group(1)}{prefix}ISLAND_",
                  text).encode("utf-8")


def k8s_prefix(service: str) -> str:
    """``Code_v2`` -> ``code-v2-``: the service's prefix on its Kubernetes object names
    (lower-case RFC 1123 labels), so two services' objects do not collide."""
    return re.sub(r"[^a-z0-9-]", "-", service.lower()).strip("-") + "-"


def _k8s_named(data: bytes, prefix: str) -> bytes:
    text = data.decode("utf-8")
    return re.sub(r"\b(planner-router|planner-engine-config|island-\d)",
                  lambda m: prefix + m.group(1), text).encode("utf-8")


def request_model(service: str, model: str, models: list[str]) -> str:
    """The name a request gives in its ``model`` field to reach ``service``: the model's
    own when no other service of the fleet serves it, else the service's name (two
    services of one model -- chat and code on one Llama -- are told apart by it)."""
    return model if models.count(model) == 1 else service


def fleet_placement(plans: Mapping[str, Mapping[str, Any]]) -> dict[str, Placement]:
    """Each service's :class:`~planner.export.deployment.Placement` among the fleet's
    servers (module docstring).  A server a service fills, or an island spans, is one of
    the fleet's to itself; a partly used one goes on the first fleet server of its type
    and size with room for it.  Ports: the services' islands numbered on, in order."""
    shared: dict[tuple[str, int], list[list[Any]]] = {}  # (gpu, size) -> [id, used]
    count: dict[str, int] = {}
    out: dict[str, Placement] = {}
    port = BASE_PORT
    for name, plan in plans.items():
        mapping: dict[str, tuple[str, int]] = {}
        for srv in plan.get("servers") or []:
            gpu, size, used = str(srv["gpu"]), int(srv["gpus"]), int(srv["gpus_used"])
            pool = shared.setdefault((gpu, size), [])
            slot = next((s for s in pool if s[1] + used <= size), None) \
                if used < size else None
            if slot is None:
                slot = [f"{dns_name(gpu)}-{count.get(gpu, 0)}", 0]
                count[gpu] = count.get(gpu, 0) + 1
                if used < size:
                    pool.append(slot)
            mapping[str(srv["index"])] = (slot[0], slot[1])
            slot[1] += used
        out[name] = Placement(mapping, port)
        port += PORT_STRIDE * len(plan.get("islands") or [])
    return out


def fleet_export_files(run_dir: Path | str, fmt: str = "shell") -> dict[str, bytes]:
    """Every file of a fleet run's export in ``fmt``, by name; nothing is written.
    A service whose engine cannot start one of its islands fails the whole export
    (one line naming the service's plan and the island)."""
    run_dir = Path(run_dir)
    fleet, plans = load_fleet_run(run_dir)
    placements = fleet_placement(plans)
    models = [str(svc["model"]) for svc in fleet["services"]]
    out: dict[str, bytes] = {}
    services: dict[str, Any] = {}
    lines = [f"# Fleet {fleet['fleet']['name']}: launch files", "",
             "One folder per service, each as `planner export` writes it for one plan "
             "(start with its README).  Host variables carry the service's prefix "
             "(`$CHAT_ISLAND_00_HOST`).  `router.json` routes a request to its service "
             "by the request's `model` field (the service's `request_model`: its model, "
             "or its name where two services serve one model), then by prompt length "
             "within the service.",
             "", "| service | model | promised requests/s | folder |", "|---|---|---:|---|"]
    for svc in fleet["services"]:
        name = str(svc["name"])
        prefix = env_prefix(name)
        _dep, files = export_files(run_dir / SERVICES / name, fmt, placements[name])
        for fname, data in files.items():
            if fname.endswith(_TEXT):
                data = _prefixed(data, prefix)
                if fmt == "k8s":
                    data = _k8s_named(data, k8s_prefix(name))
            out[f"{name}/{fname}"] = data
        router = json.loads(out[f"{name}/router.json"])
        services[name] = {"model": svc["model"], "served_model_name": svc["model"],
                          "request_model": request_model(name, svc["model"], models),
                          "requests_per_s": svc["requests_per_s"], "slo": svc["slo"],
                          "host_prefix": prefix, "router": router}
        lines.append(f"| {name} | {svc['model']} | {svc['requests_per_s']:,.1f} | "
                     f"`{name}/` |")
    config = {"schema": FLEET_ROUTER_SCHEMA, "fleet": fleet["fleet"]["name"],
              "routing": "pick the service whose request_model equals the request's "
                         "model field (unknown: reject); forward the request with the "
                         "field set to the service's served_model_name; then route as "
                         "that service's router does (its 'routing' field)",
              "services": services}
    out["router.json"] = (json.dumps(config, indent=1) + "\n").encode("utf-8")
    out["README.md"] = ("\n".join(lines) + "\n").encode("utf-8")
    return out


__all__ = ["FLEET_ROUTER_SCHEMA", "env_prefix", "fleet_export_files", "fleet_placement",
           "k8s_prefix", "request_model"]
