"""`planner plan --profile` end to end on a small profile: the run folder, every slot
held in simulation, the savings, export, replay, report, determinism -- and the bad
inputs of issue 31 (one line naming the file, slot and field; exit 2; nothing written)."""

from __future__ import annotations

import csv
import json

import pytest

from planner.cli.main import run
from planner.sim.closed_loop import ATTAIN_TARGET

INVENTORY = """
name: tiers-test
gpus:
  - {type: H100-SXM, count: 8, price_per_hour: 4.5,
     tiers: {reserved: 2.7, on_demand: 4.5, on_demand_max: 8, spot: 1.6, spot_max: 2,
             spot_preemption: 0.1}}
  - {type: A100-80G, count: 8, price_per_hour: 3.5,
     tiers: {reserved: 2.1, on_demand: 3.5, on_demand_max: 8}}
"""
#: Six hours: a quiet night, a busy morning.
PROFILE = """
name: six-hours
period_hours: 6
slots:
  - {start: 0, hours: 1, rate: 4}
  - {start: 1, hours: 1, rate: 6}
  - {start: 2, hours: 1, rate: 20}
  - {start: 3, hours: 1, rate: 40}
  - {start: 4, hours: 1, rate: 30}
  - {start: 5, hours: 1, rate: 10}
"""
ARGS = ["--model", "llama-3.1-8b", "--workload", "azure-conv-2023", "--quiet"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("profile")
    (d / "inv.yaml").write_text(INVENTORY)
    (d / "six.yaml").write_text(PROFILE)
    return d


@pytest.fixture(scope="module")
def runs(files):
    out = []
    for k in range(2):
        folder = files / f"run{k}"
        rc = run(["plan", "--profile", str(files / "six.yaml"), "--inventory",
                  str(files / "inv.yaml"), "--out", str(folder), *ARGS])
        assert rc == 0
        out.append(folder)
    return out


def load(folder):
    return json.loads((folder / "schedule.json").read_text())


def test_run_folder_bill_and_savings(runs):
    folder = runs[0]
    for name in ("schedule.json", "schedule.csv", "report.md", "schedule.png"):
        assert (folder / name).is_file()
    d = load(folder)
    b = d["schedule"]["bill"]
    assert b["total"] == pytest.approx(b["reserved"] + b["on_demand"] + b["spot"])
    assert len(d["schedule"]["slots"]) == 6
    # never dearer than either baseline, and the savings are what the bills say
    for name, base in d["baselines"].items():
        assert base is not None
        assert b["total"] <= base["bill"]["total"] + 1e-6
        assert d["savings"][name] == pytest.approx(1 - b["total"] / base["bill"]["total"])
    # every slot has islands of both phases and demand the tables can carry
    for slot in d["schedule"]["slots"]:
        assert slot["capacity_rps"]["default"] >= slot["demand_rps"]["default"] * 0.999
    rows = list(csv.DictReader((folder / "schedule.csv").open()))
    assert {int(r["slot"]) for r in rows} == set(range(6))
    assert "## Cost of the period" in (folder / "report.md").read_text()


def test_every_slot_holds_in_simulation(runs):
    d = load(runs[0])
    assert {c["slot"] for c in d["checks"]} == set(range(6))
    assert min(c["attainment"] for c in d["checks"]) >= ATTAIN_TARGET
    assert d["summary"]["lowest_attainment"] >= ATTAIN_TARGET


def test_same_seed_same_schedule(runs):
    a, b = load(runs[0]), load(runs[1])
    assert a["schedule"]["reserved"] == b["schedule"]["reserved"]
    assert a["schedule"]["slots"] == b["schedule"]["slots"]
    assert a["schedule"]["bill"] == b["schedule"]["bill"]


def test_replay_export_and_report(runs, capsys):
    folder = runs[0]
    assert run(["simulate", str(folder), "--profile", "--seed", "3", "-q"]) == 0
    rp = json.loads((folder / "day-replay.json").read_text())
    assert rp["slots"] == list(range(6)) and len(rp["checks"]) == 6
    assert rp["lowest_attainment"] >= 0.99
    assert run(["export", str(folder)]) == 0
    rows = list(csv.DictReader((folder / "export" / "schedule.csv").open()))
    d = load(folder)
    for slot in d["schedule"]["slots"]:
        up = sum(i["reserved"] + i["on_demand"] + i["spot"] for i in slot["islands"])
        assert sum(1 for r in rows if int(r["slot"]) == slot["slot"]) == up
    named = {r["island"] for r in rows} - {"extra"}
    scripts = {p.name.split("-")[0] + "-" + p.name.split("-")[1]
               for p in (folder / "export" / "default").glob("island-*.sh")}
    assert named <= scripts
    before = (folder / "report.md").read_text()
    (folder / "report.md").unlink()
    assert run(["report", str(folder), "-q"]) == 0
    assert (folder / "report.md").read_text() == before
    capsys.readouterr()


def test_a_plain_run_folder_is_not_replayed_as_a_profile(runs, tmp_path):
    rc = run(["simulate", str(runs[0]), "--rate", "2"])
    assert rc == 2


@pytest.mark.parametrize("text,needle", [
    (PROFILE.replace("rate: 20", "rate: -20"), "slot 2: field 'rate'"),
    (PROFILE.replace("rate: 20", "rate: .nan"), "slot 2: field 'rate'"),
    (PROFILE.replace("start: 3,", "start: 2.5,"), "slot 3: field 'start'"),
    (PROFILE.replace("start: 3,", "start: 3.5,"), "slot 3: field 'start'"),
])
def test_bad_profiles(files, tmp_path, capsys, text, needle):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    out = tmp_path / "out"
    rc = run(["plan", "--profile", str(bad), "--inventory", str(files / "inv.yaml"),
              "--out", str(out), *ARGS])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and needle in err and str(bad) in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("edit,needle", [
    (("reserved: 2.7", "reserved: 0"), "tiers.reserved"),
    (("spot_preemption: 0.1", "spot_preemption: 1.0"), "tiers.spot_preemption"),
    (("spot: 1.6", "spot: -1"), "tiers.spot"),
])
def test_bad_tiers(files, tmp_path, capsys, edit, needle):
    inv = tmp_path / "inv.yaml"
    inv.write_text(INVENTORY.replace(*edit))
    rc = run(["plan", "--profile", str(files / "six.yaml"), "--inventory", str(inv),
              "--out", str(tmp_path / "o"), *ARGS])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and needle in err and str(inv) in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra,needle", [
    (["--budget", "100"], "--budget does not apply with --profile"),
    (["--search", "divider"], "--search does not apply with --profile"),
    (["--peak-rps", "-3"], "--peak-rps"),
    (["--startup-s", "-1"], "--startup-s"),
])
def test_flags_checked_before_work(files, tmp_path, capsys, extra, needle):
    rc = run(["plan", "--profile", str(files / "six.yaml"), "--inventory",
              str(files / "inv.yaml"), "--out", str(tmp_path / "o"), *ARGS, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and not (tmp_path / "o").exists()


def test_relative_profile_needs_a_peak(files, tmp_path, capsys):
    rc = run(["plan", "--profile", "enterprise-week", "--inventory", str(files / "inv.yaml"),
              "--out", str(tmp_path / "o"), *ARGS])
    assert rc == 2 and "--peak-rps" in capsys.readouterr().err
    rc = run(["plan", "--peak-rps", "3", "--inventory", str(files / "inv.yaml"),
              "--out", str(tmp_path / "o")])
    assert rc == 2 and "only with --profile" in capsys.readouterr().err


def test_caps_too_small_is_exit_1(files, tmp_path, capsys):
    rc = run(["plan", "--profile", str(files / "six.yaml"), "--peak-rps", "100000",
              "--inventory", str(files / "inv.yaml"), "--out", str(tmp_path / "o"),
              "--no-sim-check", *ARGS])
    err = capsys.readouterr().err
    assert rc == 1 and "tier caps" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("stream, needle", [
    ("../../esc", "field 'workloads.../../esc' must be 1-64 letters"),
    ("/tmp/abs", "field 'workloads./tmp/abs' must be 1-64 letters"),
    ("a/b", "field 'workloads.a/b' must be 1-64 letters"),
])
def test_a_stream_name_is_one_folder_name(files, tmp_path, capsys, stream, needle):
    """A stream names the run's streams/<stream> folder: '../../esc' wrote a plan.json
    two folders above the run."""
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE + f"workloads: {{'{stream}': azure-conv-2023}}\n")
    rc = run(["plan", "--profile", str(prof), "--inventory", str(files / "inv.yaml"),
              "--out", str(tmp_path / "sub" / "o"), *ARGS])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "sub").exists() and not (tmp_path / "esc").exists()


def test_stream_names_the_exports_cannot_tell_apart_are_refused(files, tmp_path, capsys):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE + "workloads: {chat: azure-conv-2023, Chat: azure-code-2023}\n")
    rc = run(["plan", "--profile", str(prof), "--inventory", str(files / "inv.yaml"),
              "--out", str(tmp_path / "o"), *ARGS])
    err = capsys.readouterr().err
    assert rc == 2 and "'chat' and 'Chat' differ only in case" in err


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d.update(streams={"../../../p1": "azure-conv-2023"}),
     "field 'streams' must be 1-64 letters"),
    (lambda d: d.update(summary={}), "field 'summary.peak_rps' must be a number"),
    (lambda d: d.update(startup_s=-5), "field 'startup_s' must be >= 0, got -5"),
])
def test_an_edited_schedule_run_is_refused_by_field(runs, tmp_path, capsys, edit, needle):
    """report drew a traceback from an empty summary; export followed a stream named
    '../../../p1' out of the run folder and printed a negative start-up lead."""
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(runs[0], folder)
    data = load(folder)
    edit(data)
    (folder / "schedule.json").write_text(json.dumps(data))
    before = sorted(p.name for p in folder.iterdir())
    for argv in (["report", str(folder)], ["export", str(folder), "--out",
                                           str(tmp_path / "ex")]):
        capsys.readouterr()
        assert run(argv) == 2, argv
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in folder.iterdir()) == before
    assert not (tmp_path / "ex").exists() and not (tmp_path.parent / "p1").exists()


def test_a_profile_planned_without_ceilings_reports_none(files, tmp_path):
    """--no-slo ended in a traceback while the report was written, after the planning."""
    folder = tmp_path / "o"
    rc = run(["plan", "--profile", str(files / "six.yaml"), "--inventory",
              str(files / "inv.yaml"), "--out", str(folder), "--no-slo", *ARGS])
    assert rc == 0
    assert "SLO: none (no latency ceilings)." in (folder / "report.md").read_text()
