"""``report.md``: the report as Markdown, plots referenced as sibling PNG files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from planner.report import answer, sections, sim_section
from planner.report.csv_tables import TABLES
from planner.report.facts import fmt, optimum_sentence, search_quality
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
    """The whole report, in the order of report.html (planner.report.html); images are
    ``![..](name.png)`` links to the run folder's PNGs."""
    parts = [f"# {_escape(title(plan))}", "", "## The answer", ""]
    parts += [f"- **{label}:** {_escape(text)}" for label, text in answer.answer(plan)]
    parts += ["", "### GPUs to buy or rent", "", md_table(sections.gpus_table(plan)), ""]
    lat = sections.latency_table(plan)
    if lat:
        parts += ["### Latency", "", sections.LATENCY_NOTE, "", md_table(lat), ""]
    parts += ["## Islands", "",
              "Identical islands are grouped: “30 × 2 H100” is thirty islands of two GPUs "
              "each. Each group serves one phase (prefill, decode or colocated) with one "
              "parallelism and batch (see Terms used).", "",
              md_table(answer.island_groups(plan)), ""]
    parts += _figure_md("islands.png")
    parts += ["## Alternatives", "", f"{sections.ALTERNATIVES_NOTE} "
              f"{optimum_sentence(plan)}", "", md_table(sections.baselines_table(plan)), ""]
    tried = sections.target_table(plan)
    if tried:
        parts += ["### The plans tried for the target", "", md_table(tried), ""]
    parts += ["## Assumptions and caveats", ""]
    parts += [f"- {_escape(c)}" for c in answer.caveats(plan)] + [""]
    parts += ["## How the plan uses its GPUs", ""]
    parts += _figure_md("per_length.png") + _figure_md("assignment.png")
    parts += simulation_markdown(plan, sims)
    parts += ["## Terms used", ""]
    parts += [f"- **{k}**: {v}" for k, v in answer.GLOSSARY.items()] + [""]
    parts += ["## Appendix: details and search internals", "",
              "### Capacity in detail", "", md_table(sections.throughput_table(plan)), ""]
    net = sections.network_table(plan)
    if net:
        parts += ["### Network", "", sections.NETWORK_NOTE, "", md_table(net), ""]
    parts += ["### Every island", "", md_table(sections.islands_table(plan)), ""]
    placed = sections.placement_table(plan)
    if placed:
        parts += ["### Placement (server → islands)", "", sections.PLACEMENT_NOTE, "",
                  md_table(placed), ""]
    parts += ["### Search", "", f"{search_quality(plan)}.", ""] + _figure_md("convergence.png")
    parts += [md_table(sections.search_table(plan)), ""]
    parts += ["### Inputs", "", md_table(sections.request_table(plan)), ""]
    parts += ["### Prices and their sources", "", md_table(sections.prices_table(plan)), ""]
    parts += ["### Files in this folder", "",
              "- `plan.json`: everything above, machine-readable "
              f"(schema version {plan['schema_version']}); `planner report <folder>` "
              "redraws this report from it."]
    parts += [f"- `{t}`" for t in TABLES]
    parts += [f"- `{name}`" for name in FIGURES] + ["- `report.html`: this report as one "
                                                    "self-contained page", ""]
    return "\n".join(parts)


def _figure_md(name: str) -> list[str]:
    _make, fig_title, caption = FIGURES[name]
    return [f"### {fig_title}", "", f"![{fig_title}]({name})", "", f"*{caption}*", ""]
