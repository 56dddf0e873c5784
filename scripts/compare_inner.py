"""Compare the thesis MILP, maxrate and the pipeline solvers of seeds 000/001 (issue 7 item 5).

    .venv/bin/python scripts/compare_inner.py [--out docs/inner-comparison.md]

Fixed layouts on the §5.2 context (DeepSeek-V3, workload thesis-fig4.2): Table 5.2 (a)
and (d), and layouts of islands too small to hold the model alone (4 x H20, 4 x H200),
which only the pipeline solvers can use.  Every figure in the table is computed here.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from planner.evaluate import LayoutEvaluator
from planner.inner import make_inner_solver
from planner.thesis_cases import TABLE_5_2, context

SOLVERS = ("thesis", "maxrate", "seed000", "seed001")


def layouts():
    return {
        "5.2(a) 8 x 32 DGX-B300": TABLE_5_2["a"],
        "5.2(d) mixed sizes": TABLE_5_2["d"],
        "4 x (4 H20)": (("H20", 4),) * 4,
        "2 x (4 H200) + 2 x (4 H20)": (("H200", 4),) * 2 + (("H20", 4),) * 2,
    }


def rows():
    ctx = context()
    out = []
    for label, layout in layouts().items():
        for name in SOLVERS:
            kw = {"context": ctx} if name.startswith("seed") else {}
            ev = LayoutEvaluator(ctx, make_inner_solver(name, **kw))
            r = ev.solve(layout)
            resp = r.extra.get("mean_response_s", math.nan)
            ttft = r.extra.get("mean_ttft_s", math.nan)
            out.append((label, name, r.status, r.R_total if r.feasible else 0.0,
                        r.R_sustained if r.feasible else 0.0, resp, ttft,
                        sum(a.role != "idle" for a in r.islands)))
    return out


def fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"


def table(data) -> str:
    head = ("| layout | solver | status | R_total (req/s) | R_sustained (req/s) "
            "| mean response (s) | TTFT (s) | islands used |\n|---|---|---|---|---|---|---|---|\n")
    body = "".join(f"| {a} | {b} | {c} | {fmt(d)} | {fmt(e)} | {fmt(f)} | {fmt(g)} | {h} |\n"
                   for a, b, c, d, e, f, g, h in data)
    return head + body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/inner-comparison.md")
    args = ap.parse_args()
    out = Path(args.out)
    text = out.read_text() if out.exists() else "<!-- TABLE -->\n<!-- /TABLE -->\n"
    start, end = "<!-- TABLE -->\n", "<!-- /TABLE -->"
    i, j = text.index(start) + len(start), text.index(end)
    tab = table(rows())
    new = text[:i] + tab + text[j:]
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(new)
    os.replace(tmp, out)
    print(tab + f"wrote {out}")


if __name__ == "__main__":
    main()
