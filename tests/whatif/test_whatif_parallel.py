"""What-if studies on workers and across interruptions (issue 20): a study solved on a
local Ray gives the serial study's outcomes; one interrupted part-way keeps each
finished scenario on disk and, resumed, solves only the rest and gives the
uninterrupted study's tables; one that fails leaves nothing behind."""

from __future__ import annotations

import csv

import pytest
from test_whatif_fixtures import write_spec

from planner.core.errors import PlannerError
from planner.whatif import load_spec, run_whatif
from planner.whatif.solve import WhatIfRunner

STUDIES = {"budget_sweep": [32, 48, 64], "prices": {"H20": ["0.5x", "1.5x"]},
           "marginal": 16}


def _rows(result):
    return [{k: v for k, v in o.to_dict().items() if k != "seconds"}
            for o in result.outcomes]


def _csv(folder):
    with open(folder / "whatif.csv") as f:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(f)]


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    return write_spec(tmp_path_factory.mktemp("whatif-par"), STUDIES, budget=48)


@pytest.mark.slow
def test_ray_study_equals_serial_study(spec_path):
    pytest.importorskip("ray")
    from planner.core.execution import RayExecutor

    spec = load_spec(spec_path)
    serial = run_whatif(spec)
    ex = RayExecutor(workers=2)
    try:
        parallel = run_whatif(spec, executor=ex)
    finally:
        ex.close()
    assert len(serial.outcomes) >= 8
    assert _rows(parallel) == _rows(serial)
    assert parallel.problems == serial.problems


def _interrupt_at(monkeypatch, n, error=KeyboardInterrupt):
    real = WhatIfRunner._solve_new
    calls = {"n": 0}

    def solve(self, sc, *args):
        calls["n"] += 1
        if n is not None and calls["n"] == n:
            raise error
        return real(self, sc, *args)

    monkeypatch.setattr(WhatIfRunner, "_solve_new", solve)
    return calls


def test_interrupted_study_resumes_from_its_finished_scenarios(run_cli, spec_path,
                                                               tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = _interrupt_at(monkeypatch, None)
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", "reference")
    assert rc == 0, err
    total = calls["n"]  # distinct problems of the study

    calls = _interrupt_at(monkeypatch, 4)
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", "study")
    assert rc == 130 and "--resume" in err and "3 scenarios" in err
    cells = tmp_path / ".study.cells"
    assert not (tmp_path / "study").exists()
    assert len(list(cells.glob("*.json"))) == 3 + 1  # three cells and the study index

    calls = _interrupt_at(monkeypatch, None)
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", "study", "--resume")
    assert rc == 0, err
    assert calls["n"] == total - 3  # nothing finished was solved again
    assert _csv(tmp_path / "study") == _csv(tmp_path / "reference")
    assert not cells.exists()


def test_resume_of_another_study_is_refused(run_cli, spec_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _interrupt_at(monkeypatch, 2)
    rc, _, _ = run_cli("whatif", str(spec_path), "-q", "--out", "study")
    assert rc == 130
    _interrupt_at(monkeypatch, None)
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", "study", "--resume",
                         "--ranges", "7")
    assert rc == 2 and "another run" in err and "ranges" in err


def test_failed_study_leaves_nothing(run_cli, spec_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _interrupt_at(monkeypatch, 3, PlannerError("solver exploded"))
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", "new/study")
    assert rc == 2 and "solver exploded" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_resume_without_cells_says_so(run_cli, spec_path, tmp_path):
    rc, _, err = run_cli("whatif", str(spec_path), "-q", "--out", str(tmp_path / "s"),
                         "--resume")
    assert rc == 2 and "nothing to resume" in err
