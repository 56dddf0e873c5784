"""The fleet report: the fleet's answer first, then a section per service.

Pure: fleet.json's dict in, Markdown or HTML text out.  Both are rendered from one list
of blocks, so the two say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from planner.report.markdown import md_table
from planner.report.page import Table, html_table, page

Block = tuple[str, Any]  # ("h2" | "p" | "ul" | "table", content)


def _rate(x: Any) -> str:
    return "—" if x is None else f"{float(x):,.1f}"


def _money(x: Any) -> str:
    return "—" if x is None else f"${float(x):,.2f}/h"


def _pct(x: Any) -> str:
    return "—" if x is None else f"{100 * float(x):+.1f} %"


def _gpus(g: Mapping[str, int]) -> str:
    return ", ".join(f"{n} × {t}" for t, n in g.items()) or "none"


def _answer(f: Mapping[str, Any]) -> list[Block]:
    s, req = f["summary"], f["request"]
    band = s.get("capacity_band")
    items = []
    if s["mode"] == "shares":
        text = (f"**{_rate(s['lambda_requests_per_s'])} requests/s** across the fleet (λ): "
                "every service gets λ × its share with its own SLO holding for 99 % of "
                "requests, simulated on seeds the planner never used")
        if band:
            text += f" (p10–p90 {_rate(band['p10'])}–{_rate(band.get('p90'))})"
        items.append(text)
        items.append(f"Cost: **{_money(s['cost_per_hour'])}** of the "
                     f"{_money(req['budget'])} budget")
    else:
        items.append("Every service's target holds at its SLO in simulation"
                     if s["targets_met"] else "Not every target holds")
        items.append(f"Cost: **{_money(s['cost_per_hour'])}**, the cheapest fleet found "
                     "that meets every target")
    items.append(f"GPUs: {_gpus(s['gpus_used'])}")
    if s["answer_kind"] == "joint":
        src = s.get("answer_sources") or {}
        items.append("This answer is the joint choice: every service's islands are the "
                     "best-fitting of those the rounds measured in simulation (the joint "
                     "MILP's and the best split's), chosen together within the inventory "
                     "and budget: " + "; ".join(f"{n} from {r}" for n, r in src.items()))
    else:
        items.append(f"This answer is the {s['answer_from']} of the best independent split "
                     "(each service planned alone on a split of the budget), which beat "
                     "the joint choice by the same promise")
    return [("h2", "The answer"), ("ul", items)]


def _buy(f: Mapping[str, Any]) -> list[Block]:
    s = f["summary"]
    rows = [[t, str(s["gpus_used"].get(t, 0)), str(s["gpus_available"].get(t, 0)),
             f"{s['prices'].get(t, 0):,.2f}",
             f"{s['gpus_used'].get(t, 0) * s['prices'].get(t, 0):,.2f}"]
            for t in s["gpus_available"]]
    return [("h2", "What to buy"),
            ("table", (["GPU", "used", "available", "$/GPU-h", "$/h"], rows))]


def _services(f: Mapping[str, Any]) -> list[Block]:
    shares = f["summary"]["mode"] == "shares"
    head = ["service", "model", "workload", "engine", "TTFT / TPOT ms",
            "share" if shares else "target req/s", "promised req/s",
            "its own headline req/s", "perf model req/s", "$/h", "GPUs",
            "lowest SLO attainment at the promise"]
    rows = []
    for s in f["services"]:
        att = [c["attainment"] for c in s["slo_attainment_at_promise"]
               if c.get("attainment") is not None]
        rows.append([s["name"], s["model"], s["workload"], str(s["engine"]),
                     f"{s['slo']['ttft_ms']:g} / {s['slo']['tpot_ms']:g}",
                     f"{s['share']:g}" if shares else _rate(s["target_rps"]),
                     _rate(s["requests_per_s"]), _rate(s["headline_requests_per_s"]),
                     _rate(s["analytic_requests_per_s"]), f"{s['cost_per_hour']:,.2f}",
                     _gpus(s["gpus"]),
                     f"{100 * min(att):.1f} % ({len(att)} seeds)" if att else "—"])
    return [("h2", "Services"),
            ("p", "Promised: the rate the fleet answer gives the service.  Its own "
                  "headline: the highest rate at which its SLO holds on its islands "
                  "(above the promise where the service has slack)."),
            ("table", (head, rows))]


def _comparison(f: Mapping[str, Any]) -> list[Block]:
    c = f["comparison"]
    shares = f["summary"]["mode"] == "shares"
    rows = []
    for key, label in (("joint", "joint choice of measured islands"),
                       ("joint_milp", "joint search (best round)"),
                       ("split", "best split")):
        r = c.get(key)
        if r is None:
            rows.append([label, "—", "—", "—", "none found"])
            continue
        rows.append([label, _rate(r["lambda_rps"]) if shares else "—",
                     _rate(r.get("milp_lambda_rps")) if shares else "—",
                     f"{r['cost_per_hour']:,.2f}", r["label"]])
    what = "λ" if shares else "cost saved"
    text = (f"Margin over the best split by the promise ({what}): the joint choice "
            f"{_pct(c.get('margin'))}, the joint search's best round alone "
            f"{_pct(c.get('milp_round_margin'))}")
    search = f["request"].get("search", "exact")
    if shares and search == "exact":
        text += (f"; on the perf model (the first round's MILPs): "
                 f"{_pct(c.get('milp_margin'))}.  Every split is a feasible point of the "
                 "joint MILP, so on the perf model the joint figure is at least the "
                 "split's; in simulation the perf model's blind spots (queueing at the "
                 "SLO's edge) move every candidate, so the joint choice picks among the "
                 "islands the rounds measured -- the split's among them")
    elif shares:
        text += (f"; on the perf model (the first rounds): {_pct(c.get('milp_margin'))}.  "
                 f"The joint layouts came from --search {search}, which is not exact: "
                 "its figure can fall below the split's even on the perf model; the joint "
                 "choice picks among the islands every round measured")
    rounds = [[r["label"], _rate(r["lambda_rps"]) if shares else "—",
               _rate(r.get("milp_lambda_rps")) if shares else "—",
               f"{r['cost_per_hour']:,.2f}",
               ", ".join(f"{n} {v:,.1f}" for n, v in r["service_headline_rps"].items())]
              for r in f["rounds"]]
    return [("h2", "Joint plan against the best independent split"),
            ("table", (["fleet", "λ held, req/s", "λ on the perf model, req/s", "$/h",
                        "round"], rows)),
            ("p", text + "."),
            ("h3", "Every round"),
            ("table", (["round", "λ held", "λ on the perf model", "$/h",
                        "each service's own headline, req/s"], rounds))]


def _service_section(s: Mapping[str, Any]) -> list[Block]:
    return [("h2", f"Service {s['name']}"),
            ("ul", [f"{s['model']} on {s['workload']}, engine {s['engine']}, SLO TTFT "
                    f"{s['slo']['ttft_ms']:g} ms and TPOT {s['slo']['tpot_ms']:g} ms",
                    f"Promised {_rate(s['requests_per_s'])} requests/s on {s['islands']} "
                    f"islands ({_gpus(s['gpus'])}, {_money(s['cost_per_hour'])})",
                    f"Its own run folder, with islands, ranges, plots and launch files: "
                    f"`{s['folder']}/` (report: `{s['folder']}/report.md`)"])]


def blocks(f: Mapping[str, Any]) -> list[Block]:
    out = _answer(f) + _buy(f) + _services(f) + _comparison(f)
    for s in f["services"]:
        out += _service_section(s)
    return out


def _title(f: Mapping[str, Any]) -> tuple[str, str]:
    req = f["request"]
    inv = req["inventory"].get("name", "inventory")
    money = f"${req['budget']:,.0f}/h" if req.get("budget") else "targets"
    return (f"Fleet plan: {f['fleet']['name']}",
            f"{len(f['services'])} services on {inv}, {money}, router {req['router']}, "
            f"seed {req['seed']}")


def render_fleet_markdown(f: Mapping[str, Any]) -> str:
    return _render_md(*_title(f), blocks(f))


def _render_md(title: str, sub: str, body: list[Block]) -> str:
    lines = [f"# {title}", "", sub, ""]
    for kind, content in body:
        if kind in ("h2", "h3"):
            lines += [("## " if kind == "h2" else "### ") + content, ""]
        elif kind == "p":
            lines += [content, ""]
        elif kind == "ul":
            lines += [f"- {item}" for item in content] + [""]
        else:
            lines += [md_table(content), ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    """Markdown's **bold** and `code` as HTML, the rest escaped."""
    out, bold, code = [], False, False
    for part in text.replace("`", "\0`\0").split("\0"):
        if part == "`":
            out.append("</code>" if code else "<code>")
            code = not code
            continue
        pieces = part.split("**")
        for i, piece in enumerate(pieces):
            if i:
                out.append("</b>" if bold else "<b>")
                bold = not bold
            out.append(escape(piece))
    return "".join(out)


def render_fleet_html(f: Mapping[str, Any]) -> str:
    return _render_html(*_title(f), blocks(f))


def _render_html(title: str, sub: str, content_blocks: list[Block]) -> str:
    body = []
    for kind, content in content_blocks:
        if kind in ("h2", "h3"):
            body.append(f"<{kind}>{escape(content)}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{_inline(content)}</p>")
        elif kind == "ul":
            body.append('<ul class="answer">' + "".join(f"<li>{_inline(i)}</li>"
                                                       for i in content) + "</ul>")
        else:
            table: Table = content
            body.append(html_table(table))
    return page(title, sub, body)


def study_blocks(st: Mapping[str, Any]) -> list[Block]:
    """A fleet what-if study (planner.services.whatif.study_dict) as blocks."""
    targets = st["budget"] is None
    head = ["scenario", "$/h budget", "cost ($/h used)" if targets else "fleet λ, req/s",
            "vs base", "$/h used", "GPUs", "per service, req/s", "answer from"]
    rows = []
    for r in st["scenarios"]:
        if r.get("error"):
            rows.append([r["scenario"], _rate(r["budget"]), "no plan", "—", "—", "—", "—",
                         r["error"][:120]])
            continue
        main = f"{r['cost_per_hour']:,.2f}" if targets else _rate(r["lambda_rps"])
        vs = "—" if r.get("vs_base") is None else f"{r['vs_base']:.3f}"
        rows.append([r["scenario"], "—" if r["budget"] is None else f"{r['budget']:,.0f}",
                     main, vs, f"{r['cost_per_hour']:,.2f}", _gpus(r["gpus"]),
                     ", ".join(f"{n} {v:,.1f}" for n, v in r["service_rps"].items()),
                     str(r.get("answer_from", ""))])
    out: list[Block] = [
        ("h2", "Scenarios"),
        ("p", "Every scenario is planned as `planner plan --fleet` plans it (the joint "
              "MILP, the best split, every service through the closed loop): its figure "
              "is the promise that command would print."),
        ("table", (head, rows))]
    if st["marginal"]:
        m_rows = [[o["service"], _rate(o["headline_before"]), _rate(o["headline_after"]),
                   f"{o['headline_after'] - o['headline_before']:+,.1f}",
                   _rate(o["lambda_after"]) if not targets else "—",
                   f"{o['cost_added']:+,.2f}",
                   ", ".join(f"{n:+d} × {g}" for g, n in o["gpus_added"].items()) or "none"]
                  for o in st["marginal"]]
        extra = st["marginal"][0]["extra_per_hour"]
        text = (f"Each service re-planned alone with {extra:g} $/h more, from the GPUs the "
                "rest of the fleet leaves, and closed in simulation.")
        if st.get("marginal_best"):
            text += (f"  The next {extra:g} $/h raises the fleet's λ most when it goes to "
                     f"**{st['marginal_best']}**.")
        out += [("h2", f"Where the next {extra:g} $/h should go"), ("p", text),
                ("table", (["service", "its headline before", "after", "gain",
                            "fleet λ if the money goes there", "$/h added", "GPUs added"],
                           m_rows))]
    return out


def render_study_markdown(st: Mapping[str, Any]) -> str:
    return _render_md(f"Fleet what-if: {st['fleet']['name']}", _study_sub(st),
                      study_blocks(st))


def render_study_html(st: Mapping[str, Any]) -> str:
    return _render_html(f"Fleet what-if: {st['fleet']['name']}", _study_sub(st),
                        study_blocks(st))


def _study_sub(st: Mapping[str, Any]) -> str:
    money = f"${st['budget']:,.0f}/h" if st.get("budget") else "targets"
    return (f"{len(st['fleet']['services'])} services on {st['inventory'].get('name')}, "
            f"{money}, router {st['router']}, seed {st['seed']}")


__all__ = ["blocks", "render_fleet_html", "render_fleet_markdown", "render_study_html",
           "render_study_markdown", "study_blocks"]
