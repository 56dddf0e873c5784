"""``--format shell``: one launch script per island, router.json and a README.

``island-NN-<role>-<gpu>.sh`` runs the island's engine on one server; an island on
several servers runs the same script on each with ``NODE_RANK`` 0 (the leader, which
serves HTTP) to n-1 and ``LEADER_ADDR`` the leader's address.  TensorRT-LLM's extra
options YAML is written by the script itself (a here-document) into ``$CONFIG_DIR``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

import yaml

from planner.export.deployment import IslandLaunch, LaunchPlan
from planner.export.engines import Launch, launches, trtllm_disagg_config
from planner.export.router import router_config

PLACEHOLDERS = {
    "MODEL_PATH": "the model's weights: a Hugging Face name or a local folder (default: "
                  "the plan's model)",
    "NODE_RANK": "multi-server islands: 0 on the leader server, 1 .. n-1 on the others",
    "LEADER_ADDR": "multi-server islands: the leader server's address, reachable from the "
                   "others",
    "NODE_HOSTS": "multi-server TensorRT-LLM islands: the MPI host list of the island's "
                  "servers, leader first, as host:slots (e.g. 10.0.0.1:8,10.0.0.2:8)",
    "CONFIG_DIR": "TensorRT-LLM: where the script writes its extra options YAML (default "
                  "/tmp)",
    "ISLAND_NN_HOST": "router.json: the address of island NN's leader server",
}


def quote(word: str) -> str:
    """A shell word: placeholders ($NAME, $((..))) expand, everything else is literal."""
    if "$" in word:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`") + '"'
    return shlex.quote(word)


def command_text(argv: Sequence[str], indent: str = "    ") -> str:
    """``argv`` as one shell command, a flag and its value per line."""
    def flag(w: str) -> bool:
        return w.startswith("-") and not w.lstrip("-").replace(".", "").isdigit()

    words = [quote(w) for w in argv]
    groups: list[list[str]] = [[]]
    for raw, word in zip(argv, words, strict=True):
        if flag(raw) and groups[-1]:
            groups.append([])
        groups[-1].append(word)
    return " \\\n".join([" ".join(groups[0])] + [indent + " ".join(g) for g in groups[1:]])


def host_var(isl: IslandLaunch) -> str:
    return f"ISLAND_{isl.index:02d}_HOST"


def describe(dep: LaunchPlan, isl: IslandLaunch) -> list[str]:
    """Comment lines saying what the island is in the plan."""
    plan_isl = dep.plan["islands"][isl.index]
    servers = len(isl.servers)
    out = [f"island {isl.index} of the plan: {isl.size} x {isl.gpu.name}, {isl.role}, "
           f"{isl.config}, batch {isl.batch}"
           + (f", token budget {isl.token_budget}" if isl.token_budget else ""),
           f"servers: {servers} ({', '.join(isl.servers)}), {isl.gpus_per_server} GPUs of "
           f"{isl.gpus_per_node} on each"
           + (f", GPUs {isl.gpu_offset}-{isl.gpu_offset + isl.gpus_per_server - 1}"
              if servers == 1 and isl.gpus_per_server < isl.gpus_per_node else "")]
    if isl.expert_slots:
        out.append(f"experts: {dep.model.routed_experts} routed experts in "
                   f"{isl.expert_slots} slots over ep {isl.ep}"
                   + (f" ({isl.redundant_experts} redundant)" if isl.redundant_experts
                      else ""))
    if isl.location:
        out.append("placed at pod {pod}, rack {rack}, node {node} (plan.json "
                   "location)".format(**{k: isl.location.get(k) for k in
                                         ("pod", "rack", "node")}))
    rps = plan_isl.get("requests_per_s")
    if isinstance(rps, int | float):
        out.append(f"planned flow: {rps:.1f} requests/s")
    return out


def island_script(dep: LaunchPlan, launch: Launch) -> str:
    isl = launch.island
    lines = ["#!/usr/bin/env bash",
             f"# {isl.name}: {dep.engine.label} for {dep.model_path}, written by "
             "`planner export` from " + dep.source]
    lines += [f"# {line}" for line in describe(dep, isl)]
    lines += ["set -euo pipefail", f'MODEL_PATH="${{MODEL_PATH:-{dep.model_path}}}"']
    if isl.multi_server:
        n = len(isl.servers)
        others = "1" if n == 2 else f"1..{n - 1}"
        lines += [f': "${{NODE_RANK:?set NODE_RANK: 0 on the leader server, {others} on '
                  'the others}"',
                  ': "${LEADER_ADDR:?set LEADER_ADDR: the leader server address}"']
        if launch.wrapper:
            lines.append('if [ "$NODE_RANK" = 0 ]; then : "${NODE_HOSTS:?set NODE_HOSTS: '
                         'host:slots of the island servers, leader first}"; fi')
    for name, value in launch.env:
        lines.append(f"export {name}={shlex.quote(value)}")
    if launch.config is not None:
        lines += ['CONFIG_DIR="${CONFIG_DIR:-/tmp}"', 'mkdir -p "$CONFIG_DIR"',
                  f'cat > "$CONFIG_DIR/{launch.config_name}" <<\'YAML\'',
                  yaml.safe_dump(dict(launch.config), sort_keys=False).rstrip(), "YAML"]
    leader = "exec " + command_text(launch.argv)
    if launch.worker is not None:
        worker = "exec " + command_text(launch.worker)
        lines += ['if [ "$NODE_RANK" = 0 ]; then', "  " + leader.replace("\n", "\n  "),
                  "else", "  " + worker.replace("\n", "\n  "), "fi"]
    else:
        lines.append(leader)
    return "\n".join(lines) + "\n"


def readme(dep: LaunchPlan, launch_list: list[Launch], extra: list[str]) -> str:
    plan = dep.plan
    s = plan["summary"]
    out = [f"# Launch files for {dep.model_path} on {dep.engine.label}", "",
           f"Written by `planner export` from `{dep.source}`: {len(dep.islands)} serving "
           f"islands ({s.get('requests_per_s', 0):.1f} requests/s planned, "
           f"${s.get('cost_per_hour', 0):.2f}/h)"
           + (f"; islands {', '.join(map(str, dep.idle))} are idle and not launched"
              if dep.idle else "") + ".", "",
           "| script | GPUs | servers | role | parallelism | port |", "|---|---|---|---|---|---|"]
    for launch in launch_list:
        isl = launch.island
        out.append(f"| `{isl.name}.sh` | {isl.size} x {isl.gpu.name} | {len(isl.servers)} "
                   f"| {isl.role} | {isl.config} | {isl.port} |")
    out += ["", "## Placeholders", "",
            "Set these in the environment of each script (or edit them in):", ""]
    used = {"MODEL_PATH", "ISLAND_NN_HOST"}
    if any(i.multi_server for i in dep.islands):
        used |= {"NODE_RANK", "LEADER_ADDR"}
    if any(launch.wrapper for launch in launch_list):
        used.add("NODE_HOSTS")
    if dep.engine.name == "trtllm":
        used.add("CONFIG_DIR")
    out += [f"* `${name}`: {text}" for name, text in PLACEHOLDERS.items() if name in used]
    out += ["", "Islands that share a server see only their own GPUs "
            "(`CUDA_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES` in their scripts).", "",
            "## Order", "",
            "1. Multi-server islands: on every server of the island run its script with "
            "`NODE_RANK` (0 on the leader) and `LEADER_ADDR`"
            + ("; for TensorRT-LLM start the other servers first (they wait for "
               "`mpirun` over SSH), then the leader" if dep.engine.name == "trtllm" else
               "; the leader waits for the others") + ".",
            "2. Single-server islands: run each script on its server.",
            "3. Wait until every island answers `GET /health` on its port.",
            "4. Start the router with `router.json`: for each request it finds the "
            "prompt's length range, picks a prefill island by the range's weights and, "
            "for a prefill island, a decode island for its KV cache (`routing` in the "
            "file).  Fill each island's `endpoint` (`$ISLAND_NN_HOST`) first."]
    if dep.disaggregated:
        out += ["", "The engines' own prefill/decode routers balance without length "
                "ranges; use them only where the ranges do not matter."
                + (" For TensorRT-LLM, `trtllm-disagg.yaml` is that proxy's config: "
                   "`trtllm-serve disaggregated -c trtllm-disagg.yaml`."
                   if "trtllm-disagg.yaml" in extra else "")]
    out += ["", "Flags follow the engine version the plan was priced with "
            "(`planner/export/data/` lists them with their source); docs/deployment.md "
            "(\"Export\") explains each choice.", ""]
    return "\n".join(out)


def shell_files(dep: LaunchPlan) -> dict[str, bytes]:
    """File name -> content of the shell export."""
    launch_list = launches(dep)
    files: dict[str, bytes] = {}
    for launch in launch_list:
        files[f"{launch.island.name}.sh"] = island_script(dep, launch).encode()
    config = router_config(dep, lambda i: f"http://${{{host_var(i)}}}:{i.port}")
    files["router.json"] = (json.dumps(config, indent=1) + "\n").encode()
    extra = []
    if dep.engine.name == "trtllm" and dep.disaggregated:
        hosts = {i.index: f"${{{host_var(i)}}}" for i in dep.islands}
        text = yaml.safe_dump(trtllm_disagg_config(dep, hosts), sort_keys=False)
        files["trtllm-disagg.yaml"] = text.encode()
        extra.append("trtllm-disagg.yaml")
    files["README.md"] = readme(dep, launch_list, extra).encode()
    return files


__all__ = ["PLACEHOLDERS", "command_text", "quote", "shell_files"]
