#!/usr/bin/env bash
# Run every check and test: lint, types, unit tests, then the integration tests against
# real Kafka and ClickHouse, which this script starts (deploy/services.sh) and stops by
# PID however the tests end.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin

echo "== ruff"; $BIN/ruff check .
echo "== mypy"; $BIN/mypy
echo "== system packages"; scripts/system-deps.sh
echo "== C reader under ASan and UBSan, fuzzed against fastavro"
# a fixed seed by default, so that a red run is reproduced by running it again
# (`make fuzz` draws a new one each time, and fuzzes for 120 s rather than CI's 60)
tests/fuzz/sanitize.sh "${FUZZ_SECONDS:-60}" "${FUZZ_SEED:-1}"
echo "== unit tests"; $BIN/python -m pytest -q -n auto -m "not integration" -p no:cacheprovider

echo "== services"
# the cluster the drills start (tests/integration/test_cluster_drills.py) is stopped
# too, whatever ends the run
trap 'deploy/services.sh stop; deploy/cluster.sh stop >/dev/null' EXIT
deploy/services.sh start
echo "== integration tests"
PITWATCH_SERVICES=1 $BIN/python -m pytest -q -m integration -p no:cacheprovider
