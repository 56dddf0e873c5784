"""The report leads with the answer a buyer needs, explains its terms, states its
assumptions, and labels where each price comes from."""

from __future__ import annotations

import pytest
from report_fixtures import make_plan_dict

from perfmodel.validation import shipped_summary
from planner.fleet.inventory import inventory_from_dict
from planner.report import answer, plots, sections
from planner.report.facts import fmt, pct
from planner.report.html import render_html
from planner.report.markdown import render_markdown


@pytest.fixture(scope="module")
def plan() -> dict:
    return make_plan_dict(S=200, J=8, history=5)


def test_answer_states_purchase_cost_capacity_latency_and_confidence(plan):
    lines = dict(answer.answer(plan))
    assert list(lines)[:3] == ["Buy or rent", "It costs", "Capacity to budget against"]
    s = plan["summary"]
    for gpu, n in s["gpus_used"].items():
        assert f"{n} × {gpu}" in lines["Buy or rent"]
    assert f"{fmt(s['requests_per_s'])} requests/s at the SLO" in \
        lines["Capacity to budget against"]
    v = shipped_summary()
    assert f"median error of {pct(v['median_abs'], 0)}" in lines["How sure"]
    assert "H200" in lines["How sure"].split("on this plan's GPUs:")[1]


def test_capacity_line_carries_the_predicted_latency(plan):
    p = dict(plan, summary=dict(plan["summary"], latency_ms={
        "ttft_p50": 210.0, "ttft_p90": 480.0, "tpot_p50": 31.0, "tpot_p90": 44.0}))
    line = dict(answer.answer(p))["Capacity to budget against"]
    assert "TTFT p50 210 ms, p90 480 ms" in line and "TPOT p50 31.0 ms, p90 44.0 ms" in line


def test_caveats_follow_the_plan(plan):
    base = answer.caveats(plan)
    assert any(plan["request"]["workload"] in c for c in base)
    unchecked = dict(plan, summary={k: v for k, v in plan["summary"].items()
                                    if k != "closed_loop"})
    assert answer.caveats(unchecked)[0].startswith("The capacity was NOT checked")


def test_a_split_plan_with_a_ttft_ceiling_quotes_the_published_ttft_gap(plan):
    """Prefill or decode islands under a TTFT ceiling: the caveats quote the held-out
    disaggregated rows' TTFT gap as shipped; an all-colocated plan or one without a TTFT
    ceiling does not."""
    gap = shipped_summary()["disaggregated_ttft_gap"]
    assert gap["rows"] >= 9 and gap["q1_s"] <= gap["median_s"] <= gap["q3_s"]
    split = dict(plan, islands=[dict(i, role="prefill") for i in plan["islands"][:1]]
                 + [dict(i, role="decode") for i in plan["islands"][1:]],
                 request=dict(plan["request"], slo={"ttft_ms": 1500.0, "tpot_ms": 40.0}))
    line = [c for c in answer.caveats(split) if "separate islands" in c]
    assert len(line) == 1
    assert f"median {gap['median_s']:.1f} s" in line[0] and "1,500 ms" in line[0]
    assert f"On {gap['rows']} published" in line[0]
    colocated = dict(split, islands=[dict(i, role="colocated") for i in plan["islands"]])
    no_ttft = dict(split, request=dict(split["request"], slo={"tpot_ms": 40.0}))
    for p in (colocated, no_ttft):
        assert not any("separate islands" in c for c in answer.caveats(p))


def test_a_decode_wider_than_32_gpus_quotes_the_published_wide_decodes(plan):
    """A decoding island with more than 32 expert-parallel GPUs: the caveats quote the
    published rows of such decodes as shipped; 32 GPUs, or a wide prefill island, do
    not."""
    wide = shipped_summary()["wide_ep_decode"]
    assert wide["rows"] >= 6 and wide["min_signed"] <= wide["median_signed"] \
        <= wide["max_signed"]

    def with_decode(config: str, role: str = "decode") -> dict:
        isl = dict(plan["islands"][0], role=role, config=config, size=48)
        return dict(plan, islands=[isl] + plan["islands"][1:])

    line = [c for c in answer.caveats(with_decode("tp1-dp48-ep48")) if "wider than" in c]
    assert len(line) == 1
    assert "over 48 GPUs" in line[0] and f"On the {wide['rows']} published" in line[0]
    assert f"median {100 * wide['median_signed']:+.0f} %" in line[0]
    assert "--plan-at p10" in line[0]
    for p in (with_decode("tp1-dp32-ep32"), with_decode("tp1-dp48-ep48", "prefill"),
              with_decode("tp8-dp6-ep1")):
        assert not any("wider than" in c for c in answer.caveats(p))
    assert any("wider than" in c for c in answer.caveats(with_decode("tp1-dp64-ep64",
                                                                        "both")))


def test_every_glossary_term_is_explained_in_both_renderers(plan):
    md = render_markdown(plan)
    page = render_html(plan, {name: b"png" for name in plots.FIGURES})
    for term, text in answer.GLOSSARY.items():
        assert f"**{term}**: {text}" in md
    assert page.count("<abbr title=") >= 10  # table headers and the islands paragraph
    assert page.index("Assumptions and caveats") < page.index("Appendix")
    assert page.index('id="answer"') < page.index('id="search"') if 'id="search"' in page \
        else True


def test_price_source_distinguishes_catalog_inventory_and_datasheet():
    inv = inventory_from_dict({"name": "t", "source": "our quote", "gpus": [
        {"type": "H200", "count": 8},  # catalog price
        {"type": "H20", "count": 8, "price_per_hour": 1.0},  # inventory's price
        {"type": "MyAccel", "count": 8, "price_per_hour": 3.0, "datasheet": {
            "fp16_tflops": 400, "fp8_tflops": 800, "hbm_gb": 96, "hbm_gbps": 3000,
            "scaleup_gbps": 400, "scaleout_gbps": 50, "gpus_per_domain": 8, "sms": 100}},
    ]}, "t.yaml")
    d = inv.to_dict()
    assert [g["price_origin"] for g in d["gpus"]] == ["catalog", "inventory", "datasheet"]
    assert "datasheet" not in d["gpus"][0] and "datasheet" not in d["gpus"][1]
    assert "datasheet" in d["gpus"][2]
    again = inventory_from_dict(d, "plan.json")  # plan.json's copy reads back the same
    assert [e.price_origin for e in again.entries] == ["catalog", "inventory", "datasheet"]
    plan = make_plan_dict(S=100, J=4, history=3)
    plan["request"]["inventory"] = d
    rows = {r[0]: r for r in sections.prices_table(plan)[1]}
    assert rows["H200"][-2] == "catalog" and rows["H20"][-2] == "inventory"
    assert rows["MyAccel"][-2] == "inventory (GPU from its datasheet)"
    assert "our quote" in rows["H20"][-1] and "our quote" not in rows["H200"][-1]
