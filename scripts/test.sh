#!/usr/bin/env bash
# The test command: set up .venv, lint, type-check, check the layer rules, run the tests.
# Tests start their own private PostgreSQL servers; they never touch the machine's databases.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
echo "== import-linter"; .venv/bin/lint-imports
echo "== pytest"; .venv/bin/pytest "$@"
