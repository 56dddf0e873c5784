"""``planner workload list | show | fit``: inspect built-in workloads, fit traces."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

from planner.cli import values
from planner.core.atomic import check_output_file
from planner.core.errors import PlannerError
from planner.workload import fit_trace, list_workloads, load_workload, workload_summary
from planner.workload.families import MAX_SUPPORTED_LEN
from planner.workload.loaders import COLUMN_ROLES, TIME_UNITS, TRACE_FORMATS
from planner.workload.yaml_io import write_workload

app = typer.Typer(help="Inspect, list and fit workloads (input/output length distributions).",
                  no_args_is_help=True, rich_markup_mode=None)  # plain help (cli.main)


def _fmt(x: float | int | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}g}"


@app.command("list")
def list_cmd() -> None:
    """List the built-in workloads."""
    names = list_workloads()
    rows = [("name", "max_len", "mean in", "mean out", "rate/s", "CV", "description")]
    for name in names:
        w = load_workload(name)
        desc = w.description if len(w.description) <= 60 else w.description[:59] + "..."
        rows.append((name, str(w.max_len), _fmt(w.mean_input), _fmt(w.decode_mean),
                     _fmt(w.rate_rps), _fmt(w.cv), desc))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(wd) for c, wd in zip(r[1:-1], widths[1:],
                                                                          strict=True)]
        print("  ".join([*cells, r[-1]]).rstrip())


def _safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "workload"


@app.command("show", short_help="Print a workload's statistics and plot its histograms.")
def show(
    name: Annotated[str, typer.Argument(help="built-in workload name or path of a YAML file",
                                        metavar="NAME")],
    out: Annotated[Path | None, typer.Option("--out", help="PNG path of the histograms",
                                             show_default="reports/workload-<name>.png")
                   ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    max_len: Annotated[int | None, typer.Option("--max-len", help="re-cut the input pmf "
                                                "at this length",
                                                show_default="the workload's")] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="do not write the PNG")] = False,
) -> None:
    """Print summary statistics of a workload and write a PNG of its histograms."""
    from planner.workload.plot import plot_workload

    if out is not None and out.suffix.lower() != ".png":
        raise PlannerError(f"--out {out}: expected a .png file")
    values.number(max_len, "--max-len", integer=True, ge=1, le=MAX_SUPPORTED_LEN)
    if out is not None and not no_plot:
        check_output_file(out, "--out")
    try:
        w = load_workload(name, max_len=max_len)
    except PlannerError:
        if max_len is None:
            raise
        load_workload(name)  # a fault of the file itself is reported as the file's
        raise PlannerError(f"--max-len {max_len}: {name} has no requests with inputs of at "
                           f"most {max_len} tokens") from None
    summary = workload_summary(w)
    png = None
    if not no_plot:
        png = out if out is not None else Path("reports") / f"workload-{_safe_filename(w.name)}.png"
        plot_workload(w, png)
        summary["png"] = str(png)
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{w.name}" + (f" - {w.description}" if w.description else ""))
    if w.provenance:
        print(f"provenance: {w.provenance}")
    facts = [f"requests: {_fmt(summary['count'])}"]
    if "duration_s" in summary:
        facts.append(f"duration: {summary['duration_s']:.1f} s")
    facts += [f"rate: {_fmt(w.rate_rps)} req/s", f"CV: {_fmt(w.cv)}",
              f"prefix hit rate: {w.prefix_hit_rate:.1%}"]
    print("   ".join(facts))
    print(f"max_len: {w.max_len}   clipped mass above max_len: {w.clipped_mass:.4%}   "
          f"decode max: {w.decode_max}")
    header = ("", "mean", "p50", "p90", "p99", "max")
    rows: list[tuple[str, ...]] = [header]
    for label in ("input", "output"):
        s = summary[label]
        rows.append((label, _fmt(s.get("mean"), 6),
                     *(_fmt(s.get(k)) for k in ("p50", "p90", "p99", "max"))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(c.rjust(wd) if i else c.ljust(wd)
                        for i, (c, wd) in enumerate(zip(r, widths, strict=True))))
    if summary.get("dropped"):
        print("dropped rows when fitted: " + ", ".join(
            f"{k}: {v}" for k, v in summary["dropped"].items()))
    if png is not None:
        print(f"wrote {png}")


def _check_trace_flags(fmt: str, time_unit: str | None) -> None:
    if fmt not in TRACE_FORMATS:
        raise PlannerError(f"--format: unknown trace format {fmt!r}; known formats: "
                           f"{', '.join(TRACE_FORMATS)}")
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise PlannerError(f"--time-unit: unknown time unit {time_unit!r}; use one of "
                           f"{', '.join(TIME_UNITS)}")


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``input=a,output=b,time=c`` -> mapping; an empty value (``time=``) disables a role."""
    if not text:
        return None
    mapping: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        role, sep, column = part.partition("=")
        role = role.strip()
        if not sep or role not in COLUMN_ROLES:
            raise PlannerError(f"--columns: expected role=column with role in "
                               f"{', '.join(COLUMN_ROLES)}, got {part.strip()!r}")
        mapping[role] = column.strip()
    return mapping


@app.command("fit")
def fit(
    trace: Annotated[Path, typer.Argument(help="trace file (CSV or JSONL)",
                                          metavar="TRACE")],
    fmt: Annotated[str, typer.Option("--format", help=f"one of {', '.join(TRACE_FORMATS)}")],
    out: Annotated[Path, typer.Option("--out", help="workload YAML file to write")],
    columns: Annotated[str | None, typer.Option(
        "--columns", help="column mapping, e.g. input=prompt,output=completion,time=ts",
        show_default="the format's columns")] = None,
    max_len: Annotated[int | None, typer.Option(
        "--max-len", help="drop (and count) requests with longer inputs",
        show_default="cover the whole trace")] = None,
    name: Annotated[str | None, typer.Option("--name", help="workload name",
                                             show_default="the output file's stem")] = None,
    time_unit: Annotated[str | None, typer.Option(
        "--time-unit", help="unit of numeric timestamps: s, ms, us, ns",
        show_default="the format's")] = None,
    bin_width: Annotated[int | None, typer.Option(
        "--bin-width", help="store lengths in bins of this width (1 = exact)",
        show_default="exact while small, else the narrowest that fits")] = None,
    block_size: Annotated[int, typer.Option(
        "--block-size", help="tokens per hash block (Mooncake hash_ids)")] = 512,
) -> None:
    """Build a workload YAML file from a request trace."""
    if out.suffix not in (".yaml", ".yml"):
        raise PlannerError(f"--out {out}: expected a .yaml file")
    values.number(block_size, "--block-size", integer=True, ge=1, le=MAX_SUPPORTED_LEN)
    values.number(max_len, "--max-len", integer=True, ge=1, le=MAX_SUPPORTED_LEN)
    values.number(bin_width, "--bin-width", integer=True, ge=1, le=MAX_SUPPORTED_LEN)
    check_output_file(out, "--out")
    _check_trace_flags(fmt, time_unit)
    workload, report = fit_trace(
        trace, fmt, name=name or out.stem, max_len=max_len, columns=parse_columns(columns),
        time_unit=time_unit, bin_width=bin_width, block_size=block_size)
    write_workload(out, workload, header=f"Fitted by `planner workload fit` from {trace.name}.")
    for line in report.lines():
        print(line)
    s = workload_summary(workload)
    print(f"input mean {s['input']['mean']:.1f} (p50 {s['input']['p50']}, p99 "
          f"{s['input']['p99']}, max {s['input']['max']}); output mean "
          f"{workload.decode_mean:.1f} (max {workload.decode_max}); rate "
          f"{_fmt(workload.rate_rps)} req/s; CV {_fmt(workload.cv)}; prefix hit rate "
          f"{workload.prefix_hit_rate:.1%}")
    print(f"wrote {out}")


@app.command("profile", short_help="Derive a load profile (rate per time slot) from traces.")
def profile_cmd(
    traces: Annotated[list[Path], typer.Argument(help="timestamped trace file(s); several: "
                                                 "one per workload stream",
                                                 metavar="TRACE...")],
    out: Annotated[Path, typer.Option("--out", help="profile YAML file to write")],
    fmt: Annotated[str, typer.Option("--format", help=f"one of {', '.join(TRACE_FORMATS)}")
                   ] = "azure",
    slot_minutes: Annotated[float, typer.Option(
        "--slot-minutes", help="slot length in minutes")] = 60.0,
    fold: Annotated[str, typer.Option(
        "--fold", help="week (hour of the week, UTC), day (hour of the day) or none (the "
        "trace's own time line)")] = "week",
    workloads: Annotated[str | None, typer.Option(
        "--workloads", help="with several traces: the workload of each, comma-separated "
        "(built-in names or YAML paths), e.g. azure-conv-2023,azure-code-2023")] = None,
    streams: Annotated[str | None, typer.Option(
        "--streams", help="with several traces: stream names, comma-separated",
        show_default="the workloads' names")] = None,
    columns: Annotated[str | None, typer.Option(
        "--columns", help="column mapping, e.g. time=ts (the csv and jsonl formats also "
        "need input and output: input=prompt,output=completion,time=ts)",
        show_default="the format's")
                       ] = None,
    time_unit: Annotated[str | None, typer.Option(
        "--time-unit", help="unit of numeric timestamps: s, ms, us, ns",
        show_default="the format's")] = None,
    name: Annotated[str | None, typer.Option("--name", help="profile name",
                                             show_default="the output file's stem")] = None,
) -> None:
    """Count arrivals per time slot and write a profile for `planner plan --profile`."""
    import numpy as np

    from planner.workload.loaders import iter_trace
    from planner.workload.profile_derive import FOLDS, derive_profile
    from planner.workload.profile_io import write_profile

    if out.suffix not in (".yaml", ".yml"):
        raise PlannerError(f"--out {out}: expected a .yaml file")
    values.number(slot_minutes, "--slot-minutes", gt=0, le=7 * 24 * 60)
    if fold not in FOLDS:
        raise PlannerError(f"--fold: expected one of {', '.join(FOLDS)}, got {fold!r}")
    _check_trace_flags(fmt, time_unit)
    wl = [w.strip() for w in workloads.split(",")] if workloads else []
    if len(traces) > 1 and len(wl) != len(traces):
        raise PlannerError(f"--workloads: give one workload per trace ({len(traces)}), "
                           "comma-separated")
    if len(traces) == 1 and wl:
        raise PlannerError("--workloads applies with several traces (one stream each); "
                           "one trace is planned with `planner plan --workload`")
    for w in wl:
        values.naming("--workloads", load_workload, w)
    names = [s.strip() for s in streams.split(",")] if streams else \
        [Path(w).stem for w in wl] or ["default"]
    if len(names) != max(len(traces), 1) or len(set(names)) != len(names) \
            or not all(names):
        raise PlannerError("--streams: give one distinct name per trace")
    check_output_file(out, "--out")
    times = {}
    for stream, trace in zip(names, traces, strict=True):
        parts = [c.time_ns for c in iter_trace(trace, fmt, columns=parse_columns(columns),
                                               time_unit=time_unit)
                 if c.time_ns is not None]
        if not parts:
            raise PlannerError(f"{trace}: no time column: give --columns time=<column>")
        times[stream] = np.concatenate(parts)
    prof = derive_profile(times, slot_minutes=slot_minutes, fold=fold,
                          name=name or out.stem,
                          source="derived by `planner workload profile` from "
                                 + ", ".join(t.name for t in traces),
                          workloads=dict(zip(names, wl, strict=True)) if wl else None)
    write_profile(out, prof)
    r = prof.rates
    print(f"{len(prof.slots)} slots of {slot_minutes:g} min over {prof.period_hours:g} h; "
          f"rate mean {float(np.average(r, weights=prof.hours)):.4g} req/s, peak "
          f"{r.max():.4g}, quietest {r.min():.4g}")
    print(f"wrote {out}")
