"""Launch commands of the engine a plan was priced with, one per island.

The flags are those of the engine versions the perf model prices (``perfmodel.engines``,
``perfmodel/data/kernels``), checked against the flag lists in
``planner/export/data/`` (each names the repository, file and version it came from):

* **SGLang 0.5** (``python -m sglang.launch_server``): ``--tp-size`` is every GPU of the
  island with DP attention (``--dp-size dp --enable-dp-attention``, attention TP =
  tp) for a MoE model; for a dense model ``--tp-size tp --dp-size dp`` are dp replicas.
  ``--ep-size ep`` (expert TP = G / ep), redundant experts as ``--enable-eplb
  --ep-num-redundant-experts``; ``--mem-fraction-static`` is the profile's memory
  fraction; ``--max-running-requests`` and ``--chunked-prefill-size`` are per server, so
  with DP attention, which divides both by dp (0.5.14 ``ServerArgs._handle_data_parallelism``
  and ``pool_configurator.py``: ``max_running_requests // dp_size``), they are the plan's
  per-group batch and token budget times dp; PD roles ``--disaggregation-mode prefill|decode
  --disaggregation-transfer-backend mooncake`` (prefill servers also open
  ``--disaggregation-bootstrap-port``); several servers ``--nnodes --node-rank
  $NODE_RANK --dist-init-addr $LEADER_ADDR:port``.
* **vLLM 0.24** (``vllm serve``): ``--tensor-parallel-size tp --data-parallel-size dp``,
  ``--enable-expert-parallel`` when ep spans the island (vLLM's EP is all tp x dp GPUs
  or none; it spreads experts unevenly instead of adding slots), ``--max-num-seqs`` the
  batch per DP rank, ``--max-num-batched-tokens`` the token budget with
  ``--enable-chunked-prefill``, ``--gpu-memory-utilization``; PD roles through
  ``--kv-transfer-config`` with the NixlConnector (``kv_both``: the proxy decides who
  sends); several servers: data-parallel ranks spread with ``--data-parallel-size-local
  --data-parallel-start-rank --data-parallel-address $LEADER_ADDR`` (``--headless`` on
  the others), or, for dp 1, ``--nnodes --node-rank --master-addr``.
* **TensorRT-LLM 1.3** (``trtllm-serve``): ``--tp_size`` is every GPU (with
  ``enable_attention_dp`` attention runs DP on every rank), ``--ep_size``,
  ``--max_batch_size`` (per rank) and ``--max_num_tokens``,
  ``--kv_cache_free_gpu_memory_fraction`` the profile's share of the memory weights and
  activations leave; the rest
  in the ``--extra_llm_api_options`` YAML: ``moe_tensor_parallel_size``,
  ``moe_config.load_balancer.num_slots`` for redundant experts (with the WIDEEP MoE
  backend), ``cache_transceiver_config`` (NIXL) for PD roles and
  ``disable_overlap_scheduler`` on context servers, ``enable_chunked_prefill``.  Several
  servers: ``mpirun -H $NODE_HOSTS`` from the leader through ``trtllm-llmapi-launch``.

On Blackwell a quantised MoE model's launch selects the MoE backend the perf model
priced it at (:data:`SHARED_MOE_BACKEND`: SGLang ``--moe-runner-backend``, vLLM
``--moe-backend``, TRT-LLM ``moe_config.backend``; TRT-LLM islands with redundant
experts keep ``WIDEEP``, whose load balancer needs it).

Placeholders (``$MODEL_PATH``, ``$NODE_RANK``, ``$LEADER_ADDR``, ``$NODE_HOSTS``,
``$CONFIG_DIR``) stay in the commands for the shell or the pod to fill.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from perfmodel.kernels.library import runs_shared_moe
from planner.export.deployment import CannotLaunch, IslandLaunch, LaunchPlan

#: SGLang's default and most used PD transfer backend (``--disaggregation-transfer-backend``
#: choices: mooncake, nixl, ...).
SGLANG_KV_BACKEND = "mooncake"
#: TensorRT-LLM's KV transfer backend for PD (``cache_transceiver_config.backend``).
TRTLLM_KV_BACKEND = "NIXL"
#: Flag list files per engine (planner/export/data).
FLAG_LISTS = {"sglang": "sglang-0.5.14.flags", "vllm": "vllm-0.24.0.flags",
              "trtllm": "trtllm-1.3.flags"}
#: The MoE backend that runs FlashInfer's trtllm-gen kernels, which the perf model prices
#: a Blackwell MoE layer at (``perfmodel.kernels.library.runs_shared_moe``): SGLang
#: ``--moe-runner-backend`` and vLLM ``--moe-backend`` (``KernelConfig.moe_backend``)
#: name it ``flashinfer_trtllm``, TRT-LLM ``moe_config.backend`` ``TRTLLM`` -- what
#: InferenceX's B200 / B300 DeepSeek-R1 launch scripts select.
SHARED_MOE_BACKEND = {"sglang": "flashinfer_trtllm", "vllm": "flashinfer_trtllm",
                      "trtllm": "TRTLLM"}
#: Container images of the pinned versions (Kubernetes manifests).
IMAGES = {"sglang": "lmsysorg/sglang:v0.5.14", "vllm": "vllm/vllm-openai:v0.24.0",
          "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc20"}


@dataclass(frozen=True)
class Launch:
    """How one island starts: on its leader server (``NODE_RANK`` 0) ``wrapper +
    program + args``; on the others ``worker`` (None: the same command)."""

    island: IslandLaunch
    program: tuple[str, ...]
    args: tuple[str, ...]
    wrapper: tuple[str, ...] = ()
    worker: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    config_name: str | None = None  # TRT-LLM --extra_llm_api_options file
    config: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def argv(self) -> tuple[str, ...]:
        return self.wrapper + self.program + self.args

    def flags(self) -> list[str]:
        """The engine's option strings this launch uses (leader and workers)."""
        words = list(self.args)
        if self.worker and self.worker[:len(self.program)] == self.program:
            words += self.worker[len(self.program):]  # the same engine, other flags
        return sorted({w for w in words if w.startswith("-") and not _is_number(w)})

    def config_keys(self) -> list[str]:
        """Dotted keys of the YAML config, as the flag lists write them ("yaml:a.b")."""
        return sorted(f"yaml:{k}" for k in _dotted(self.config or {}))


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _dotted(d: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out += _dotted(v, key + ".")
        else:
            out.append(key)
    return out


def flag_list(engine: str) -> set[str]:
    """The checked-in option strings of ``engine``'s pinned version (comments dropped)."""
    text = resources.files("planner.export").joinpath(f"data/{FLAG_LISTS[engine]}").read_text()
    return {line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")}


def _visible(isl: IslandLaunch) -> tuple[tuple[str, str], ...]:
    """Which GPUs of a shared server the island's processes see."""
    if isl.multi_server or isl.gpus_per_server >= isl.gpus_per_node:
        return ()
    ids = ",".join(str(isl.gpu_offset + k) for k in range(isl.gpus_per_server))
    var = "HIP_VISIBLE_DEVICES" if isl.vendor == "amd" else "CUDA_VISIBLE_DEVICES"
    return ((var, ids),)


def _shared_moe(dep: LaunchPlan, isl: IslandLaunch) -> bool:
    return dep.model.is_moe and runs_shared_moe(isl.gpu, dep.model.gemm_kind)


def sglang(dep: LaunchPlan, isl: IslandLaunch) -> Launch:
    moe = dep.model.is_moe
    dp_attention = moe and isl.dp > 1
    per_server = isl.dp if dp_attention else 1  # SGLang divides these by dp under DP attn
    args = ["--model-path", "$MODEL_PATH", "--trust-remote-code", "--host", "0.0.0.0",
            "--port", str(isl.port),
            "--tp-size", str(isl.size if moe else isl.tp)]
    if isl.dp > 1:
        args += ["--dp-size", str(isl.dp)]
    if dp_attention:
        args += ["--enable-dp-attention"]
    if moe and isl.ep > 1:
        args += ["--ep-size", str(isl.ep)]
    if isl.redundant_experts:
        args += ["--enable-eplb", "--ep-num-redundant-experts", str(isl.redundant_experts)]
    if _shared_moe(dep, isl):
        args += ["--moe-runner-backend", SHARED_MOE_BACKEND["sglang"]]
    args += ["--mem-fraction-static", f"{dep.engine.memory_fraction_on(isl.gpu, isl.tp):g}",
             "--max-running-requests", str(isl.batch * per_server)]
    if isl.token_budget:
        args += ["--chunked-prefill-size", str(isl.token_budget * per_server)]
    if dep.disaggregated and isl.role in ("prefill", "decode"):
        args += ["--disaggregation-mode", isl.role,
                 "--disaggregation-transfer-backend", SGLANG_KV_BACKEND]
        if isl.role == "prefill":
            args += ["--disaggregation-bootstrap-port", str(isl.port_of(1))]
    if isl.multi_server:
        args += ["--nnodes", str(len(isl.servers)), "--node-rank", "$NODE_RANK",
                 "--dist-init-addr", f"$LEADER_ADDR:{isl.port_of(2)}"]
    return Launch(isl, ("python3", "-m", "sglang.launch_server"), tuple(args),
                  env=_visible(isl))


def vllm(dep: LaunchPlan, isl: IslandLaunch) -> Launch:
    moe = dep.model.is_moe
    args = ["--host", "0.0.0.0", "--port", str(isl.port), "--trust-remote-code",
            "--tensor-parallel-size", str(isl.tp)]
    if isl.dp > 1:
        args += ["--data-parallel-size", str(isl.dp)]
    if moe and isl.ep > 1:
        args += ["--enable-expert-parallel"]  # ep == tp x dp (perfmodel.launch rules)
    if _shared_moe(dep, isl):
        args += ["--moe-backend", SHARED_MOE_BACKEND["vllm"]]
    args += ["--gpu-memory-utilization", f"{dep.engine.memory_fraction_on(isl.gpu, isl.tp):g}",
             "--max-num-seqs", str(isl.batch)]
    if isl.token_budget:
        args += ["--max-num-batched-tokens", str(isl.token_budget), "--enable-chunked-prefill"]
    env = list(_visible(isl))
    if dep.disaggregated and isl.role in ("prefill", "decode"):
        args += ["--kv-transfer-config",
                 json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                            separators=(",", ":"))]
        env.append(("VLLM_NIXL_SIDE_CHANNEL_PORT", str(isl.port_of(3))))
    worker = None
    program = ("vllm", "serve", "$MODEL_PATH")
    if isl.multi_server:
        n = len(isl.servers)
        if isl.dp > 1 and isl.dp % n == 0:
            local = isl.dp // n
            args += ["--data-parallel-size-local", str(local),
                     "--data-parallel-start-rank", f"$((NODE_RANK * {local}))",
                     "--data-parallel-address", "$LEADER_ADDR",
                     "--data-parallel-rpc-port", str(isl.port_of(4))]
        elif isl.dp == 1:
            args += ["--nnodes", str(n), "--node-rank", "$NODE_RANK",
                     "--master-addr", "$LEADER_ADDR", "--master-port", str(isl.port_of(4))]
        else:
            raise CannotLaunch(f"{dep.source}: field 'islands[{isl.index}].config' "
                               f"{isl.config} over {n} servers: vLLM 0.24 places whole "
                               f"data-parallel ranks on each node, so dp {isl.dp} must be "
                               f"a multiple of the {n} servers (or dp 1)")
        worker = program + tuple(args) + ("--headless",)
    return Launch(isl, program, tuple(args), worker=worker, env=tuple(env))


def trtllm(dep: LaunchPlan, isl: IslandLaunch) -> Launch:
    moe = dep.model.is_moe
    config_name = f"{isl.name}.yaml"
    args = ["--host", "0.0.0.0", "--port", str(isl.port), "--backend", "pytorch",
            "--trust_remote_code", "--tp_size", str(isl.size)]
    if moe:
        args += ["--ep_size", str(isl.ep)]
    args += ["--max_batch_size", str(isl.batch)]
    if isl.token_budget:
        args += ["--max_num_tokens", str(isl.token_budget)]
    free = dep.engine.memory_fraction_on(isl.gpu, isl.tp)
    args += ["--kv_cache_free_gpu_memory_fraction", f"{free:g}",
             "--extra_llm_api_options", f"$CONFIG_DIR/{config_name}"]
    config: dict[str, Any] = {"enable_attention_dp": isl.dp > 1}
    if moe:
        config["moe_expert_parallel_size"] = isl.ep
        config["moe_tensor_parallel_size"] = isl.size // isl.ep
        if isl.redundant_experts:
            config["moe_config"] = {"backend": "WIDEEP",
                                    "load_balancer": {"num_slots": isl.expert_slots}}
        elif _shared_moe(dep, isl):
            config["moe_config"] = {"backend": SHARED_MOE_BACKEND["trtllm"]}
    config["kv_cache_config"] = {"free_gpu_memory_fraction": free}
    if isl.token_budget:
        config["enable_chunked_prefill"] = True
    if dep.disaggregated and isl.role in ("prefill", "decode"):
        longest = int(max(dep.plan["ranges"]["end"] or [8192]))
        config["cache_transceiver_config"] = {"backend": TRTLLM_KV_BACKEND,
                                              "max_tokens_in_buffer": max(longest, 8192)}
        if isl.role == "prefill":
            config["disable_overlap_scheduler"] = True
    wrapper: tuple[str, ...] = ()
    worker = None
    if isl.multi_server:
        args += ["--gpus_per_node", str(isl.gpus_per_server)]
        wrapper = ("mpirun", "--allow-run-as-root", "-H", "$NODE_HOSTS", "-np",
                   str(isl.size), "trtllm-llmapi-launch")
        worker = ("/usr/sbin/sshd", "-D")  # mpirun on the leader starts this server's ranks
    return Launch(isl, ("trtllm-serve", "$MODEL_PATH"), tuple(args), wrapper=wrapper,
                  worker=worker, env=_visible(isl), config_name=config_name, config=config)


BUILDERS = {"sglang": sglang, "vllm": vllm, "trtllm": trtllm}


def launches(dep: LaunchPlan) -> list[Launch]:
    """Every serving island's launch, in plan order."""
    build = BUILDERS[dep.engine.name]
    return [build(dep, isl) for isl in dep.islands]


def trtllm_disagg_config(dep: LaunchPlan, hosts: Mapping[int, str]) -> dict[str, Any]:
    """``trtllm-serve disaggregated -c`` config: the context (prefill) and generation
    (decode) servers by URL.  It balances without length ranges; router.json is what
    sends each range to its islands (README)."""
    ctx = [i for i in dep.islands if i.role == "prefill"]
    gen = [i for i in dep.islands if i.role == "decode"]
    return {"hostname": "0.0.0.0", "port": 8000, "backend": "pytorch",
            "context_servers": {"num_instances": len(ctx),
                                "urls": [f"{hosts[i.index]}:{i.port}" for i in ctx]},
            "generation_servers": {"num_instances": len(gen),
                                   "urls": [f"{hosts[i.index]}:{i.port}" for i in gen]}}


__all__ = ["BUILDERS", "FLAG_LISTS", "IMAGES", "Launch", "flag_list", "launches",
           "trtllm_disagg_config"]
