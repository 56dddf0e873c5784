"""The what-if report: whatif.html (answer first, study tables, Pareto front, plots,
caveats, terms; the plan report's page pieces), published with the other files; plots
that draw "$" as text and do not exaggerate; a Pareto front of comparable scenarios."""

from __future__ import annotations

import base64
import csv
import io
import re
from html import escape

import pytest
from matplotlib.lines import Line2D
from matplotlib.text import Text
from test_whatif_fixtures import SMALL_INVENTORY, fake_result

from planner.report.page import CSS
from planner.whatif import write_whatif
from planner.whatif.html import whatif_html
from planner.whatif.pareto import comparable, pareto_points
from planner.whatif.plots import _budget_figure, figures, pareto_figure, prices_figure
from planner.whatif.report import render
from planner.whatif.tables import GLOSSARY, STUDY_INTROS


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return fake_result(tmp_path_factory.mktemp("fake"))


@pytest.fixture(scope="module")
def beyond(tmp_path_factory):
    # marginal options beyond the inventory: labels with two "$" ("+16 $/h: ... $/h each")
    return fake_result(tmp_path_factory.mktemp("beyond"),
                       {"budget_sweep": [32, 64], "marginal": 16,
                        "marginal_beyond_inventory": True})


def test_html_leads_with_the_answer_then_tables_plots_caveats(result):
    page = whatif_html(result, figures(result))
    at = {h: page.index(h) for h in ('id="answer"', 'id="budget"', 'id="price"',
                                     'id="marginal"', 'id="pareto"', 'id="plots"',
                                     'id="caveats"', 'id="terms"')}
    assert list(at.values()) == sorted(at.values()), at
    answer = page[at['id="answer"']:at['id="budget"']]
    # the base plan, the marginal answer, the best scenario of every study
    assert "Base plan:" in answer and "32.00 requests/s for 32.00 $/h" in answer
    assert escape(result.marginal.sentence) in answer
    for title in ("Budget sweep", "Homogeneous vs heterogeneous at equal cost",
                  "Price sweep", "Removing a GPU type", "Workload mix"):
        assert re.search(re.escape(title) + "(</abbr>)?:</b>", answer), title
    assert "Most throughput: budget 64 $/h, mix (56.00 requests/s" in answer
    # each study says what it asks, in plain words
    for study in ("budget", "equal_cost", "price", "remove", "workload"):
        assert escape(STUDY_INTROS[study]) in page, study


def test_html_explains_terms_and_uses_the_shared_page(result):
    page = whatif_html(result, figures(result))
    assert CSS in page  # the plan report's style, not a fork
    for term in ("Pareto front", "marginal value", "equal cost"):
        assert re.search(r'<abbr title="[^"]+">', page)
        assert f"<dt>{term}</dt><dd>" in page, term
    assert f'<abbr title="{GLOSSARY["Pareto front"]}">Pareto front</abbr>' in page
    assert f'<abbr title="{GLOSSARY["marginal value"]}">Marginal value</abbr>' in page
    assert "Assumptions and caveats" in page and "inventory counts" in page
    assert "<script" not in page.lower()


def test_split_scenarios_under_a_ttft_ceiling_carry_the_published_ttft_gap(result):
    """The fixture's scenarios split prefill and decode: under a TTFT ceiling the
    caveats quote the held-out disaggregated TTFT gap, once; without one (the
    fixture's ``slo: none``) they do not."""
    from dataclasses import replace

    from planner.whatif.html import caveats

    assert not any("separate islands" in c for c in caveats(result))
    spec = replace(result.spec, slo=replace(result.spec.slo, ttft_ms=1500.0, tpot_ms=40.0))
    lines = [c for c in caveats(replace(result, spec=spec)) if "separate islands" in c]
    assert len(lines) == 1 and "1,500 ms" in lines[0]


def test_a_scenario_with_a_decode_wider_than_32_gpus_carries_the_wide_decode_caveat(result):
    """The fake runner's plans say nothing of their layouts: no caveat.  A scenario
    whose plan decodes on 48 expert-parallel GPUs: the caveat, once."""
    from dataclasses import replace

    from planner.whatif.html import caveats

    assert not any("wider than" in c for c in caveats(result))
    first = result.outcomes[0]
    wide = replace(first, configs=tuple("tp1-dp48-ep48" if r == "decode" else "tp8-dp1-ep8"
                                        for r in first.roles))
    lines = [c for c in caveats(replace(result, outcomes=[wide] + result.outcomes[1:]))
             if "wider than" in c]
    assert len(lines) == 1 and "in a scenario's plan spreads its experts over 48" in lines[0]


def test_an_outcome_keeps_its_layouts_through_a_saved_cell(result):
    from dataclasses import replace

    from planner.whatif.cells import outcome_cell, outcome_from_cell

    first = result.outcomes[0]
    out = replace(first, configs=tuple(f"tp1-dp{8 * (k + 1)}-ep8"
                                       for k in range(len(first.layout))))
    back = outcome_from_cell(first.scenario, outcome_cell(out), "cell.json")
    assert back.configs == out.configs
    assert [i["config"] for i in out.to_dict()["islands"]] == list(out.configs)
    old = {k: v for k, v in outcome_cell(out).items() if k != "configs"}  # an older cell
    assert outcome_from_cell(first.scenario, old, "cell.json").configs == ()
    assert all(i["config"] is None for i in first.to_dict()["islands"])


def test_html_escapes_what_the_spec_names(tmp_path):
    evil = dict(SMALL_INVENTORY, name="<b>evil</b> & co")
    res = fake_result(tmp_path, {"budget_sweep": [32]}, inventory=evil)
    page = whatif_html(res, {})
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt; &amp; co" in page


def test_html_published_with_the_other_files(result, tmp_path):
    files = render(result)
    names = list(files)
    assert {"whatif.md", "whatif.csv", "whatif.html"} <= set(names)
    assert names[-1] == "whatif.json"  # replaced last, as before
    written = {p.name for p in write_whatif(result, tmp_path / "study")}
    assert "whatif.html" in written
    page = (tmp_path / "study" / "whatif.html").read_text()
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    pngs = {n: b for n, b in files.items() if n.endswith(".png")}
    assert sorted(base64.b64decode(e) for e in embedded) == sorted(pngs.values())
    assert not list(tmp_path.glob(".study.tmp-*"))


def _texts(fig):
    fig.canvas.draw()  # tick labels and legend texts exist once drawn
    return [t for t in fig.findobj(Text) if "$" in t.get_text()]


def test_plot_labels_with_dollars_are_text_not_maths(beyond, result):
    figs = [pareto_figure(beyond), prices_figure(result),
            _budget_figure(beyond, lambda o: o.requests_per_s, "requests/s", "T"),
            _budget_figure(beyond, lambda o: o.usd_per_m_output_tokens, "$/M", "C")]
    texts = [t for fig in figs for t in _texts(fig)]
    assert any(t.get_text().count("$") >= 2 for t in texts)  # would be read as maths
    for t in texts:
        assert t._preprocess_math(t.get_text())[1] is False, t.get_text()


def test_prices_plot_markers_only_and_axis_from_zero(result):
    fig = prices_figure(result)
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0
    sampled = [ln for ln in ax.lines if "price changed" in str(ln.get_label())]
    assert sampled and all(ln.get_linestyle() == "None" and ln.get_marker() not in
                           (None, "None", "") for ln in sampled)
    n = sum(len(ln.get_xdata()) for ln in sampled)
    assert n == len(result.study("price"))
    assert all(isinstance(ln, Line2D) for ln in ax.lines)


def test_pareto_front_only_joins_comparable_scenarios(result):
    cheap = next(k for k, o in enumerate(result.outcomes)
                 if o.scenario.study == "price" and o.scenario.params["factor"] == 0.5)
    o = result.outcomes[cheap]
    # at half the H20 price it is cheaper than the mix at 64 $/h for the same
    # throughput: on one front it would push that scenario off, but its $/h is at
    # other prices
    mix64 = next(k for k, x in enumerate(result.outcomes) if x.scenario.study == "budget"
                 and x.scenario.budget == 64 and x.scenario.option == "mix")
    x = result.outcomes[mix64]
    assert o.cost_per_hour < x.cost_per_hour and o.requests_per_s >= x.requests_per_s
    assert mix64 in pareto_points(result)
    assert not comparable(result, o) and cheap not in pareto_points(result)
    assert not any(comparable(result, x) for x in result.study("workload"))
    assert all(comparable(result, x) for x in (*result.study("budget"),
                                               *result.study("remove"),
                                               *result.study("marginal")))
    front = set(pareto_points(result))
    assert front and all(comparable(result, result.outcomes[k]) for k in front)
    table = list(csv.DictReader(io.StringIO(render(result)["whatif.csv"].decode())))
    assert table[cheap]["pareto"] == "False"
    # the figure draws only the comparable points and says so
    fig = pareto_figure(result)
    ax = fig.axes[0]
    drawn = {tuple(p) for c in ax.collections for p in c.get_offsets()}
    assert (o.cost_per_hour, o.requests_per_s) not in drawn
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "base prices and workload only" in legend
    notes = " ".join(t.get_text() for t in ax.texts)
    assert "2 price-sweep, 1 workload" in notes


def test_a_budget_scenario_on_free_gpus_is_named_not_divided_by_zero(tmp_path):
    """An inventory may price GPUs it already owns at 0 $/h; a budget scenario using
    only those costs nothing, and the highlight says so (found by scripts/fuzz_cli.py:
    a ZeroDivisionError while writing the study)."""
    from dataclasses import replace

    from planner.whatif.tables import highlights

    result = fake_result(tmp_path, {"budget_sweep": [32, 64]})
    k = next(i for i, o in enumerate(result.outcomes)
             if o.scenario.study == "budget" and o.requests_per_s > 0)
    result.outcomes[k] = replace(result.outcomes[k], cost_per_hour=0.0)
    text = dict(highlights(result))["Budget sweep"]
    assert "at no cost" in text and "per $/h" not in text
    assert whatif_html(result, {})  # the page renders
