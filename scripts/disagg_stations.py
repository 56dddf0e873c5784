"""Where a disaggregated row's error sits: first-token wait or decode step.

    .venv/bin/python scripts/disagg_stations.py [--engine sglang] [--match ddep48]

For every scored disaggregated row (``perfmodel/data/posed/inferencex_disagg.yaml``)
whose quote states a mean TTFT and TPOT, prints the published figures beside the
model's: the mean TTFT of the client's run played out on the model's stations
(:func:`perfmodel.validation_disagg.benchmark_run`), the decode step time at the
closed-loop operating point (:func:`perfmodel.validation_disagg.disaggregated_point`),
both request rates, and which side that point saturates (``-``: neither; where one
is, published / ours is that side's published share of the model's capacity).  A row
whose TPOT agrees and whose TTFT does not has its error before the first token
(prefill queue, hand-off), not in decode.  Read-only: nothing is fitted or written;
held-out rows are printed as the validation doc prints them.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel import validation as val  # noqa: E402
from perfmodel import validation_disagg as vd  # noqa: E402
from perfmodel.validation_split import held_out  # noqa: E402
from perfmodel.validation_units import NotPredictable  # noqa: E402

#: How the InferenceX posings quote a row's mean TPOT (``scripts/pose_inferencex.py``).
_MEAN_TPOT = re.compile(r"mean_tpot ([0-9.eE+-]+) s")


def published_mean_tpot(quote: str) -> float | None:
    """The mean TPOT (seconds) a row's quote states, if it states one."""
    m = _MEAN_TPOT.search(quote or "")
    return float(m.group(1)) if m else None


def station_rows(engine: str = "", match: str = "") -> list[dict[str, object]]:
    """One dict per disaggregated row with a stated TTFT and TPOT (see module docstring)."""
    out: list[dict[str, object]] = []
    for cid, case in sorted(val.cases_by_id().items()):
        if case.mode != "disaggregated" or (engine and case.engine != engine):
            continue
        if match and match not in cid:
            continue
        ttft, tpot = vd.published_mean_ttft(case.quote), published_mean_tpot(case.quote)
        if ttft is None or tpot is None:
            continue
        try:
            pre, dec = vd.sides(case)
            run = vd.benchmark_run(case, pre, dec)
            point = vd.disaggregated_point(case, pre, dec)
        except NotPredictable:
            continue
        ours = run.output_tokens_per_s / case.osl
        published = ours * case.value / val.predict(case)
        out.append({"id": cid, "held_out": held_out(cid),
                    "ttft_pub_s": ttft, "ttft_ours_s": run.mean_ttft_s,
                    "tpot_pub_ms": 1e3 * tpot, "tpot_ours_ms": 1e3 * point.tpot_s,
                    "rps_pub": published, "rps_ours": ours,
                    "saturated": point.saturated or "-"})
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="", help="only this engine's rows (sglang, trtllm)")
    ap.add_argument("--match", default="", help="only rows whose id contains this text")
    args = ap.parse_args(argv)
    print(f"{'row':64} {'set':>11} | {'TTFT s pub':>10} {'ours':>6} | "
          f"{'TPOT ms pub':>11} {'ours':>6} | {'req/s pub':>9} {'ours':>7} | saturated")
    for r in station_rows(args.engine, args.match):
        print(f"{r['id']:64} {'held out' if r['held_out'] else 'calibration':>11} | "
              f"{r['ttft_pub_s']:10.2f} {r['ttft_ours_s']:6.2f} | "
              f"{r['tpot_pub_ms']:11.1f} {r['tpot_ours_ms']:6.1f} | "
              f"{r['rps_pub']:9.1f} {r['rps_ours']:7.1f} | {r['saturated']}")


if __name__ == "__main__":
    main()
