"""Fit the perf model's kernel tables from NVIDIA's measured kernel database.

    pip install -e .[calibrate]          # aiconfigurator-core (Apache-2.0) + pyarrow
    .venv/bin/python scripts/calibrate_kernels.py [--systems h200_sxm,...] [--check]

Reads the parquet tables the installed ``aiconfigurator-core`` package ships
(``aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/``), fits the
compact models of ``perfmodel.kernels`` per measured system, engine and operation, and
writes ``perfmodel/data/kernels/<system>.json.gz`` with attribution.  It also measures
how well the fitting method predicts what it did not see, into
``perfmodel/data/kernels/validation.json``:

* held-out shapes: per system, engine and operation, 20 % of the shape groups (a
  GEMM's (n, k), an attention's head layout, ...) are left out, the model is fitted on
  the rest and scored on them (the shipped tables are then fitted on everything);
* held-out GPUs: a measured GPU is predicted from another architecture's fit plus its
  own datasheet (the transfer rule of ``perfmodel.kernels.transfer``).

``--check`` refits and compares with the committed files instead of writing them.
Without aiconfigurator-core installed it prints one line naming the extra, exit 2.
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel.hardware import GPU, gpu_catalog  # noqa: E402
from perfmodel.kernels import observations as obsmod  # noqa: E402
from perfmodel.kernels.store import ENGINES, dump_system  # noqa: E402

OUT = ROOT / "perfmodel" / "data" / "kernels"
HOLDOUT_SHARE = 0.2
#: Systems whose TRT-LLM one-sided all-to-all (observations.ONE_SIDED) the database
#: measured on a sibling only: GB300 NVL72 racks have GB200's NVLink-5 switch fabric
#: (1.8 TB/s per GPU, 72 GPUs) and run the same kernel; its own moe_a2a table measures
#: DeepEP, which TRT-LLM does not select there.
ONE_SIDED_FROM = {"gb300": "gb200"}
#: Held-out GPUs of the transfer validation: (target, source) measured systems.
TRANSFER_PAIRS = (("h200_sxm", "h100_sxm"), ("b300_sxm", "b200_sxm"), ("l40s", "a100_sxm"))


def database_root() -> tuple[Path, str]:
    try:
        from importlib.metadata import version

        import aiconfigurator_core  # noqa: F401
    except ImportError:
        print("error: aiconfigurator-core is not installed; install the calibration extra: "
              "pip install -e '.[calibrate]'", file=sys.stderr)
        raise SystemExit(2) from None
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent / "systems", version("aiconfigurator-core")


def current_versions(systems_dir: Path) -> dict[str, dict[str, str]]:
    """system -> engine -> the database's "current" version (query_versions.yaml)."""
    import yaml

    doc = yaml.safe_load((systems_dir / "query_versions.yaml").read_text())
    base = {e: v["current"] for e, v in doc["defaults"].items()}
    out = {}
    for sysdir in (systems_dir / "data").iterdir():
        versions = dict(base)
        for e, v in (doc.get("overrides") or {}).get(sysdir.name, {}).items():
            versions[e] = v["current"]
        out[sysdir.name] = versions
    return out


def _version_key(v: str):
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, Version("0"))


def read_table(systems_dir: Path, system: str, family: str, engine: str, filename: str,
               current: str):
    """(version, DataFrame) of a table: the current version if it has the file, else the
    newest version directory that does."""
    import pandas as pd

    base = systems_dir / "data" / system / family / engine
    if not base.is_dir():
        return None
    dirs = [d.name for d in base.iterdir() if (d / filename).is_file()]
    if not dirs:
        return None
    version = current if current in dirs else max(dirs, key=_version_key)
    return version, pd.read_parquet(base / version / filename)


def collect(systems_dir: Path, system: str, engine: str, current: str, gpu: GPU):
    """Every Observations of one system and engine, with the version each came from."""
    def table(family, filename):
        return read_table(systems_dir, system, family, engine, filename, current)

    found = []
    readers = (("gemm", "gemm_perf.parquet", obsmod.gemm_rows),
               ("moe", "moe_perf.parquet", obsmod.moe_rows),
               ("attention", "context_attention_perf.parquet", obsmod.context_attention_rows),
               ("attention", "generation_attention_perf.parquet",
                obsmod.decode_attention_rows),
               ("mla", "context_mla_perf.parquet", obsmod.mla_context_rows),
               ("mla", "generation_mla_perf.parquet", obsmod.mla_decode_rows),
               ("comm", "custom_allreduce_perf.parquet", obsmod.allreduce_rows))
    for family, filename, reader in readers:
        got = table(family, filename)
        if got is None:
            continue
        version, df = got
        found += [(version, o) for o in reader(df)]
        if filename == "moe_perf.parquet":
            imb = obsmod.imbalance_rows(df)
            if imb is not None:
                found.append((version, imb))
    frames, versions = {}, []
    for name, filename in (("moe_a2a", "moe_a2a_perf.parquet"),
                           ("deepep_normal", "wideep_deepep_normal_perf.parquet"),
                           ("deepep_ll", "wideep_deepep_ll_perf.parquet"),
                           ("trtllm_alltoall", "trtllm_alltoall_perf.parquet")):
        got = table("comm", filename)
        if got is None and name == "trtllm_alltoall" and system in ONE_SIDED_FROM:
            got = read_table(systems_dir, ONE_SIDED_FROM[system], "comm", engine, filename,
                             current)
        if got is not None:
            versions.append(got[0])
            frames[name] = got[1]
    found += [("+".join(sorted(set(versions))), o) for o in obsmod.alltoall_rows(frames)]
    kept = []
    for v, o in found:
        s = obsmod.streaming(o, gpu)
        p = obsmod.physical(s, gpu)
        if len(p) >= max(4, 0.5 * len(s)):  # most rows physical: keep the table
            kept.append((v, p))
    return kept


def _holdout_mask(groups: np.ndarray, salt: str) -> np.ndarray:
    """Deterministic ~20 % of the shape groups (hash of group label and salt)."""
    out = np.zeros(len(groups), dtype=bool)
    for g in np.unique(groups):
        h = hashlib.blake2b(f"{salt}:{g}".encode(), digest_size=4).digest()
        if int.from_bytes(h, "little") / 2**32 < HOLDOUT_SHARE:
            out[groups == g] = True
    return out


def errors(pred: np.ndarray, meas: np.ndarray) -> dict:
    e = np.asarray(pred) / np.asarray(meas) - 1.0
    a = np.abs(e)
    return {"n": int(len(e)), "median_abs": float(np.median(a)),
            "p90_abs": float(np.quantile(a, 0.9)), "max_abs": float(a.max()),
            "median_signed": float(np.median(e))}


def held_out(obs, gpu: GPU, salt: str) -> dict | None:
    if obs.op == "moe_imbalance":
        return None  # a correction factor, scored through the MoE op it corrects
    test = _holdout_mask(obs.group, salt)
    if test.all() or not test.any() or (~test).sum() < 8:
        return None
    model = obsmod.fit_observations(obs.take(~test), gpu)
    t = obs.take(test)
    return errors(obsmod.predict(t, model, gpu), t.latency)


def catalog_for(system: str) -> GPU | None:
    for gpu in gpu_catalog().values():
        if gpu.kernel_system == system:
            return gpu
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--systems", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--check", action="store_true",
                    help="refit and compare with the committed files; write nothing")
    ap.add_argument("--no-validation", action="store_true")
    args = ap.parse_args(argv)
    systems_dir, pkg_version = database_root()
    versions = current_versions(systems_dir)
    wanted = [s for s in args.systems.split(",") if s] or sorted(versions)
    engines = [e for e in args.engines.split(",") if e]
    attribution = (f"Kernel latencies: NVIDIA aiconfigurator-core {pkg_version} "
                   "(Apache-2.0), (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES; "
                   "fitted by scripts/calibrate_kernels.py into the models of "
                   "perfmodel.kernels (modified: fitted, not the original data)")
    validation = {"database": f"aiconfigurator-core {pkg_version}", "kernels": [],
                  "transfer": []}
    fitted_obs: dict[str, list] = {}
    changed = []
    for system in wanted:
        gpu = catalog_for(system)
        if gpu is None:
            continue
        t0 = time.time()
        per_engine = {}
        for engine in engines:
            if engine not in versions.get(system, {}):
                continue
            rows = collect(systems_dir, system, engine, versions[system][engine], gpu)
            if not rows:
                continue
            fitted_obs.setdefault(system, []).extend((engine, o) for _, o in rows)
            per_engine[engine] = {o.key: (v, obsmod.fit_observations(o, gpu)) for v, o in rows}
            if not args.no_validation:
                for _, o in rows:
                    err = held_out(o, gpu, f"{system}:{engine}")
                    if err:
                        validation["kernels"].append({"system": system, "gpu": gpu.name,
                                                      "engine": engine, "op": o.key, **err})
        if not per_engine:
            continue
        blob = dump_system(system, gpu.name, attribution, per_engine)
        path = OUT / f"{system}.json.gz"
        if args.check:
            if not path.is_file() or path.read_bytes() != blob:
                changed.append(path.name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
        print(f"{system} ({gpu.name}): {', '.join(per_engine)} "
              f"[{sum(len(v) for v in per_engine.values())} tables, {time.time() - t0:.0f} s]",
              flush=True)
    if not args.no_validation:
        validation["transfer"] = transfer_validation(fitted_obs)
        if not args.check and not args.systems:
            (OUT / "validation.json").write_text(json.dumps(validation, indent=1) + "\n")
    for row in validation["kernels"]:
        print(f"  held-out {row['system']:>10} {row['engine']:<6} {row['op']:<26} "
              f"n={row['n']:<6} median {row['median_abs']:6.1%}  p90 {row['p90_abs']:6.1%}  "
              f"max {row['max_abs']:7.1%}")
    for row in validation["transfer"]:
        print(f"  transfer {row['source']}->{row['target']} {row['engine']:<6} {row['op']:<26} "
              f"n={row['n']:<6} median {row['median_abs']:6.1%}  bias {row['median_signed']:+.1%}")
    if args.check and changed:
        print(f"differs from the committed tables: {', '.join(changed)}", file=sys.stderr)
        return 1
    return 0


def transfer_validation(fitted_obs: dict[str, list]) -> list[dict]:
    """Predict each target GPU's measurements from another GPU's fit (same engine and
    op) with the target's datasheet: compute ops from the named source architecture,
    communication from the nearest GPU with the same interconnect class (the rule of
    ``perfmodel.kernels.transfer``, with the target itself excluded)."""
    from perfmodel.kernels.transfer import comm_source

    out = []
    for target, source in TRANSFER_PAIRS:
        if target not in fitted_obs or source not in fitted_obs:
            continue
        tgt_gpu = catalog_for(target)
        others = [s for s in fitted_obs if s != target]
        comm_sys = comm_source(tgt_gpu, others)
        for engine, o in fitted_obs[target]:
            if o.op == "moe_imbalance":
                continue
            src_sys = comm_sys if o.op in ("allreduce", "alltoall") else source
            src_gpu = catalog_for(src_sys) if src_sys else None
            src = {(e, x.key): x for e, x in fitted_obs.get(src_sys, [])}
            s = src.get((engine, o.key))
            if s is None or src_gpu is None:
                continue
            model = obsmod.fit_observations(s, src_gpu)
            pred = obsmod.predict(o, model, tgt_gpu, fitted_on=src_gpu)
            out.append({"target": tgt_gpu.name, "source": src_gpu.name, "engine": engine,
                        "op": o.key, **errors(pred, o.latency)})
    return out


if __name__ == "__main__":
    raise SystemExit(main())
