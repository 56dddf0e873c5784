"""Built-in load profiles: week-long shapes built from published characterisations.

No public LLM trace of a whole week ships with the planner (the Azure 2023 traces in
../shared/traces span an hour each), so the built-in profiles are *shapes*: relative
rates (the busiest hour is 1; ``--peak-rps`` sets the scale) built from figures that
production characterisations publish.  Every figure is a named constant below with its
source; docs/profiles.md tabulates them.

The shape of one stream, hour ``h`` of the week (0 = Monday 00:00 UTC)::

    rate(h) = day(h) * (trough + (1 - trough) * bump(hour of day))
    bump(x) = (1 + cos(2 pi (x - peak_hour) / 24)) / 2      (1 at the peak, 0 twelve
                                                             hours from it)

with ``day`` 1 on weekdays and ``weekend`` on Saturday and Sunday, hours in UTC (the
trace's clock).  A raised cosine is
the smoothest curve with the published peak hour and peak-to-trough ratio; the papers
plot their traces, they do not fit a curve, so the shape between those points is this
module's assumption (stated in docs/profiles.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.core.errors import PlannerError
from planner.workload.profile import Profile, Slot


@dataclass(frozen=True)
class WeekShape:
    """One stream's published figures: trough / peak within a weekday, the hour of the
    peak, and a weekend day's load relative to a weekday's."""

    trough: float
    peak_hour: float
    weekend: float
    source: str

    def rate(self, h: int) -> float:
        day, hour = divmod(h, 24)
        bump = (1 + math.cos(2 * math.pi * (hour - self.peak_hour) / 24)) / 2
        level = self.trough + (1 - self.trough) * bump
        return level * (self.weekend if day >= 5 else 1.0)


# -- the figures (docs/profiles.md, "Built-in profiles") -----------------------------------
#: Both from the Azure LLM inference trace 2024 (one week per service, UTC, CC-BY), the
#: trace of DynamoLLM (Stojkovic et al., HPCA 2025, arXiv 2408.00741); its dataset
#: notebook (github.com/Azure/AzurePublicDataset, analysis/AzureLLMInferenceDataset2024
#: .ipynb, "Number of invocations per minute") holds the paper's plots.  Read from those
#: plots (about +-10-15 %): coding peaks at ~5,000-5,800 requests/min around 19-20 UTC
#: on weekdays with troughs of ~400-600 (peak:trough ~10:1), weekend peaks ~0.20-0.25 of
#: a weekday's; conversation peaks at ~4,000-5,000 around 14-15 UTC, troughs at
#: ~1,700-2,100 (~2.5:1), weekends ~0.45-0.55 of a weekday peak.
TRACE_2024 = ("Azure LLM inference trace 2024 (DynamoLLM, Stojkovic et al., HPCA 2025), "
              "invocations per minute over a week, read from the dataset's plots")
CODE = WeekShape(trough=0.10, peak_hour=19.5, weekend=0.22,
                 source=f"coding: {TRACE_2024}")
CHAT = WeekShape(trough=0.40, peak_hour=14.5, weekend=0.50,
                 source=f"conversation: {TRACE_2024}")
#: The week means of the two traces (16,803,694 coding and 27,303,998 conversation
#: requests over 7 days each, from the dataset notebook's counts): ~1,667 and ~2,709
#: requests/min, so code carries 1,667 / (1,667 + 2,709) of the mixed profile's week.
CODE_WEEK_SHARE = 16_803_694 / (16_803_694 + 27_303_998)


def _one(shape: WeekShape, name: str) -> Profile:
    rates = [shape.rate(h) for h in range(168)]
    top = max(rates)
    return Profile(name, tuple(Slot(float(h), 1.0, r / top) for h, r in enumerate(rates)),
                   168.0, True, {}, shape.source)


def _mixed(name: str) -> Profile:
    """Chat and code together, each at its own shape, scaled so that code carries
    ``CODE_WEEK_SHARE`` of the week's requests (the mix drifts over the day and the
    week: code's share is highest on weekday evenings, UTC)."""
    code_raw = [CODE.rate(h) for h in range(168)]
    chat_raw = [CHAT.rate(h) for h in range(168)]
    code_w = CODE_WEEK_SHARE / sum(code_raw)
    chat_w = (1 - CODE_WEEK_SHARE) / sum(chat_raw)
    code = [r * code_w for r in code_raw]
    chat = [r * chat_w for r in chat_raw]
    total = [a + b for a, b in zip(code, chat, strict=True)]
    top = max(total)
    slots = tuple(Slot(float(h), 1.0, total[h] / top,
                       {"chat": chat[h] / total[h], "code": code[h] / total[h]})
                  for h in range(168))
    return Profile(name, slots, 168.0, True,
                   {"chat": "azure-conv-2023", "code": "azure-code-2023"},
                   f"code: {CODE.source}; chat: {CHAT.source}")

BUILTIN_PROFILES = {
    "enterprise-week": lambda: _one(CODE, "enterprise-week"),
    "chat-week": lambda: _one(CHAT, "chat-week"),
    "chat-code-week": lambda: _mixed("chat-code-week"),
}


def builtin_profile(name: str) -> Profile:
    if name not in BUILTIN_PROFILES:
        raise PlannerError(f"unknown built-in profile {name!r}; known: "
                           f"{', '.join(BUILTIN_PROFILES)}")
    return BUILTIN_PROFILES[name]()


__all__ = ["BUILTIN_PROFILES", "CHAT", "CODE", "WeekShape", "builtin_profile"]
