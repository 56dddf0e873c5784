"""numpy's float path is pinned before numpy loads (perfmodel/float_path.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from perfmodel import float_path


def _fresh(code: str, **env: str | None) -> dict:
    """Run ``code`` in a new interpreter (the environment less NPY_DISABLE_CPU_FEATURES,
    plus ``env``) and return the JSON it prints."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")}
    e.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


PROBE = """
import json, os
{first}
import scipy.linalg  # scipy loads its own OpenBLAS
from perfmodel.float_path import pinned
print(json.dumps({{"env": os.environ.get("NPY_DISABLE_CPU_FEATURES"),
                  "blas": os.environ.get("OPENBLAS_CORETYPE"), "pinned": pinned()}}))
"""


def test_the_test_processes_run_the_pinned_path():
    # conftest imports perfmodel.float_path first: were numpy loaded before it, an
    # AVX-512 machine would score the shipped figures on other loops
    assert float_path.pinned()


def test_importing_the_planner_pins_numpy_before_it_loads():
    got = _fresh(PROBE.format(first="import planner"), OPENBLAS_CORETYPE=None)
    assert got["env"] == " ".join(float_path.AVX512_GROUPS) and got["pinned"]
    assert got["blas"] == ("Haswell" if float_path._has_avx2_fma() else None)


def test_a_users_own_setting_wins():
    got = _fresh(PROBE.format(first="import planner"), NPY_DISABLE_CPU_FEATURES="",
                 OPENBLAS_CORETYPE="Sandybridge")
    assert got["env"] == "" and got["blas"] == "Sandybridge"


def test_numpy_loaded_first_keeps_its_loops_and_says_so():
    code = PROBE.format(first="import numpy\nimport planner")
    got = _fresh(code)
    assert got["env"] is None and got["blas"] is None  # too late: nothing is set
    has_avx512 = _fresh("import json\nfrom numpy._core._multiarray_umath import "
                        "__cpu_features__ as f\nprint(json.dumps(bool(f['X86_V4'])))")
    assert got["pinned"] is (not has_avx512)


def test_numpy_is_pinned_only_when_it_is_a_published_wheel(tmp_path):
    # a build made on the machine may carry AVX-512 in its baseline, and numpy refuses
    # to start with a baseline feature disabled: such a numpy is left alone
    def site(*tags: str):
        d = tmp_path / f"site{len(list(tmp_path.iterdir()))}"
        (d / "numpy-2.4.6.dist-info").mkdir(parents=True)
        (d / "numpy-2.4.6.dist-info" / "WHEEL").write_text(
            "Wheel-Version: 1.0\nGenerator: meson\n" + "".join(f"Tag: {t}\n" for t in tags))
        return d

    assert float_path.published_wheel(site("cp311-cp311-manylinux_2_28_x86_64"))
    assert float_path.published_wheel(site("cp311-cp311-macosx_14_0_x86_64"))
    assert not float_path.published_wheel(site("cp311-cp311-linux_x86_64"))
    assert not float_path.published_wheel(site())
    assert not float_path.published_wheel(tmp_path / "nowhere")
