"""`planner export`: launch flags of the pinned engine versions, Kubernetes manifests that
validate, router weights that are the simulator's, and bad plans refused whole.

The plans are made once per module on the small two-type inventory (tests/conftest.py),
one MoE (DeepSeek-V3) and one dense (Llama-3.1-70B) plan per engine, with
``--no-sim-check --ranges 8`` to stay fast.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from perfmodel.engines import get_engine

ENGINES = ("trtllm", "sglang", "vllm")
MODELS = {"moe": "deepseek-v3", "dense": "llama-3.1-70b"}
CASES = [(e, m) for e in ENGINES for m in MODELS]
#: The Kubernetes version whose OpenAPI schema the manifests are validated against (the
#: newest kubernetes-validate ships).
K8S_VERSION = "1.37"


def _cli(*argv: str) -> int:
    from planner.cli.main import run

    return run(list(argv))


@pytest.fixture(scope="module")
def plans(tmp_path_factory, small_inventory):
    """(engine, model kind) -> run folder of a small plan."""
    root = tmp_path_factory.mktemp("export-plans")
    inv = small_inventory
    out = {}
    for engine, kind in CASES:
        run = root / f"{engine}-{kind}"
        rc = _cli("plan", "--inventory", str(inv), "--engine", engine, "--model",
                  MODELS[kind], "--no-sim-check", "--ranges", "8", "--out", str(run), "-q")
        assert rc == 0, (engine, kind)
        out[engine, kind] = run
    return out


@pytest.fixture(scope="module")
def exports(plans, tmp_path_factory):
    """(engine, kind, format) -> export folder, written through the CLI."""
    root = tmp_path_factory.mktemp("exports")
    out = {}
    for (engine, kind), run in plans.items():
        for fmt in ("shell", "k8s"):
            target = root / f"{engine}-{kind}-{fmt}"
            assert _cli("export", str(run), "--format", fmt, "--out", str(target), "-q") == 0
            out[engine, kind, fmt] = target
    return out


@pytest.mark.parametrize("engine,kind", CASES)
def test_every_flag_is_in_the_pinned_version_flag_list(plans, exports, engine, kind):
    from planner.export.deployment import read_deployment
    from planner.export.engines import flag_list, launches

    dep = read_deployment(plans[engine, kind])
    assert dep.engine.name == engine
    known = flag_list(engine)
    for launch in launches(dep):
        used = launch.flags() + launch.config_keys()
        assert used, launch.island.name
        unknown = [f for f in used if f not in known]
        assert not unknown, f"{launch.island.name}: {unknown} not in {engine}'s flag list"
        # the written script runs exactly this command
        script = (exports[engine, kind, "shell"] / f"{launch.island.name}.sh").read_text()
        for flag in launch.flags():
            assert f"{flag}" in script
        assert launch.program[-1].strip('"').split("/")[-1] in script


@pytest.mark.parametrize("engine", ENGINES)
def test_flag_lists_name_repository_file_and_version(engine):
    from importlib import resources

    from planner.export.engines import FLAG_LISTS, flag_list

    text = resources.files("planner.export").joinpath(f"data/{FLAG_LISTS[engine]}").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any("repository: github.com/" in line for line in header)
    assert any("file: " in line for line in header)
    assert any("version" in line for line in header)
    assert len(flag_list(engine)) > 30


def test_launch_semantics_follow_the_plan(plans):
    """Parallel sizes, PD roles, memory, batch and multi-server placeholders per engine."""
    from planner.export.deployment import read_deployment
    from planner.export.engines import launches

    for engine in ENGINES:
        dep = read_deployment(plans[engine, "moe"])
        for launch in launches(dep):
            isl, args = launch.island, list(launch.args)

            def value(flag, args=args):
                return args[args.index(flag) + 1]

            if engine == "sglang":
                assert value("--tp-size") == str(isl.size)
                # SGLang's own reserve rule at this GPU and TP (perfmodel.engines)
                assert value("--mem-fraction-static") == (
                    f"{get_engine('sglang').memory_fraction_on(isl.gpu, isl.tp):g}")
                if isl.dp > 1:
                    assert value("--dp-size") == str(isl.dp) and "--enable-dp-attention" in args
                if isl.role in ("prefill", "decode"):
                    assert value("--disaggregation-mode") == isl.role
                    assert value("--disaggregation-transfer-backend") in ("mooncake", "nixl")
                multi = ("--nnodes", "--node-rank", "--dist-init-addr")
            elif engine == "vllm":
                assert value("--tensor-parallel-size") == str(isl.tp)
                assert value("--max-num-seqs") == str(isl.batch)
                assert value("--gpu-memory-utilization") == "0.9"
                if isl.role in ("prefill", "decode"):
                    assert json.loads(value("--kv-transfer-config"))["kv_connector"] \
                        == "NixlConnector"
                multi = ("--data-parallel-address",) if isl.dp > 1 else ("--nnodes",)
            else:
                assert value("--tp_size") == str(isl.size)
                assert value("--ep_size") == str(isl.ep)
                assert value("--max_batch_size") == str(isl.batch)
                assert launch.config["enable_attention_dp"] == (isl.dp > 1)
                assert launch.config["moe_tensor_parallel_size"] * isl.ep == isl.size
                if isl.role in ("prefill", "decode"):
                    assert launch.config["cache_transceiver_config"]["backend"] == "NIXL"
                multi = ("--gpus_per_node",)
            if isl.multi_server:
                assert all(f in args for f in multi), (engine, isl.name)
                text = " ".join(launch.argv)
                assert "$LEADER_ADDR" in text or "$NODE_HOSTS" in text
            if isl.redundant_experts:
                assert engine != "vllm"  # vLLM spreads experts unevenly instead


def test_shell_export_files(plans, exports):
    for (engine, kind), run in plans.items():
        folder = exports[engine, kind, "shell"]
        plan = json.loads((run / "plan.json").read_text())
        serving = [i for i, isl in enumerate(plan["islands"]) if isl["role"] != "idle"]
        scripts = sorted(p.name for p in folder.glob("island-*.sh"))
        assert len(scripts) == len(serving)
        for i, name in zip(serving, scripts, strict=True):
            isl = plan["islands"][i]
            assert name.startswith(f"island-{i:02d}-{isl['role']}-")
        assert {"router.json", "README.md"} <= {p.name for p in folder.iterdir()}
        readme = (folder / "README.md").read_text()
        assert "$MODEL_PATH" in readme and "Order" in readme
        if shutil.which("bash"):
            for name in scripts:
                check = subprocess.run(["bash", "-n", str(folder / name)],
                                       capture_output=True, text=True)
                assert check.returncode == 0, (name, check.stderr)


def _validate(doc):
    import kubernetes_validate

    kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize("engine,kind", CASES)
def test_k8s_manifests_validate(plans, exports, engine, kind):
    """Core kinds against the Kubernetes OpenAPI schema (kubernetes-validate, strict);
    a LeaderWorkerSet's fields by hand against its CRD
    (planner.export.k8s.leaderworkerset_problems) and its pod templates as core
    PodTemplates."""
    from planner.export.deployment import read_deployment
    from planner.export.k8s import leaderworkerset_problems, node_labels, pod_templates

    dep = read_deployment(plans[engine, kind])
    docs = list(yaml.safe_load_all(
        (exports[engine, kind, "k8s"] / "manifests.yaml").read_text()))
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Service") == len(dep.islands)
    assert kinds.count("Deployment") + kinds.count("LeaderWorkerSet") == len(dep.islands)
    router = next(d for d in docs if d["metadata"]["name"] == "planner-router")
    assert json.loads(router["data"]["router.json"])["islands"]
    labels = node_labels()
    by_name = {i.name: i for i in dep.islands}
    for doc in docs:
        if doc["kind"] == "LeaderWorkerSet":
            assert leaderworkerset_problems(doc) == []
            isl = by_name[doc["metadata"]["name"]]
            assert isl.multi_server
            assert doc["spec"]["leaderWorkerTemplate"]["size"] == len(isl.servers)
        else:
            _validate(doc)
        for k, tpl in enumerate(pod_templates(doc)):
            _validate({"apiVersion": "v1", "kind": "PodTemplate",
                       "metadata": {"name": f"{doc['metadata']['name']}-{k}"},
                       "template": tpl})
            isl = by_name[doc["metadata"]["name"]]
            container = tpl["spec"]["containers"][0]
            row = labels[isl.gpu.name.lower()]
            assert container["resources"]["limits"] == {row["resource"]:
                                                       str(isl.gpus_per_server)}
            assert tpl["spec"]["nodeSelector"] == {row["label"]: row["value"]}
    assert any(i.multi_server for i in dep.islands) == ("LeaderWorkerSet" in kinds)


def test_a_leaderworkerset_with_a_bad_field_is_caught():
    from planner.export.k8s import LWS_API, leaderworkerset_problems

    good = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "metadata": {"name": "x"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2,
                                                             "workerTemplate": {}}}}
    assert leaderworkerset_problems(good) == []
    bad = copy.deepcopy(good)
    bad["spec"]["leaderWorkerTemplate"]["sise"] = 2
    bad["spec"]["startupPolicy"] = "Eager"
    assert len(leaderworkerset_problems(bad)) == 2


def _retyped(src, gpu: str, price: float, run):
    """A copy of the plan in run folder ``src`` with every island and server on ``gpu``,
    written to ``run``; returns the plan document."""
    plan = json.loads((src / "plan.json").read_text())
    for part in (*plan["islands"], *(plan.get("servers") or [])):
        part["gpu"] = gpu
    # the plan's inventory lists what its islands use (planner.run.schema)
    need = sum(isl["size"] for isl in plan["islands"])
    plan["request"]["inventory"]["gpus"] = [{"type": gpu, "count": need,
                                            "price_per_hour": price, "gpus_per_node": 8}]
    run.mkdir()
    (run / "plan.json").write_text(json.dumps(plan))
    return plan


def test_amd_gpus_request_amd_resources_and_trtllm_refuses_them(plans, tmp_path):
    run = tmp_path / "amd"
    plan = _retyped(plans["sglang", "dense"], "MI300X", 3.0, run)
    assert _cli("export", str(run), "--format", "k8s", "--out", str(tmp_path / "k"), "-q") == 0
    docs = list(yaml.safe_load_all((tmp_path / "k" / "manifests.yaml").read_text()))
    pods = [t for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet")
            for t in [d["spec"].get("template") or d["spec"]["leaderWorkerTemplate"][
                "leaderTemplate"]]]
    assert pods and all("amd.com/gpu" in p["spec"]["containers"][0]["resources"]["limits"]
                        for p in pods)
    assert all(p["spec"]["nodeSelector"] == {"amd.com/gpu.product-name":
                                             "AMD_Instinct_MI300X_OAM"} for p in pods)
    plan["request"]["engine"] = "trtllm"
    (run / "plan.json").write_text(json.dumps(plan))
    assert _cli("export", str(run), "--out", str(tmp_path / "t")) == 1
    assert not (tmp_path / "t").exists()


def _router(folder):
    return json.loads((folder / "router.json").read_text())


@pytest.mark.parametrize("engine,kind", CASES)
def test_router_weights_sum_to_one_and_follow_the_plan(plans, exports, engine, kind):
    from planner.context.placement import pair_flows

    plan = json.loads((plans[engine, kind] / "plan.json").read_text())
    router = _router(exports[engine, kind, "shell"])
    assert router == {**_router(exports[engine, kind, "k8s"]),
                      "islands": router["islands"]}  # same weights in both formats
    isl = plan["islands"]
    front = [i for i, x in enumerate(isl) if x["role"] in ("prefill", "both")]
    back = [i for i, x in enumerate(isl) if x["role"] == "decode"]
    flows = np.array([[isl[i]["range_rps"] for i in front]]).reshape(len(front), -1)
    dflows = np.array([[isl[i]["range_rps"] for i in back]]).reshape(len(back), -1)
    disagg = [p for p, i in enumerate(front) if isl[i]["role"] == "prefill"]
    # KV moves from prefill-role islands only ('both' islands decode what they prefill)
    pairs = pair_flows(flows[disagg], dflows) if back and disagg else None
    assert len(router["ranges"]) == len(plan["ranges"]["start"])
    for j, r in enumerate(router["ranges"]):
        assert r["start"] == plan["ranges"]["start"][j]
        for phase in ("prefill", "decode", "kv_routes"):
            if r[phase]:
                assert sum(x["weight"] for x in r[phase]) == pytest.approx(1, abs=1e-9)
        if back:
            assert r["decode"]
        if not r["from_plan"]:
            continue
        got = {x["island"]: x["weight"] for x in r["prefill"]}
        for p, i in enumerate(front):
            share = isl[i]["shares"][j]
            want = flows[p, j] / flows[:, j].sum()
            assert got.get(i, 0.0) == pytest.approx(want, abs=1e-9)
            if share == 0:
                assert i not in got  # an island the plan gave no time to this range
        if pairs is not None and pairs[:, :, j].sum() > 0:
            pj = pairs[:, :, j] / pairs[:, :, j].sum()
            got_pairs = {(x["prefill"], x["decode"]): x["weight"] for x in r["kv_routes"]}
            for n, p in enumerate(disagg):
                for d, k in enumerate(back):
                    assert got_pairs.get((front[p], k), 0.0) == pytest.approx(pj[n, d],
                                                                              abs=1e-9)


@pytest.mark.parametrize("engine", ENGINES)
def test_router_weights_are_the_simulators_range_router(plans, exports, engine):
    """The simulated routing is the exported one: the range router of planner simulate,
    built on the same plan, weighs every island of every range as router.json does."""
    from planner.run.schema import load_plan
    from planner.sim.cluster import cluster_from_plan
    from planner.sim.routers.range_router import RangeRouter
    from planner.sim.run import plan_network

    plan = load_plan(plans[engine, "moe"] / "plan.json")
    cluster = cluster_from_plan(plan, network=plan_network(plan))
    sim = RangeRouter()
    sim.reset(cluster, np.random.default_rng(1))
    pre, dec = sim.weights
    serving = [i for i, x in enumerate(plan["islands"]) if x["role"] != "idle"]
    front = [serving[x.index] for x in cluster.islands if x.role in ("prefill", "both")]
    back = [serving[x.index] for x in cluster.islands if x.role == "decode"]
    router = _router(exports[engine, "moe", "shell"])
    for j, r in enumerate(router["ranges"]):
        got = {x["island"]: x["weight"] for x in r["prefill"]}
        assert [got.get(i, 0.0) for i in front] == pytest.approx(
            list(pre[:, j] / pre[:, j].sum()), abs=1e-9)
        if dec is not None:
            got = {x["island"]: x["weight"] for x in r["decode"]}
            assert [got.get(k, 0.0) for k in back] == pytest.approx(
                list(dec[:, j] / dec[:, j].sum()), abs=1e-9)


def _edit(plans, tmp_path, edit, engine="trtllm", kind="moe"):
    plan = json.loads((plans[engine, kind] / "plan.json").read_text())
    edit(plan)
    run = tmp_path / "edited"
    run.mkdir(exist_ok=True)
    (run / "plan.json").write_text(json.dumps(plan))
    return run


def _first_serving(plan):
    return next(i for i in plan["islands"] if i["role"] != "idle")


BAD = {
    "schema_version": (lambda p: p.update(schema_version=99), "schema_version"),
    "unknown engine": (lambda p: p["request"].update(engine="tgi"), "request.engine"),
    "roofline": (lambda p: p["request"].update(engine="roofline"), "request.engine"),
    "config label": (lambda p: _first_serving(p).update(config="tp2x4"), ".config"),
    "size not tp x dp": (lambda p: _first_serving(p).update(size=_first_serving(p)["size"]
                                                          + 1), ".config"),
    "ep not dividing": (lambda p: _first_serving(p).update(
        config=f"tp{_first_serving(p)['size']}-dp1-ep3"), ".config"),
    "unknown model": (lambda p: p["request"].update(model="gpt-9"), "request.model"),
    "servers": (lambda p: _first_serving(p).update(servers="all"), ".servers"),
    "missing islands": (lambda p: p.pop("islands"), "islands"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_plan_is_one_line_exit_2_and_nothing_written(plans, tmp_path, capsys, case):
    edit, field = BAD[case]
    run = _edit(plans, tmp_path, edit)
    for fmt in ("shell", "k8s"):
        capsys.readouterr()
        assert _cli("export", str(run), "--format", fmt) == 2, case
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "plan.json" in err and field in err, err
        assert not (run / "export").exists()
        assert [p.name for p in run.iterdir()] == ["plan.json"]


def test_a_layout_the_engine_does_not_launch_is_exit_1(plans, tmp_path, capsys):
    """TensorRT-LLM's attention DP runs on every rank: tp 2 x dp 4 on 8 GPUs is a layout
    the perf model prices but the engine does not start (perfmodel.launch)."""
    def edit(plan):
        isl = next(i for i in plan["islands"] if i["role"] != "idle" and i["size"] == 8)
        isl["config"] = "tp2-dp4-ep8"
    run = _edit(plans, tmp_path, edit)
    assert _cli("export", str(run)) == 1
    err = capsys.readouterr().err
    assert "config" in err and "dp" in err and len(err.strip().splitlines()) == 1
    assert not (run / "export").exists()


def test_out_folder_of_other_files_is_refused_and_reexport_replaces(plans, tmp_path):
    run = plans["sglang", "moe"]
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    assert _cli("export", str(run), "--out", str(foreign)) == 2
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    target = tmp_path / "deploy"
    assert _cli("export", str(run), "--out", str(target), "-q") == 0
    first = sorted(p.name for p in target.iterdir())
    assert _cli("export", str(run), "--out", str(target), "-q") == 0
    assert sorted(p.name for p in target.iterdir()) == first
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_an_empty_out_is_refused_and_the_working_folder_is_never_replaced(
        plans, tmp_path, capsys, monkeypatch):
    """``--out ''`` used to reach the folder as "." and write there; into an empty
    working folder the publish renamed a new folder over it, leaving the user's shell
    in a deleted folder."""
    run = plans["sglang", "moe"]
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    capsys.readouterr()
    assert _cli("export", str(run), "--out", "") == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --out: empty path; name a run folder"
    assert not any(here.iterdir())
    inode = here.stat().st_ino
    assert _cli("export", str(run), "--out", ".", "-q") == 0
    assert here.stat().st_ino == inode and Path.cwd() == here
    assert (here / "router.json").is_file()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("engine", ENGINES)
def test_blackwell_moe_launches_select_the_kernels_it_was_priced_at(plans, tmp_path, engine):
    """A Blackwell MoE layer is priced at FlashInfer's trtllm-gen kernels
    (perfmodel.kernels.library.runs_shared_moe), so its launch selects that backend; on
    Hopper the engine keeps its default (no flag)."""
    from planner.export.deployment import read_deployment
    from planner.export.engines import SHARED_MOE_BACKEND, flag_list, launches

    def backend(launch):
        args = list(launch.args)
        for flag in ("--moe-runner-backend", "--moe-backend"):
            if flag in args:
                return args[args.index(flag) + 1]
        return ((launch.config or {}).get("moe_config") or {}).get("backend")

    hopper = launches(read_deployment(plans[engine, "moe"]))
    assert all(backend(la) in (None, "WIDEEP") for la in hopper)
    run = tmp_path / "b200"
    _retyped(plans[engine, "moe"], "B200", 6.0, run)
    blackwell = launches(read_deployment(run))
    want = SHARED_MOE_BACKEND[engine]
    assert all(backend(la) == want for la in blackwell if not la.island.redundant_experts)
    assert any(not la.island.redundant_experts for la in blackwell)
    listed = flag_list(engine)
    for la in blackwell:
        assert set(la.flags()) <= listed and set(la.config_keys()) <= listed
