"""What the report says: terminal summary, headline facts, tables and the data drawn in
each figure, checked against the plan dict they come from."""

from __future__ import annotations

import math
from html import escape as html_escape

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from report_fixtures import make_plan_dict

from planner.report import answer, plots, sections, summary_plain
from planner.report.facts import fmt, layout_label, pct, search_quality
from planner.report.html import render_html
from planner.report.markdown import render_markdown


@pytest.fixture(scope="module")
def plan() -> dict:
    return make_plan_dict()


def test_terminal_summary_states_the_answer(plan):
    text = summary_plain(plan, width=160)
    s = plan["summary"]
    for gpu, n in s["gpus_used"].items():
        assert f"{n} × {gpu}" in text
    assert "$512.00/h" in text  # 64×4 + 64×2 + 128×1
    assert f"{fmt(s['requests_per_s'])} requests/s" in text
    assert f"{fmt(s['tokens_per_s'])} tokens/s" in text
    assert f"${s['usd_per_million_tokens']:.2f} per million tokens" in text
    assert f"{fmt(s['requests_per_s'] / 81.2)}×" in text and "H200 only" in text
    assert f"{pct(s['bo_gap'], 2)} below" in text
    for isl in plan["islands"]:
        if isl["role"] != "idle":
            assert isl["config"] in text
    groups = answer.island_groups(plan)[1]  # identical islands share one row
    assert len(groups) < len(plan["islands"])
    for row in groups:
        assert row[0] in text
    assert text.count("prefill") >= sum(r[1] == "prefill" for r in groups)


def test_answer_without_comparisons_and_in_target_mode():
    plan = make_plan_dict(S=200, J=8, history=10, target=True)
    plan["summary"]["best_homogeneous"] = None
    plan["summary"]["exact"] = None
    plan["summary"]["bo_gap"] = None
    lines = dict(answer.answer(plan))
    assert "Instead of one GPU type" not in lines  # nothing to compare with
    assert search_quality(plan).endswith(": The exact optimum was not computed.")
    rate = plan["summary"]["requests_per_s"]
    # without the closed loop the report says the verdict is the perf model's
    assert lines["Target"] == (f"100 requests/s: {'met' if rate >= 100 else 'NOT met'} "
                               "on the perf model (not simulated)")
    # with it, the target's own simulation is the verdict
    plan["summary"]["closed_loop"] = {"target_attainment": 0.9962, "router": "range"}
    assert dict(answer.answer(plan))["Target"].startswith(
        "100 requests/s: met -- 99.6% of requests meet the SLO at the target rate")
    assert "budget" not in lines["It costs"]
    del plan["summary"]["closed_loop"]
    plan["summary"]["requests_per_s"] = 99.0
    assert dict(answer.answer(plan))["Target"].startswith("100 requests/s: NOT met")


def test_layout_label_groups_islands_by_type():
    assert layout_label([["H20", 8], ["H200", 16], ["H20", 32]]) == "H20: 32+8; H200: 16"
    assert layout_label([]) == "—" and layout_label(None, "") == ""
    assert layout_label([["H20", 2]] * 5 + [["H20", 4]]) == "H20: 4+2x5"
    assert layout_label("H20:2*5+4;H200:16") == "H20: 4+2x5; H200: 16"


def test_history_layout_text_round_trips():
    from planner.outer.protocol import layout_text, parse_layout_text

    lay = (("H20", 2), ("H20", 2), ("H20", 8), ("H200", 32), ("L40S:x", 1))
    text = layout_text(lay)
    assert text == "H20:2*2+8;H200:32;L40S:x:1"
    assert parse_layout_text(text) == lay
    with pytest.raises(ValueError):
        parse_layout_text("H20=2")


def test_islands_table_lengths_served(plan):
    header, rows = sections.islands_table(plan)
    assert len(rows) == len(plan["islands"])
    k = 2  # first prefill island serves the first block of ranges
    shares = np.array(plan["islands"][k]["shares"])
    used = np.flatnonzero(shares > 0)
    lo, hi = plan["ranges"]["start"][used[0]], plan["ranges"]["end"][used[-1]]
    assert rows[k][header.index("input lengths served")] == f"{lo:,}–{hi:,}"
    assert rows[9][header.index("role")] == "idle"
    assert rows[9][header.index("input lengths served")] == "—"


def test_prices_table_provenance(plan):
    p = make_plan_dict(S=100, J=4, history=3)
    p["request"]["inventory"]["gpus"][0]["price_source"] = "vendor quote"
    p["request"]["inventory"]["gpus"][0]["price_date"] = "2026-05"
    _, rows = sections.prices_table(p)
    assert rows[0][-1] == "vendor quote (2026-05)"
    assert rows[1][-1] == plan["request"]["inventory"]["source"]


def test_convergence_figure_data(plan):
    fig = plots.convergence_figure(plan)
    ax_i, ax_t = fig.axes[:2]
    best = [h["best"] for h in plan["search"]["history"]]
    step = [ln for ln in ax_i.lines if ln.get_label() == "best so far"][0]
    assert list(step.get_ydata()) == best
    assert list(step.get_xdata()) == list(range(60))
    exact = [ln for ln in ax_i.lines if ln.get_label().startswith("exact optimum")][0]
    assert exact.get_ydata()[0] == plan["summary"]["exact"]["requests_per_s"]
    walls = [ln for ln in ax_t.lines if ln.get_label() == "best so far"][0].get_xdata()
    assert list(walls) == [h["wall_time"] for h in plan["search"]["history"]]


def test_convergence_figure_target_mode_and_no_exact():
    plan = make_plan_dict(S=100, J=4, history=20, target=True)
    fig = plots.convergence_figure(plan)
    exact = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("exact optimum")][0]
    assert exact.get_ydata()[0] == plan["baselines"]["exact"]["cost_per_hour"]
    assert "$/h" in fig.axes[0].get_ylabel()
    plan["baselines"]["exact"] = None
    plan["summary"]["exact"] = None
    fig = plots.convergence_figure(plan)
    assert not [ln for ln in fig.axes[0].lines if ln.get_label().startswith("exact")]
    plan["search"]["history"] = []
    fig = plots.convergence_figure(plan)
    assert "no search history" in fig.axes[0].texts[0].get_text()


def test_layout_figure_groups_identical_islands(plan):
    fig = plots.layout_figure(plan)
    ax = fig.axes[0]
    bars = list(ax.patches)
    groups = plots.island_groups(plan)
    assert len(bars) == len(groups) < len(plan["islands"])  # the fixture repeats islands
    assert sum(k for _isl, k in groups) == len(plan["islands"])
    assert sum(b.get_width() for b in bars) == sum(i["size"] for i in plan["islands"])
    colors = plots.gpu_colors(plan)
    label_at = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    for bar in bars:
        label = label_at[round(bar.get_y() + bar.get_height() / 2)]  # "3 × 16 H800"
        k, _x, size, gpu = label.split()
        members = [i for i in plan["islands"] if i["gpu"] == gpu and i["size"] == int(size)
                   and plots._HATCH[i["role"]] == bar.get_hatch()]
        assert len(members) >= int(k)
        assert bar.get_width() == int(k) * int(size)
        assert np.allclose(bar.get_facecolor()[:3], to_rgba(colors[gpu])[:3])


def test_layout_figure_stays_one_bar_per_kind_for_hundreds_of_islands():
    plan = make_plan_dict(S=100, J=4, history=3)
    one = dict(plan["islands"][0])
    plan["islands"] = [dict(one) for _ in range(62)]
    fig = plots.layout_figure(plan)
    assert len(fig.axes[0].patches) == 1
    assert fig.axes[0].get_yticklabels()[0].get_text() == f"62 × {one['size']} {one['gpu']}"
    rows = answer.island_groups(plan)[1]
    assert len(rows) == 1 and rows[0][0] == f"62 × {one['size']} {one['gpu']}"


def test_assignment_figure_is_the_share_matrix(plan):
    fig = plots.assignment_figure(plan)
    images = [im for ax in fig.axes for im in ax.images]
    assert len(images) == 2
    for im, role in zip(images, ("prefill", "decode"), strict=True):
        want = np.array([i["shares"] for i in plan["islands"] if i["role"] == role])
        assert np.array_equal(np.asarray(im.get_array()), want)
    bars = fig.axes[0].patches
    assert [b.get_height() for b in bars] == plan["ranges"]["prob"]


def test_range_headroom_reads_one_where_the_plan_is_full(plan):
    share, ratio = plots.range_headroom(plan)
    assert 0.9 < share.sum() <= 1.0 + 1e-9  # lengths outside every range carry none
    finite = np.concatenate([v[np.isfinite(v)] for v in ratio.values()])
    assert finite.min() == pytest.approx(1.0) and (finite >= 1.0 - 1e-12).all()
    # a uniform rescaling of the plan's rates (the closed loop's) changes nothing
    scaled = dict(plan, per_length={k: (list(np.array(v) * 0.8) if k.startswith("eval")
                                        else v) for k, v in plan["per_length"].items()})
    for phase, r in plots.range_headroom(scaled)[1].items():
        assert np.allclose(r, ratio[phase], equal_nan=True)


def test_per_range_figure_draws_every_range(plan):
    fig = plots.per_length_figure(plan)
    J = len(plan["ranges"]["prob"])
    share, ratio = plots.range_headroom(plan)
    assert [b.get_height() for b in fig.axes[0].patches] == pytest.approx(list(100 * share))
    for ax, phase in zip(fig.axes[1:3], ("prefill", "decode"), strict=True):
        ok = np.isfinite(ratio[phase])
        spare = [b.get_height() for b in ax.patches][int(ok.sum()):]
        assert spare == pytest.approx(list(np.clip(ratio[phase][ok] - 1.0, 0, None)))
    assert len(fig.axes[2].get_xticklabels()) == J


def test_markdown_and_html_agree_on_the_numbers(plan):
    md = render_markdown(plan)
    page = render_html(plan, {name: b"png" for name in plots.FIGURES})
    for label, text in answer.answer(plan):
        assert f"**{label}:** {text}" in md
        assert f"<b>{html_escape(label)}:</b> {html_escape(text)}" in page
    for figure in (fmt(plan["summary"]["requests_per_s"]), "$512.00/h", "tp2-dp8-ep16",
                   "thesis Table 5.1 prices (2025)"):
        assert figure in md and figure in page


def test_html_escapes_everything_from_the_plan():
    plan = make_plan_dict(S=100, J=4, history=3)
    plan["request"]["workload"] = '<img src="http://evil/x.png">'
    plan["request"]["inventory"]["source"] = "<script>alert(1)</script>"
    page = render_html(plan, {name: b"png" for name in plots.FIGURES})
    assert "<script" not in page and 'src="http://evil' not in page
    assert "&lt;script&gt;" in page and "&lt;img src=&quot;http://evil/x.png&quot;&gt;" in page


def test_missing_numbers_print_as_dash():
    plan = make_plan_dict(S=100, J=4, history=3)
    plan["summary"]["usd_per_million_tokens"] = None
    plan["summary"]["tokens_per_s"] = math.nan
    _, rows = sections.throughput_table(plan)
    values = dict(rows)
    assert values["$ per million tokens"] == "—" and values["tokens/s"] == "—"


def test_alternatives_are_shown_by_the_same_promise():
    """Closed-loop alternatives replace the analytic single-type baselines: their rate
    is the one at which the SLO held, one that serves nothing costs nothing and says
    why, availability caps are stated, and the comparison uses the closed figures."""
    plan = make_plan_dict(S=200, J=8, history=10)
    s = plan["summary"]
    mine = float(s["requests_per_s"])
    s["closed_loop"] = {"router": "range", "seeds": [0, 1007, 2007, 3007],
                        "slo_attainment_by_seed": [0.997, 0.996, 0.998, 0.995],
                        "saturation_requests_per_s": mine * 1.1,
                        "reference_router": "jsq", "reference_router_attainment": 0.5,
                        "analytic_requests_per_s": mine * 1.2}
    s["alternatives"] = [
        {"label": "64 x H200 only", "gpu": "H200", "available": 64,
         "capped_by_availability": True, "requests_per_s": mine / 4, "cost_per_hour": 256.0,
         "requests_per_s_per_dollar": mine / 4 / 256.0, "layout": [["H200", 8]],
         "status": "holds the SLO", "why": None},
        {"label": "128 x H20 only", "gpu": "H20", "available": 128,
         "capped_by_availability": False, "requests_per_s": 0.0, "cost_per_hour": 0.0,
         "layout": [], "status": "serves nothing", "why": "no island serves 14,050 tokens"}]
    header, rows = sections.baselines_table(plan)
    by = {r[0]: r for r in rows}
    assert "requests/s per $/h" in header
    assert by["64 x H200 only"][2] == fmt(mine / 4)
    assert by["64 x H200 only"][5] == "holds the SLO (all 64 available)"
    assert by["64 x H200 only"][6] == fmt(4.0)
    assert by["128 x H20 only"][3] == "$0.00/h"
    assert by["128 x H20 only"][5] == "serves nothing: no island serves 14,050 tokens"
    assert not any(r[0].startswith("H200 only") for r in rows)  # the analytic baseline
    lines = dict(answer.answer(plan))
    assert lines["Instead of one GPU type"].startswith(f"{fmt(4.0)}× the requests/s")
    assert "all that is available" in lines["Instead of one GPU type"]
    assert "99.5% of requests meet the SLO at this rate (the lowest of 4 seeds" \
        in lines["How sure"] and "under the 'jsq' router 50.0%" in lines["How sure"]
    s["answer_from"] = {"label": "64 x H200 only", "why": "it beats the search's plan"}
    assert dict(answer.answer(plan))["Why this plan"] == "it beats the search's plan"
