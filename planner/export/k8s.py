"""``--format k8s``: Kubernetes manifests (one multi-document ``manifests.yaml``).

Per serving island:

* a **Deployment** (one replica) when it runs on one server, or a **LeaderWorkerSet**
  (``leaderworkerset.x-k8s.io/v1``, github.com/kubernetes-sigs/lws) with
  ``leaderWorkerTemplate.size`` = its servers when it spans several: one pod per server,
  the leader (worker index 0) serving HTTP;
* each pod requests the island's GPUs on one server (``nvidia.com/gpu``, or
  ``amd.com/gpu`` on MI300X/MI325X) and selects nodes of the island's GPU type by the
  label GPU Feature Discovery (``nvidia.com/gpu.product``) or AMD's node labeller
  (``amd.com/gpu.product-name``) writes (``planner/export/data/gpu-node-labels.csv``,
  with the label format's source);
* a **Service** in front of the island's (leader) pod.

Plus ConfigMaps: ``planner-router`` holds router.json (endpoints are the Services);
for TensorRT-LLM ``planner-engine-config`` holds each island's extra options YAML
(mounted at /etc/planner) and the disaggregated-serving config.

The placeholders of the shell format come from the pod: ``NODE_RANK`` is LWS's
``LWS_WORKER_INDEX``, ``LEADER_ADDR`` its ``LWS_LEADER_ADDRESS``, and TensorRT-LLM's MPI
host list is built from the LWS pod names (``<name>-0-<i>.<subdomain>``).

:func:`leaderworkerset_problems` checks a LeaderWorkerSet by hand against the fields of
the published CRD (``api/leaderworkerset/v1/leaderworkerset_types.go`` of
kubernetes-sigs/lws: ``LeaderWorkerSetSpec`` {replicas, leaderWorkerTemplate,
rolloutStrategy, startupPolicy, networkConfig}; ``LeaderWorkerTemplate``
{leaderTemplate, workerTemplate, size, restartPolicy, subGroupPolicy,
volumeClaimTemplates, persistentVolumeClaimRetentionPolicy}), since a schema validator of
the core API does not know the CRD; its pod templates are core ``PodTemplateSpec`` s and
are validated as such.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

import yaml

from planner.export.deployment import IslandLaunch, LaunchPlan
from planner.export.engines import IMAGES, Launch, launches, trtllm_disagg_config
from planner.export.router import router_config
from planner.export.shell import command_text, describe

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_SPEC_FIELDS = {"replicas", "leaderWorkerTemplate", "rolloutStrategy", "startupPolicy",
                   "networkConfig"}
LWS_TEMPLATE_FIELDS = {"leaderTemplate", "workerTemplate", "size", "restartPolicy",
                       "subGroupPolicy", "volumeClaimTemplates",
                       "persistentVolumeClaimRetentionPolicy"}
LWS_RESTART = {"Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"}
LWS_STARTUP = {"LeaderCreated", "LeaderReady"}
PART_OF = "planner-export"
CONFIG_MOUNT = "/etc/planner"


def node_labels() -> dict[str, dict[str, str]]:
    """GPU type (lower case) -> {resource, label, value} (gpu-node-labels.csv)."""
    text = resources.files("planner.export").joinpath("data/gpu-node-labels.csv").read_text()
    rows = csv.DictReader(io.StringIO("\n".join(
        line for line in text.splitlines() if line and not line.startswith("#"))))
    return {r["gpu"].lower(): r for r in rows}


def _resource(isl: IslandLaunch, labels: Mapping[str, Mapping[str, str]]) -> tuple[str, dict]:
    row = labels.get(isl.gpu.name.lower())
    if row is not None:
        return row["resource"], {row["label"]: row["value"]}
    resource = {"amd": "amd.com/gpu", "intel": "gpu.intel.com/xe"}.get(isl.vendor,
                                                                       "nvidia.com/gpu")
    return resource, {}  # a GPU outside the table: no node label to select by


def _script(dep: LaunchPlan, launch: Launch, argv: tuple[str, ...], leader: bool) -> str:
    isl = launch.island
    lines = [f'MODEL_PATH="${{MODEL_PATH:-{dep.model_path}}}"']
    if isl.multi_server:
        lines += ['NODE_RANK="${LWS_WORKER_INDEX:-0}"',
                  'LEADER_ADDR="${LWS_LEADER_ADDRESS:?}"']
        if launch.wrapper and leader:
            g = isl.gpus_per_server
            hosts = [f"$LEADER_ADDR:{g}"] + [f"{isl.name}-0-{k}.$SUB:{g}"
                                             for k in range(1, len(isl.servers))]
            lines += ['SUB="${LEADER_ADDR#*.}"', f'NODE_HOSTS="{",".join(hosts)}"']
    if launch.config is not None:
        lines.append(f'CONFIG_DIR="{CONFIG_MOUNT}"')
    lines.append("exec " + command_text(argv))
    return "\n".join(lines) + "\n"


def _pod(dep: LaunchPlan, launch: Launch, argv: tuple[str, ...], leader: bool,
         labels: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    isl = launch.island
    resource, selector = _resource(isl, labels)
    gpus = str(isl.gpus_per_server)
    container: dict[str, Any] = {
        "name": "engine", "image": IMAGES[dep.engine.name],
        "command": ["/bin/sh", "-c", _script(dep, launch, argv, leader)],
        "env": [{"name": k, "value": v} for k, v in launch.env
                if k not in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")],
        "resources": {"requests": {resource: gpus}, "limits": {resource: gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if not container["env"]:
        del container["env"]
    if leader:
        container["ports"] = [{"name": "http", "containerPort": isl.port}]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": "http"},
                                       "periodSeconds": 10, "failureThreshold": 60}
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if launch.config is not None:
        container["volumeMounts"].append({"name": "engine-config", "mountPath": CONFIG_MOUNT,
                                          "readOnly": True})
        volumes.append({"name": "engine-config",
                        "configMap": {"name": "planner-engine-config"}})
    spec: dict[str, Any] = {"containers": [container], "volumes": volumes}
    if selector:
        spec["nodeSelector"] = selector
    return {"metadata": {"labels": _labels(dep, isl)}, "spec": spec}


def _labels(dep: LaunchPlan, isl: IslandLaunch) -> dict[str, str]:
    return {"app.kubernetes.io/name": isl.name, "app.kubernetes.io/part-of": PART_OF,
            "hetero-planner/role": isl.role, "hetero-planner/engine": dep.engine.name}


def _annotations(dep: LaunchPlan, isl: IslandLaunch) -> dict[str, str]:
    return {"hetero-planner/island": "; ".join(describe(dep, isl))}


def workload(dep: LaunchPlan, launch: Launch,
             labels: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The island's Deployment or LeaderWorkerSet."""
    isl = launch.island
    meta = {"name": isl.name, "labels": _labels(dep, isl),
            "annotations": _annotations(dep, isl)}
    leader = _pod(dep, launch, launch.argv, True, labels)
    if not isl.multi_server:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                         "selector": {"matchLabels": {"app.kubernetes.io/name": isl.name}},
                         "template": leader}}
    worker = _pod(dep, launch, launch.worker or launch.argv, False, labels)
    return {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "metadata": meta,
            "spec": {"replicas": 1, "startupPolicy": "LeaderCreated",
                     "leaderWorkerTemplate": {"size": len(isl.servers),
                                              "restartPolicy": "RecreateGroupOnPodRestart",
                                              "leaderTemplate": leader,
                                              "workerTemplate": worker}}}


def service(dep: LaunchPlan, isl: IslandLaunch) -> dict[str, Any]:
    if isl.multi_server:
        selector = {"leaderworkerset.sigs.k8s.io/name": isl.name,
                    "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    else:
        selector = {"app.kubernetes.io/name": isl.name}
    ports = [{"name": "http", "port": isl.port, "targetPort": isl.port}]
    if dep.engine.name == "sglang" and dep.disaggregated and isl.role == "prefill":
        ports.append({"name": "bootstrap", "port": isl.port_of(1),
                      "targetPort": isl.port_of(1)})
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": isl.name, "labels": _labels(dep, isl)},
            "spec": {"selector": selector, "ports": ports}}


def manifests(dep: LaunchPlan) -> list[dict[str, Any]]:
    """Every manifest, in apply order: ConfigMaps, then per island its workload and
    Service."""
    labels = node_labels()
    launch_list = launches(dep)
    docs: list[dict[str, Any]] = []
    config = router_config(dep, lambda i: f"http://{i.name}:{i.port}")
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "planner-router",
                              "labels": {"app.kubernetes.io/part-of": PART_OF}},
                 "data": {"router.json": json.dumps(config, indent=1) + "\n"}})
    engine_files = {launch.config_name: yaml.safe_dump(dict(launch.config), sort_keys=False)
                    for launch in launch_list if launch.config is not None and
                    launch.config_name}
    if engine_files:
        if dep.disaggregated:
            hosts = {i.index: i.name for i in dep.islands}
            engine_files["trtllm-disagg.yaml"] = yaml.safe_dump(
                trtllm_disagg_config(dep, hosts), sort_keys=False)
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "planner-engine-config",
                                  "labels": {"app.kubernetes.io/part-of": PART_OF}},
                     "data": engine_files})
    for launch in launch_list:
        docs.append(workload(dep, launch, labels))
        docs.append(service(dep, launch.island))
    return docs


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (scripts, embedded files) as literal blocks."""


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text and not any(line != line.rstrip() for line in
                                             text.splitlines()) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _str)


def manifests_text(dep: LaunchPlan) -> str:
    docs = manifests(dep)
    missing = sorted({i.gpu.name for i in dep.islands
                      if i.gpu.name.lower() not in node_labels()})
    head = [f"# {dep.model_path} on {dep.engine.label}: {len(dep.islands)} islands, "
            f"written by `planner export --format k8s` from {dep.source}",
            "# Multi-server islands are LeaderWorkerSets: install the LWS controller "
            "(github.com/kubernetes-sigs/lws) first."]
    if missing:
        head.append(f"# No node label is known for {', '.join(missing)}: add a "
                    "nodeSelector to their pods.")
    return "\n".join(head) + "\n" + yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False,
                                                  width=100)


def leaderworkerset_problems(doc: Mapping[str, Any]) -> list[str]:
    """What in ``doc`` the LeaderWorkerSet CRD would reject (module docstring)."""
    out = []
    if doc.get("apiVersion") != LWS_API or doc.get("kind") != "LeaderWorkerSet":
        return [f"not a {LWS_API} LeaderWorkerSet"]
    extra = set(doc) - {"apiVersion", "kind", "metadata", "spec"}
    if extra:
        out.append(f"unknown top-level fields {sorted(extra)}")
    if not isinstance(doc.get("metadata", {}).get("name"), str):
        out.append("metadata.name is missing")
    spec = doc.get("spec") or {}
    out += [f"spec.{k} is not a LeaderWorkerSetSpec field" for k in set(spec) - LWS_SPEC_FIELDS]
    if "replicas" in spec and not (isinstance(spec["replicas"], int) and spec["replicas"] >= 0):
        out.append("spec.replicas must be an integer >= 0")
    if spec.get("startupPolicy", "LeaderCreated") not in LWS_STARTUP:
        out.append(f"spec.startupPolicy must be one of {sorted(LWS_STARTUP)}")
    tpl = spec.get("leaderWorkerTemplate")
    if not isinstance(tpl, Mapping):
        return out + ["spec.leaderWorkerTemplate is required"]
    out += [f"spec.leaderWorkerTemplate.{k} is not a LeaderWorkerTemplate field"
            for k in set(tpl) - LWS_TEMPLATE_FIELDS]
    if not isinstance(tpl.get("workerTemplate"), Mapping):
        out.append("spec.leaderWorkerTemplate.workerTemplate is required")
    size = tpl.get("size", 1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        out.append("spec.leaderWorkerTemplate.size must be an integer >= 1")
    if tpl.get("restartPolicy", "RecreateGroupOnPodRestart") not in LWS_RESTART:
        out.append(f"spec.leaderWorkerTemplate.restartPolicy must be one of "
                   f"{sorted(LWS_RESTART)}")
    return out


def pod_templates(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The PodTemplateSpecs inside a Deployment or LeaderWorkerSet."""
    spec = doc.get("spec") or {}
    if doc.get("kind") == "LeaderWorkerSet":
        tpl = spec.get("leaderWorkerTemplate") or {}
        return [t for t in (tpl.get("leaderTemplate"), tpl.get("workerTemplate")) if t]
    return [spec["template"]] if "template" in spec else []


__all__ = ["LWS_API", "leaderworkerset_problems", "manifests", "manifests_text",
           "node_labels", "pod_templates"]
