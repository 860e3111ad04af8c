#!/usr/bin/env bash
# The test command: set up the machine and .venv, lint, type-check, check the layer rules, run
# the tests. Tests start their own private database servers; they never touch the machine's.
#
# With no arguments the suite runs in two pytest processes at once: everything with silver on
# the Sail engine, and beside it the engine-parametrised tests on classic Spark + Delta plus the
# tests that start classic Spark themselves (marker classic_spark: streaming, spark-submit,
# SIGKILL of the Spark driver, the spark-submit runs). pyspark cannot hold both engines' sessions
# in one process at the same time, and the two halves share the two cores. Both must pass. The
# marker classic_subprocess (classic tests whose Spark runs only in child processes) lets the
# halves be rebalanced; today they run in the classic half, the Sail half being the longer one.
# With arguments, one pytest runs them on both engines: scripts/test.sh tests/silver -x
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
echo "== import-linter"; .venv/bin/lint-imports
if [ $# -gt 0 ]; then
  echo "== pytest"; exec .venv/bin/pytest "$@"
fi

mkdir -p logs
classic_log=logs/pytest-classic-spark.log
echo "== pytest, classic Spark + Delta half, in the background (log: $classic_log)"
.venv/bin/pytest --engines=spark --engine-tests-only --durations=20 > "$classic_log" 2>&1 &
classic_pid=$!
trap 'kill "$classic_pid" 2>/dev/null || true' EXIT
echo "== pytest, everything else, silver on Sail"
set +e
.venv/bin/pytest --engines=sail -m "not classic_spark" --durations=20
sail_rc=$?
wait "$classic_pid"
classic_rc=$?
set -e
trap - EXIT
echo "== pytest, classic Spark + Delta half (exit $classic_rc)"
cat "$classic_log"
echo "== pytest exit codes: Sail half $sail_rc, classic Spark half $classic_rc"
[ "$sail_rc" -eq 0 ] && [ "$classic_rc" -eq 0 ]
