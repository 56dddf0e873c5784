"""One float path on every x86-64 machine: numpy's and OpenBLAS's AVX-512 code left out.

numpy picks the machine code of its ufuncs when it is imported, by the CPU it finds
(numpy 2.x: a baseline, then the groups ``X86_V3`` -- AVX2 and FMA -- and ``X86_V4``,
``AVX512_ICL``, ``AVX512_SPR`` -- AVX-512); OpenBLAS, which numpy and scipy each load,
picks its kernels the same way (``Haswell`` on an AVX2 machine, ``SkylakeX`` on an
AVX-512 one).  The AVX-512 code rounds some float64 results differently in the last
bits (exp, log, power, sums, products), and a planner amplifies last bits: a simulated
router share crosses a tie, a bisection stops one step apart, a least-squares fit moves.
Measured on an AVX-512 machine against the shipped figures, which an AVX2 machine made:

* numpy's AVX-512 loops moved one published row's prediction
  (``amd-dstack-mi300x-dsr1-sgl-c128-3k3k``) from 1,027.81 to 1,027.45 output tokens/s,
  an error band's edge in the fifth digit and the worked example's router share from
  32.2 % to 31.0 % (docs/validation.md, error_bands.json, the serving-stack factors and
  docs/example.md all failed their "is current" tests);
* with those loops off, OpenBLAS's SkylakeX kernels still changed the L40S kernel fit
  (``scripts/calibrate_kernels.py --systems l40s --check`` failed); with ``Haswell``
  kernels it is byte for byte the shipped file.

The same inputs and seed must give the same plan on a laptop, a CI runner and a cloud
VM whatever their vector units, so this module asks both libraries, before numpy is
imported, for the AVX2 path:

* ``NPY_DISABLE_CPU_FEATURES`` -- names a CPU lacks are ignored.  Set only for a numpy
  from a published wheel, whose baseline is below AVX2: numpy refuses to start with a
  baseline feature disabled, which a build made with ``-march=native`` on an AVX-512
  machine would have.
* ``OPENBLAS_CORETYPE=Haswell`` -- only on a Linux x86-64 CPU with AVX2 and FMA (an
  older CPU cannot run those kernels and keeps its own).

It is imported first by ``perfmodel`` and ``planner``, and ruff's isort sections sort
it first in scripts and the test conftest.  A process that imported numpy earlier keeps
the code it got (:func:`pinned` tells); a variable you set yourself, even to an empty
string, wins.  Not reached: torch's own CPU kernels (the Bayesian-optimisation
searches), and Arm machines, whose NEON code may differ from x86 code in the last bits.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from pathlib import Path

#: numpy's AVX-512 dispatch groups (numpy 2.x names).
AVX512_GROUPS = ("X86_V4", "AVX512_ICL", "AVX512_SPR")
#: OpenBLAS's AVX2 kernels (``Zen`` is another name for them).
OPENBLAS_AVX2 = ("Haswell", "Zen")


def _has_avx2_fma() -> bool:
    """Whether this is a Linux x86-64 CPU that runs AVX2 and FMA code."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx2", "fma"} <= flags
    except OSError:
        pass
    return False


#: Wheel platform tags of numpy builds whose baseline is numpy's default (below AVX2).
_DEFAULT_BASELINE_TAGS = ("manylinux", "musllinux", "macosx", "win")


def _numpy_dispatches_avx512() -> bool:
    """Whether the installed numpy is a published wheel, found without importing it.
    Such a build dispatches AVX-512 at run time and lets it be disabled; a build made
    on the machine may have it in its baseline, and numpy refuses to start with a
    baseline feature disabled."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.submodule_search_locations:
        return False
    return published_wheel(Path(next(iter(spec.submodule_search_locations))).parent)


def published_wheel(site: Path, dist: str = "numpy") -> bool:
    """Whether ``dist``'s ``WHEEL`` file in ``site`` carries only the platform tags of
    published builds (:data:`_DEFAULT_BASELINE_TAGS`); False without one."""
    for wheel in sorted(site.glob(f"{dist}-*.dist-info/WHEEL")):
        tags = [ln for ln in wheel.read_text().splitlines() if ln.startswith("Tag:")]
        return bool(tags) and all(any(t in ln for t in _DEFAULT_BASELINE_TAGS)
                                  for ln in tags)
    return False


if "numpy" not in sys.modules:
    if _numpy_dispatches_avx512():
        os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", " ".join(AVX512_GROUPS))
    if _has_avx2_fma():
        os.environ.setdefault("OPENBLAS_CORETYPE", OPENBLAS_AVX2[0])


def pinned() -> bool:
    """Whether numpy runs without its AVX-512 loops and every OpenBLAS loaded in this
    process with AVX2 kernels (True on a CPU that has no AVX-512)."""
    from numpy._core._multiarray_umath import __cpu_features__

    if any(__cpu_features__.get(g, False) for g in AVX512_GROUPS):
        return False
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # cannot tell; numpy's part holds
        return True
    avx512 = bool(__cpu_features__.get("AVX512F"))  # the CPU's, whatever numpy runs
    return all(i.get("architecture") in OPENBLAS_AVX2 or not avx512
               for i in threadpool_info() if i.get("internal_api") == "openblas")
