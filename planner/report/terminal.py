"""The terminal summary of a plan: what the CLI prints after solving or re-rendering --
the answer in the report's words (planner.report.answer), then the GPUs, the islands
grouped, the latency and the alternatives.  The full detail is in report.html."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from planner.report import answer, sections
from planner.report.facts import optimum_sentence
from planner.report.markdown import title

_NUMERIC = {"used", "available", "price per GPU", "cost", "GPUs", "batch", "#", "value",
            "requests/s", "this plan ÷ it", "p50 planned", "p90 planned", "p50 simulated",
            "p90 simulated", "SLO ceiling", "KV GB/s", "req/s", "ms"}


_WRAP = {"input lengths served", "input lengths", "islands", "plan", "latency", "figure",
         "status", "tier", "busiest island's share of the tier", "latency, ms"}


def _rich(table: sections.Table, caption: str, compact: bool = False) -> Table:
    header, rows = table
    style: dict[str, Any] = ({"box": box.SIMPLE_HEAD, "pad_edge": False, "padding": (0, 0)}
                             if compact else {})
    t = Table(title=caption, title_justify="left", title_style="bold", header_style="bold",
              **style)
    for h in header:
        # identifiers and figures stay whole; descriptive columns wrap in narrow terminals
        t.add_column(h, justify="right" if h in _NUMERIC else "left",
                     no_wrap=h not in _WRAP, overflow="fold")
    for row in rows:
        t.add_row(*row)
    return t


def summary_text(plan: Mapping[str, Any]) -> Group:
    """A rich renderable: ``rich.console.Console().print(summary_text(plan))``."""
    lines = Text()
    for label, text in [*answer.answer(plan), ("Search", optimum_sentence(plan))]:
        lines.append(f"{label}: ", style="bold")
        lines.append(text + "\n")
    return Group(Text(title(plan), style="bold underline"), lines,
                 _rich(sections.gpus_table(plan), "GPUs"),
                 _rich(answer.island_groups(plan), "Islands (identical ones grouped)",
                       compact=True),
                 *[_rich(t, name) for t, name in ((sections.latency_table(plan), "Latency"),)
                   if t],
                 _rich(sections.baselines_table(plan), "Alternatives"))


def summary_plain(plan: Mapping[str, Any], width: int = 110) -> str:
    """The same summary as plain text (no colours), e.g. for logs and tests."""
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(summary_text(plan))
    return buf.getvalue()
