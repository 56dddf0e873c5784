"""The run folder: every file written, plan.json round trip, CSV rows, valid PNGs, a
self-contained HTML page, re-rendering, bad plan.json, and no half-written folder."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_fixtures import make_plan_dict

from planner.core.errors import PlannerError
from planner.report import RENDERED, files, html, render_report, write_run

EXPECTED = {"plan.json", "islands.csv", "ranges.csv", "per_length.csv", "history.csv",
            "baselines.csv", "islands.png", "assignment.png", "per_length.png",
            "convergence.png", "report.md", "report.html"}


@pytest.fixture(scope="module")
def plan() -> dict:
    return make_plan_dict()


@pytest.fixture(scope="module")
def run(plan, tmp_path_factory) -> tuple[Path, list[Path]]:
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    return run_dir, write_run(plan, run_dir)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """A small run folder; tests that change a folder work on a copy of it."""
    run_dir = tmp_path_factory.mktemp("small") / "run"
    write_run(make_plan_dict(S=300, J=8, history=12), run_dir)
    return run_dir


def _copy(small_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(small_run, tmp_path / "r"))


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_file_written(run):
    run_dir, written = run
    assert {p.name for p in written} == EXPECTED
    assert {p.name for p in run_dir.iterdir()} == EXPECTED
    assert set(RENDERED) == EXPECTED - {"plan.json"}
    assert all(p.stat().st_size > 0 for p in written)
    # nothing left beside the folder
    assert [p.name for p in run_dir.parent.iterdir()] == ["run"]


def test_plan_json_round_trips(run, plan):
    run_dir, _ = run
    loaded = json.loads((run_dir / "plan.json").read_text())
    assert loaded == json.loads(json.dumps(plan))
    assert loaded["schema_version"] == 1


def test_non_finite_numbers_become_null(tmp_path):
    plan = make_plan_dict(S=200, J=8, history=10)
    plan["baselines"]["homogeneous"][0]["gap"] = float("nan")
    plan["summary"]["d_total"] = float("inf")
    plan["per_range"]["prefill_rps"] = np.asarray(plan["per_range"]["prefill_rps"])
    write_run(plan, tmp_path / "r")
    text = (tmp_path / "r" / "plan.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    loaded = json.loads(text)
    assert loaded["baselines"]["homogeneous"][0]["gap"] is None
    assert loaded["summary"]["d_total"] is None
    assert loaded["per_range"]["prefill_rps"] == plan["per_range"]["prefill_rps"].tolist()
    assert "deviation D_total (§4.8.1; 0: the mix is matched) | —" in \
        (tmp_path / "r" / "report.md").read_text()


def test_csv_rows(run, plan):
    run_dir, _ = run
    islands = _rows(run_dir / "islands.csv")
    assert len(islands) == len(plan["islands"]) == 10
    assert [r["role"] for r in islands] == [i["role"] for i in plan["islands"]]
    assert float(islands[0]["cost_per_hour"]) == 4.0 * 32
    for row, isl in zip(islands, plan["islands"], strict=True):
        used = [j for j, x in enumerate(isl["shares"]) if x > 0]
        assert int(row["ranges_served"]) == len(used)
        if used:
            assert float(row["shortest_input"]) == plan["ranges"]["start"][used[0]]
            assert float(row["longest_input"]) == plan["ranges"]["end"][used[-1]]
        else:
            assert row["role"] == "idle" and row["shortest_input"] == ""
    ranges = _rows(run_dir / "ranges.csv")
    assert len(ranges) == 32
    rate = plan["summary"]["requests_per_s"]
    for j in (0, 13, 31):
        assert float(ranges[j]["demand_rps"]) == pytest.approx(plan["ranges"]["prob"][j] * rate)
        for k, isl in enumerate(plan["islands"]):
            assert float(ranges[j][f"share_i{k}"]) == isl["shares"][j]
    per_length = _rows(run_dir / "per_length.csv")
    assert len(per_length) == 8001
    assert float(per_length[900]["eval_prefill"]) == plan["per_length"]["eval_prefill"][900]
    history = _rows(run_dir / "history.csv")
    assert len(history) == 60
    assert [float(r["best_so_far"]) for r in history] == [h["best"] for h in
                                                           plan["search"]["history"]]
    baselines = _rows(run_dir / "baselines.csv")
    assert [r["kind"] for r in baselines] == ["plan"] + ["homogeneous"] * 3 + ["exact"]
    h200 = baselines[1]
    assert float(h200["plan_ratio"]) == pytest.approx(rate / 81.2)
    assert baselines[2]["plan_ratio"] == ""  # the infeasible H800-only plan has no ratio
    assert baselines[2]["mip_gap"] == ""  # null in plan.json -> empty cell


def test_pngs_are_valid_and_not_blank(run):
    run_dir, _ = run
    for name in ("islands.png", "assignment.png", "per_length.png", "convergence.png"):
        data = (run_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert 15_000 < len(data) < 2_000_000, (name, len(data))
        img = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        assert img.shape[1] == 1100 and 300 <= img.shape[0] <= 1600, (name, img.shape)
        non_white = (img < 240).any(axis=2).mean()
        assert 0.02 < non_white < 0.9, (name, non_white)
        packed = img[::4, ::4].astype(np.uint32) @ np.array([65536, 256, 1], np.uint32)
        assert len(np.unique(packed)) > 20, name


def test_html_is_self_contained_and_embeds_every_plot(run):
    run_dir, _ = run
    page = (run_dir / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", page, re.I)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert "url(" not in page and "@import" not in page
    embedded = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    pngs = {(run_dir / n).read_bytes() for n in ("islands.png", "assignment.png",
                                                  "per_length.png", "convergence.png")}
    assert {base64.b64decode(e) for e in embedded} == pngs
    order = [page.index(f">{heading}</h2>") for heading in (
        "The answer", "Islands", "Alternatives", "Assumptions and caveats",
        "How the plan uses its GPUs", "Terms used", "Appendix: details and search internals")]
    assert order == sorted(order)  # the answer first, search internals last
    for heading in ("Search", "Inputs", "Prices and their sources"):
        assert f">{heading}</h3>" in page[order[-1]:]
    assert page.count("<figcaption>") == 4


def test_markdown_links_the_pngs(run):
    run_dir, _ = run
    md = (run_dir / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == sorted(["islands.png", "assignment.png", "per_length.png",
                                    "convergence.png"])
    assert all((run_dir / link).is_file() for link in links)
    assert md.count("\n| ") > 30  # the tables are there


def test_render_report_reproduces_files(run, tmp_path):
    run_dir, _ = run
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "plan.json").write_bytes((run_dir / "plan.json").read_bytes())
    written = render_report(copy)
    assert {p.name for p in written} == EXPECTED - {"plan.json"}
    for name in EXPECTED:
        assert (copy / name).read_bytes() == (run_dir / name).read_bytes(), name


def test_cli_report_redraws_from_the_edited_plan(run_cli, small_run, tmp_path):
    run_dir = _copy(small_run, tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["request"]["inventory"]["name"] = "fleet-<edited>"
    plan["islands"][0]["config"] = "tp8-dp4-ep32"
    (run_dir / "plan.json").write_text(json.dumps(plan))
    (run_dir / "report.md").unlink()
    rc, out, err = run_cli("report", str(run_dir))
    assert rc == 0, err
    assert "Islands" in out and "re-rendered 11 files" in out and "tp8-dp4-ep32" in out
    page = (run_dir / "report.html").read_text()
    assert "fleet-&lt;edited&gt;" in page and "fleet-<edited>" not in page
    assert "tp8-dp4-ep32" in (run_dir / "islands.csv").read_text()
    assert (run_dir / "report.md").is_file()


def test_cli_report_refuses_a_model_it_cannot_read_the_deployment_of(run_cli, small_run,
                                                                    tmp_path):
    """The report reads the plan's islands through its typed deployment
    (planner.run.deployment): a model the perf model does not know is one line naming
    the field, exit 2, and the folder is left as it was."""
    run_dir = _copy(small_run, tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["request"]["model"] = "qwen3-<edited>"
    (run_dir / "plan.json").write_text(json.dumps(plan))
    before = (run_dir / "report.html").read_bytes()
    rc, _, err = run_cli("report", str(run_dir))
    assert rc == 2 and "request.model" in err and len(err.strip().splitlines()) == 1
    assert (run_dir / "report.html").read_bytes() == before


def test_cli_report_bad_schema_version(run_cli, small_run, tmp_path):
    run_dir = _copy(small_run, tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["schema_version"] = 7
    (run_dir / "plan.json").write_text(json.dumps(plan))
    before = (run_dir / "report.html").read_bytes()
    rc, out, err = run_cli("report", str(run_dir))
    assert rc == 2 and "Traceback" not in err
    assert err.strip().count("\n") == 0 and "plan.json" in err and "schema_version" in err
    assert (run_dir / "report.html").read_bytes() == before


def _bad(tmp_path: Path, edit) -> Path:
    run_dir = tmp_path / "bad"
    run_dir.mkdir()
    plan = make_plan_dict(S=50, J=4, history=5)
    edit(plan)
    (run_dir / "plan.json").write_text(json.dumps(plan))
    return run_dir


@pytest.mark.parametrize("edit, field", [
    (lambda p: p.pop("schema_version"), "schema_version"),
    (lambda p: p.update(schema_version=2), "schema_version"),
    (lambda p: p.update(schema_version="1"), "schema_version"),
    (lambda p: p["ranges"]["mid"].pop(), "ranges.mid"),
    (lambda p: p["per_length"]["eval_decode"].pop(), "per_length.eval_decode"),
    (lambda p: p["islands"][3].update(role="colocated"), "islands[3].role"),
    (lambda p: p["islands"][2]["shares"].append(0.0), "islands[2].shares"),
    (lambda p: p.pop("summary"), "summary"),
])
def test_bad_plan_json_is_one_line_error(tmp_path, edit, field):
    run_dir = _bad(tmp_path, edit)
    with pytest.raises(PlannerError) as err:
        render_report(run_dir)
    msg = str(err.value)
    assert "\n" not in msg and "plan.json" in msg and f"'{field}'" in msg, msg
    assert err.value.exit_code == 2
    assert [p.name for p in run_dir.iterdir()] == ["plan.json"]  # nothing written


def test_unreadable_plan_json(tmp_path):
    (tmp_path / "r").mkdir()
    with pytest.raises(PlannerError, match=r"plan\.json: not found"):
        render_report(tmp_path / "r")
    (tmp_path / "r" / "plan.json").write_text('{"schema_version": 1,')
    with pytest.raises(PlannerError, match=r"plan\.json: not valid JSON \(line 1"):
        render_report(tmp_path / "r")
    with pytest.raises(PlannerError, match="no such run folder"):
        render_report(tmp_path / "missing")


class _Interrupt:
    """Raise KeyboardInterrupt on the ``n``-th file write (Ctrl-C mid-way)."""

    def __init__(self, n: int) -> None:
        self.n, self.calls, self.real = n, 0, files._write_bytes

    def __call__(self, path, data) -> None:  # noqa: ANN001
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        self.real(path, data)


def test_interrupted_write_leaves_no_folder(tmp_path, monkeypatch):
    plan = make_plan_dict(S=300, J=8, history=12)
    stop = _Interrupt(6)
    monkeypatch.setattr(files, "_write_bytes", stop)
    with pytest.raises(KeyboardInterrupt):
        write_run(plan, tmp_path / "r")
    assert stop.calls == 6
    assert list(tmp_path.iterdir()) == []  # neither the folder nor a temporary one


def test_failed_render_leaves_no_folder(tmp_path, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(html, "render_html", boom)
    with pytest.raises(RuntimeError):
        write_run(make_plan_dict(S=300, J=8, history=12), tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_rewrite_keeps_the_old_folder(small_run, tmp_path, monkeypatch):
    run_dir = _copy(small_run, tmp_path)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    changed = make_plan_dict(S=300, J=8, history=12, seed=5)
    monkeypatch.setattr(files, "_write_bytes", _Interrupt(len(EXPECTED)))
    with pytest.raises(KeyboardInterrupt):
        write_run(changed, run_dir)
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_write_into_non_empty_folder_replaces_ours_keeps_others(tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine")
    (run_dir / "report.html").write_text("stale")
    write_run(make_plan_dict(S=300, J=8, history=12), run_dir)
    assert (run_dir / "notes.txt").read_text() == "mine"
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert {p.name for p in run_dir.iterdir()} == EXPECTED | {"notes.txt"}
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_run_dir_that_is_a_file(tmp_path):
    (tmp_path / "r").write_text("x")
    with pytest.raises(PlannerError, match="not a folder"):
        write_run(make_plan_dict(S=50, J=4, history=5), tmp_path / "r")


def test_degenerate_plan_still_renders(tmp_path):
    """One range, two lengths, no islands, no history, no comparisons: every file is
    still written and readable (e.g. a plan read back from a minimal plan.json)."""
    plan = make_plan_dict(S=2, J=1, history=1)
    plan["islands"] = []
    plan["summary"].update(best_homogeneous=None, exact=None, bo_gap=None,
                           gpus_used={}, cost_per_hour=0.0, requests_per_s=0.0)
    plan["baselines"] = {"homogeneous": [], "exact": None}
    plan["search"]["history"] = []
    plan["search"]["best_layout"] = None
    plan.pop("timings_s")
    written = write_run(plan, tmp_path / "r")
    assert {p.name for p in written} == EXPECTED
    assert len(_rows(tmp_path / "r" / "islands.csv")) == 0
    assert len(_rows(tmp_path / "r" / "ranges.csv")) == 1
    assert len(_rows(tmp_path / "r" / "baselines.csv")) == 1
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4 and "not computed" in page
