#!/usr/bin/env bash
# The demo: set up .venv, then capture a throwaway local PostgreSQL into ./demo-lakehouse.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/cdc-lakehouse demo "$@"
