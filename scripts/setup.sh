#!/usr/bin/env bash
# Creates .venv (if missing) and installs cdc-lakehouse with its development extras into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
echo "installed: $(.venv/bin/cdc-lakehouse --help | head -1)"
