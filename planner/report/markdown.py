"""``report.md``: the report as Markdown, plots referenced as sibling PNG files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.report import sections, sim_section
from planner.report.csv_tables import TABLES
from planner.report.facts import fmt, headline
from planner.report.plots import FIGURES
from planner.run.simulations import summary_rows


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(table: sections.Table) -> str:
    header, rows = table
    out = ["| " + " | ".join(_escape(h) for h in header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def title(plan: Mapping[str, Any]) -> str:
    req = plan["request"]
    return (f"Capacity plan: {req.get('model', '?')} serving {req.get('workload', '?')} on "
            f"inventory '{req['inventory'].get('name', '?')}'")


def simulation_markdown(plan: Mapping[str, Any], sims: Sequence[Mapping[str, Any]]
                        ) -> list[str]:
    """The "Simulated latency" section (empty without simulation runs)."""
    if not sims:
        return []

    capacity = fmt(plan["summary"].get("requests_per_s"))
    parts = ["## Simulated latency", "", sim_section.INTRO.format(capacity=capacity), "",
             md_table(summary_rows(sims)), ""]
    for name, (fig_title, caption) in sim_section.SIM_FIGURES.items():
        parts += [f"### {fig_title}", "", f"![{fig_title}]({name})", "", f"*{caption}*", ""]
    return parts


def render_markdown(plan: Mapping[str, Any], sims: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole report; images are ``![..](name.png)`` links to the run folder's PNGs."""
    parts = [f"# {_escape(title(plan))}", ""]
    parts += ["## The answer", ""]
    parts += [f"- **{label}:** {_escape(text)}" for label, text in headline(plan)]
    parts += ["", "### GPUs to buy or rent", "", md_table(sections.gpus_table(plan)), ""]
    parts += ["### Throughput and cost", "", md_table(sections.throughput_table(plan)), ""]
    lat, net = sections.latency_table(plan), sections.network_table(plan)
    if lat:
        parts += ["### Latency", "", sections.LATENCY_NOTE, "", md_table(lat), ""]
    if net:
        parts += ["### Network", "", sections.NETWORK_NOTE, "", md_table(net), ""]
    parts += ["## Islands", "",
              "Each island is a group of GPUs of one type serving one phase (prefill or "
              "decode) with one parallel configuration.", "",
              md_table(sections.islands_table(plan)), ""]
    parts += ["## Plots", ""]
    for name, (_make, fig_title, caption) in FIGURES.items():
        if name == "convergence.png":
            continue
        parts += [f"### {fig_title}", "", f"![{fig_title}]({name})", "", f"*{caption}*", ""]
    parts += simulation_markdown(plan, sims)
    parts += ["## Compared with", "",
              "The best plan using a single GPU type at the same budget, and the exact "
              "optimum of the same model (how far the search is from it).", "",
              md_table(sections.baselines_table(plan)), ""]
    conv_title, conv_caption = FIGURES["convergence.png"][1:]
    parts += ["## Search", "", f"![{conv_title}](convergence.png)", "", f"*{conv_caption}*",
              "", md_table(sections.search_table(plan)), ""]
    parts += ["## Inputs", "", md_table(sections.request_table(plan)), ""]
    parts += ["## Prices and their sources", "", md_table(sections.prices_table(plan)), ""]
    parts += ["## Files in this folder", "",
              "- `plan.json`: everything above, machine-readable "
              f"(schema version {plan['schema_version']}); `planner report <folder>` "
              "redraws this report from it."]
    parts += [f"- `{t}`" for t in TABLES]
    parts += [f"- `{name}`" for name in FIGURES] + ["- `report.html`: this report as one "
                                                    "self-contained page", ""]
    return "\n".join(parts)
