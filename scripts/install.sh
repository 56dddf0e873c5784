#!/usr/bin/env bash
# Installs the planner into ./.venv (Python 3.11) with the CPU build of torch.
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch first, pinned to the CPU build: a bare `torch` requirement (botorch pulls one)
# would otherwise resolve to a CUDA wheel of several GB.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt "torch==2.13.0" 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
# dev: the test tools; calibrate: the kernel database the calibration script and its
# tests read (the planner itself needs only the fitted tables shipped in the package);
# ray: --workers / --ray-address, whose equivalence to serial runs the tests check.
# constraints.txt: the exact versions the shipped figures were generated with (a newer
# release of any dependency may move a simulated figure in the last digit).
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt \
  -e ".[dev,calibrate,ray]" 2>&1 \
  | grep -vE "is ignored: it is neither a file nor a directory|BuildBackendWarning|^\s" || true
.venv/bin/python -c "import torch, botorch, ax, pulp, highspy; assert '+cpu' in torch.__version__ or not torch.cuda.is_available()"
