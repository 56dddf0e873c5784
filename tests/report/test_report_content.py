"""What the report says: terminal summary, headline facts, tables and the data drawn in
each figure, checked against the plan dict they come from."""

from __future__ import annotations

import math
from html import escape as html_escape

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from report_fixtures import make_plan_dict

from planner.report import plots, sections, summary_plain
from planner.report.facts import fmt, headline, layout_label, pct
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
    assert text.count("prefill") >= 6 and text.count("decode") >= 3


def test_headline_without_comparisons_and_in_target_mode():
    plan = make_plan_dict(S=200, J=8, history=10, target=True)
    plan["summary"]["best_homogeneous"] = None
    plan["summary"]["exact"] = None
    plan["summary"]["bo_gap"] = None
    lines = dict(headline(plan))
    assert lines["vs. one GPU type"].startswith("not computed")
    assert lines["Search quality"].endswith("; exact optimum not computed")
    rate = plan["summary"]["requests_per_s"]
    assert lines["Target"] == f"100 requests/s — {'met' if rate >= 100 else 'NOT met'}"
    assert "budget" not in lines["Buy / rent"]
    plan["summary"]["requests_per_s"] = 99.0
    assert dict(headline(plan))["Target"].endswith("NOT met")


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


def test_layout_figure_bars(plan):
    fig = plots.layout_figure(plan)
    ax = fig.axes[0]
    bars = [p for p in ax.patches]
    assert len(bars) == len(plan["islands"])
    colors = plots.gpu_colors(plan)
    widths = sorted(b.get_width() for b in bars)
    assert widths == sorted(float(i["size"]) for i in plan["islands"])
    label_at = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    for bar in bars:
        label = label_at[round(bar.get_y() + bar.get_height() / 2)]
        k = int(label.split()[0][1:])  # "#3 H800×16"
        isl = plan["islands"][k]
        assert bar.get_width() == isl["size"]
        assert bar.get_hatch() == plots._HATCH[isl["role"]]
        rgb = to_rgba(colors[isl["gpu"]])[:3]
        assert np.allclose(bar.get_facecolor()[:3], rgb)


def test_assignment_figure_is_the_share_matrix(plan):
    fig = plots.assignment_figure(plan)
    images = [im for ax in fig.axes for im in ax.images]
    assert len(images) == 2
    for im, role in zip(images, ("prefill", "decode"), strict=True):
        want = np.array([i["shares"] for i in plan["islands"] if i["role"] == role])
        assert np.array_equal(np.asarray(im.get_array()), want)
    bars = fig.axes[0].patches
    assert [b.get_height() for b in bars] == plan["ranges"]["prob"]


def test_per_length_figure_downsamples_large_s(plan):
    fig = plots.per_length_figure(plan)
    for ax in fig.axes[:2]:
        lines = {ln.get_label(): ln for ln in ax.lines if not ln.get_label().startswith("_")}
        assert set(lines) == {"workload demand p(s)·T", "model (solver, per range)",
                              "evaluated (per length)"}
        n = len(lines["model (solver, per range)"].get_xdata())
        assert 300 < n <= 800
    # the binned demand keeps the mean demand of the lengths it covers
    demand = fig.axes[0].lines[-3].get_ydata()
    x = fig.axes[0].lines[-3].get_xdata()
    width = round(x[1] - x[0])
    pmf = np.array(plan["per_length"]["pmf"]) * plan["summary"]["requests_per_s"]
    assert demand[5] == pytest.approx(pmf[5 * width:6 * width].mean())


def test_per_length_figure_small_s_is_exact():
    plan = make_plan_dict(S=300, J=8, history=5)
    fig = plots.per_length_figure(plan)
    ev = [ln for ln in fig.axes[1].lines if ln.get_label() == "evaluated (per length)"][0]
    n = len(ev.get_ydata())
    assert np.array_equal(ev.get_ydata(), plan["per_length"]["eval_decode"][:n])


def test_markdown_and_html_agree_on_the_numbers(plan):
    md = render_markdown(plan)
    page = render_html(plan, {name: b"png" for name in plots.FIGURES})
    for label, text in headline(plan):
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
