"""`planner plan --fleet` end to end on a small fleet: the run folder, the promise per
service on unseen seeds, the joint plan against the best split, determinism, report,
export -- and the bad inputs of issue 30 (one line, exit 2; exit 1 naming the service
that cannot be served; nothing written)."""

from __future__ import annotations

import json

import pytest
from fleet_data import FLEET, INVENTORY

from planner.cli.main import run
from planner.core.defaults import SLO_ATTAINMENT
from planner.sim.closed_loop import verify_seeds

BUDGET = 6.0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    (d / "inv.yaml").write_text(INVENTORY)
    (d / "fleet.yaml").write_text(FLEET)
    return d


@pytest.fixture(scope="module")
def runs(files):
    """The same fleet planned twice with the same seed."""
    out = []
    for k in range(2):
        folder = files / f"run{k}"
        rc = run(["plan", "--fleet", str(files / "fleet.yaml"), "--inventory",
                  str(files / "inv.yaml"), "--budget", str(BUDGET), "--out", str(folder),
                  "--quiet"])
        assert rc == 0
        out.append(folder)
    return out


def load(folder):
    return json.loads((folder / "fleet.json").read_text())


def test_run_folder_and_the_promise(runs):
    folder = runs[0]
    fleet = load(folder)
    s = fleet["summary"]
    lam = s["lambda_requests_per_s"]
    assert lam > 0
    assert s["cost_per_hour"] <= BUDGET + 1e-9
    for gpu, n in s["gpus_used"].items():
        assert n <= s["gpus_available"][gpu]
    unseen = set(verify_seeds(0))
    for svc in fleet["services"]:
        plan = json.loads((folder / svc["folder"] / "plan.json").read_text())
        assert plan["request"]["model"] == svc["model"]
        assert svc["requests_per_s"] == pytest.approx(lam * svc["share"])
        # the service's own headline holds at least what the fleet promises it
        assert svc["headline_requests_per_s"] >= svc["requests_per_s"] * (1 - 1e-9)
        checks = svc["slo_attainment_at_promise"]
        assert {c["seed"] for c in checks} == unseen  # seeds the planner did not use
        for c in checks:
            assert c["offered_rps"] == pytest.approx(svc["requests_per_s"])
            assert c["attainment"] >= SLO_ATTAINMENT
    assert sum(svc["cost_per_hour"] for svc in fleet["services"]) == \
        pytest.approx(s["cost_per_hour"])


def test_joint_against_the_best_split(runs):
    fleet = load(runs[0])
    c = fleet["comparison"]
    assert c["joint"] is not None and c["split"] is not None
    # the answer is the best fleet the run found, by the one promise
    assert fleet["summary"]["lambda_requests_per_s"] >= c["split"]["lambda_rps"] - 1e-9
    assert fleet["summary"]["lambda_requests_per_s"] >= c["joint"]["lambda_rps"] - 1e-9
    # on the perf model the joint MILP is at least the split's (first rounds)
    assert c["milp_margin"] >= -1e-3
    labels = [r["label"] for r in fleet["rounds"]]
    assert "joint, round 1" in labels and "best split, round 1" in labels


def test_same_seed_same_fleet(runs):
    a, b = (load(f) for f in runs)
    a.pop("timings"), b.pop("timings")
    a["request"].pop("fleet_file"), b["request"].pop("fleet_file")
    assert a == b


def test_report_leads_with_the_answer(runs, capsys):
    text = (runs[0] / "report.md").read_text()
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[0] == "## The answer"
    assert "## Service chat" in heads and "## Service code" in heads
    assert (runs[0] / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert run(["report", str(runs[0]), "--quiet"]) == 0
    assert (runs[0] / "services" / "code" / "report.md").is_file()


@pytest.mark.parametrize("fmt", ["shell", "k8s"])
def test_export_one_router_for_the_fleet(runs, tmp_path, fmt):
    out = tmp_path / fmt
    assert run(["export", str(runs[0]), "--format", fmt, "--out", str(out), "-q"]) == 0
    router = json.loads((out / "router.json").read_text())
    assert set(router["services"]) == {"chat", "code"}
    # both serve llama-3.1-8b: a request names the service to be told apart
    assert {s["request_model"] for s in router["services"].values()} == {"chat", "code"}
    assert {s["served_model_name"] for s in router["services"].values()} == {"llama-3.1-8b"}
    for name, svc in router["services"].items():
        assert (out / name / "router.json").is_file()
        endpoints = [i["endpoint"] for i in svc["router"]["islands"]]
        if fmt == "shell":
            assert all(f"{name.upper()}_ISLAND_" in e for e in endpoints)
        else:
            assert all(f"//{name}-island-" in e for e in endpoints)


@pytest.mark.parametrize("name, needle", [
    ("chat", "field 'services': 'chat' is used twice"),
    ("../chat", "field 'services[1].name' must be 1-64 letters"),
])
def test_an_edited_fleet_run_with_a_bad_service_name_is_refused(runs, tmp_path, run_cli,
                                                                name, needle):
    """Two services named alike were read as one (the export held only one of them)."""
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(runs[0], folder)
    data = json.loads((folder / "fleet.json").read_text())
    data["services"][1]["name"] = name
    (folder / "fleet.json").write_text(json.dumps(data))
    for argv in (("report", str(folder)), ("export", str(folder), "--out",
                                           str(tmp_path / "ex"))):
        rc, _, err = run_cli(*argv)
        assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "ex").exists()


def test_a_request_names_a_service_by_its_model_unless_another_serves_it():
    from planner.services.export import request_model

    models = ["llama-3.1-8b", "llama-3.1-8b", "deepseek-v3"]
    assert [request_model(n, m, models) for n, m in zip(("chat", "code", "reason"), models,
                                                         strict=True)] == \
        ["chat", "code", "deepseek-v3"]


def test_services_sharing_a_server_get_disjoint_gpus_and_ports():
    """Each service's plan numbers its servers from 0; the fleet buys GPUs for all of
    them, so two services' partly used servers of one type are one server of the fleet
    (both exported GPUs 0-3 of 'server 0' before, and ports from 20000)."""
    from planner.services.export import fleet_placement

    def plan(*servers, islands=3):
        return {"servers": [{"index": k, "gpu": g, "gpus": n, "gpus_used": u}
                            for k, (g, n, u) in enumerate(servers)],
                "islands": [{}] * islands}

    placed = fleet_placement({"a": plan(("H100-SXM", 8, 4)),
                              "b": plan(("A100-80G", 8, 1), ("H100-SXM", 8, 4), islands=4),
                              "c": plan(("H100-SXM", 8, 8), ("H100-SXM", 8, 2))})
    assert placed["a"].servers == {"0": ("h100-sxm-0", 0)}
    assert placed["b"].servers == {"0": ("a100-80g-0", 0), "1": ("h100-sxm-0", 4)}
    # a full server is the fleet's to itself; the next partly used one opens a new one
    assert placed["c"].servers == {"0": ("h100-sxm-1", 0), "1": ("h100-sxm-2", 0)}
    assert [p.port_base for p in placed.values()] == [20000, 20030, 20070]


@pytest.mark.parametrize("fmt", ["shell"])
def test_an_exported_fleet_never_gives_one_gpu_or_port_twice(runs, tmp_path, fmt):
    import re

    out = tmp_path / "x"
    assert run(["export", str(runs[0]), "--format", fmt, "--out", str(out), "-q"]) == 0
    gpus, ports = [], []
    for script in sorted(out.glob("*/island-*.sh")):
        text = script.read_text()
        server = re.search(r"# servers: 1 \(([^)]+)\)", text)
        devices = re.search(r"CUDA_VISIBLE_DEVICES=([0-9,]+)", text)
        if server and devices:  # a one-server island
            gpus += [(server.group(1), d) for d in devices.group(1).split(",")]
        ports += re.findall(r"--port (\d+)", text)
    assert gpus and len(gpus) == len(set(gpus))
    assert ports and len(ports) == len(set(ports))


def test_simulate_names_the_services_folder(runs, run_cli):
    rc, _out, err = run_cli("simulate", str(runs[0]))
    assert rc == 2
    assert "services/NAME" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra,fleet,message", [
    (["--model", "llama-3.1-8b", "--budget", "5"], FLEET, "--model does not apply"),
    (["--target-rps", "5"], FLEET, "--target-rps does not apply"),
    (["--inner", "thesis", "--budget", "5"], FLEET, "--inner does not apply"),
    (["--search", "nope", "--budget", "5"], FLEET, "--search must be one of"),
    ([], FLEET, "give --budget"),
    (["--budget", "5"], FLEET.replace("share: 0.6", "target_rps: 3").replace(
        "share: 0.4", "target_rps: 2"), "--budget does not apply"),
    (["--budget", "5"], FLEET.replace("share: 0.4", "share: 0.3"), "sum to 0.9"),
    (["--budget", "5"], FLEET.replace("name: code", "name: chat"), "'chat' is used twice"),
    (["--budget", "5"], FLEET.replace("share: 0.4", "share: 0.4\n    engine: sglang\n"
                                      "    colour: red"), "unknown field"),
])
def test_bad_fleet_input_exit_2(files, tmp_path, run_cli, extra, fleet, message):
    path = tmp_path / "fleet.yaml"
    path.write_text(fleet)
    out = tmp_path / "out"
    rc, _o, err = run_cli("plan", "--fleet", str(path), "--inventory",
                          str(files / "inv.yaml"), "--out", str(out), *extra)
    assert rc == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_service_no_island_can_hold_exit_1(tmp_path, run_cli):
    (tmp_path / "inv.yaml").write_text(
        "name: tiny\ngpus:\n  - {type: L40S, count: 2, price_per_hour: 1.0}\n")
    (tmp_path / "fleet.yaml").write_text(
        "services:\n  - {name: small, model: llama-3.1-8b, share: 0.5}\n"
        "  - {name: big, model: deepseek-v3, share: 0.5}\n")
    out = tmp_path / "out"
    rc, _o, err = run_cli("plan", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
                          str(tmp_path / "inv.yaml"), "--budget", "10", "--out", str(out),
                          "--quiet")
    assert rc == 1
    assert "service 'big' cannot be served" in err
    assert "--ttft" not in err and "--engine" not in err
    assert not out.exists()


def test_sigterm_stops_a_fleet_plan_and_leaves_nothing(files, tmp_path):
    """SIGTERM (a scheduler's timeout) is Ctrl-C: exit 130, the second process stopped,
    no run folder (the wait's timeout guards a hang; nothing is timed)."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "deep" / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from planner.cli.main import run; "
         "sys.exit(run(sys.argv[1:]))", "plan", "--fleet", str(files / "fleet.yaml"),
         "--inventory", str(files / "inv.yaml"), "--budget", str(BUDGET), "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # wait until the plan is under way (its first progress line), then stop it
    first = proc.stderr.readline()
    assert "planning 2 services" in first
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 130
    assert not (tmp_path / "deep").exists()


def test_targets_mode_meets_every_target(files, tmp_path):
    """A fleet of targets: the cheapest fleet found on which every service holds its own
    target at its SLO, on the unseen seeds."""
    fleet = FLEET.replace("share: 0.6", "target_rps: 30").replace("share: 0.4",
                                                                   "target_rps: 15")
    (tmp_path / "fleet.yaml").write_text(fleet)
    out = tmp_path / "run"
    assert run(["plan", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
                str(files / "inv.yaml"), "--out", str(out), "--quiet"]) == 0
    d = load(out)
    assert d["summary"]["mode"] == "targets" and d["summary"]["targets_met"]
    assert d["summary"]["lambda_requests_per_s"] is None
    targets = {"chat": 30.0, "code": 15.0}
    for svc in d["services"]:
        assert svc["requests_per_s"] == targets[svc["name"]]
        assert svc["headline_requests_per_s"] >= targets[svc["name"]] * (1 - 1e-9)
        checks = svc["slo_attainment_at_promise"]
        assert {c["seed"] for c in checks} == set(verify_seeds(0))
        assert all(c["attainment"] >= SLO_ATTAINMENT for c in checks)
    split = d["comparison"]["split"]
    if split is not None and split["short"] == []:
        # the answer costs no more than the best split that holds every target
        assert d["summary"]["cost_per_hour"] <= split["cost_per_hour"] + 1e-9


def test_small_targets_a_colocated_island_cannot_hold_are_planned(tmp_path, run_cli):
    """Code prompts on colocated islands hold no load; the rounds must move such a
    service to dedicated islands (it was refused after 5 rounds of colocated ones)."""
    (tmp_path / "inv.yaml").write_text(
        "min_island: 1\ngpus:\n  - {type: H100-SXM, count: 16, price_per_hour: 4.5}\n"
        "  - {type: A100-80G, count: 16, price_per_hour: 3.5}\n")
    (tmp_path / "fleet.yaml").write_text(
        "services:\n"
        "  - {name: a, model: llama-3.1-8b, workload: azure-conv-2023, target_rps: 2}\n"
        "  - {name: b, model: llama-3.1-8b, workload: azure-code-2023, target_rps: 2}\n")
    out = tmp_path / "run"
    rc, _, err = run_cli("plan", "--fleet", str(tmp_path / "fleet.yaml"), "--inventory",
                         str(tmp_path / "inv.yaml"), "--ranges", "8", "--out", str(out), "-q")
    assert rc == 0, err
    fleet = json.loads((out / "fleet.json").read_text())
    assert fleet["summary"]["targets_met"] is True
    roles = {i["role"] for i in json.loads(
        (out / "services" / "b" / "plan.json").read_text())["islands"]}
    assert "decode" in roles
