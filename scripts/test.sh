#!/usr/bin/env bash
# Run every check and test: lint, types, unit tests, then the integration tests against
# real Kafka and ClickHouse, which this script starts (deploy/services.sh) and stops by
# PID however the tests end.
#
# What does not compete for a core runs side by side (CI has two): mypy beside the fuzz
# (one process each), and Kafka and ClickHouse fetched, installed and started in the
# background from then on (downloads and waits; idle once up, and the unit tests do not
# use them), ready when the integration tests begin. A side step's output is printed
# where its step would stand, and its failure fails the run there.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
SIDE=$(mktemp -d)
SERVICES='' MYPY=''

# the services, and the cluster the drills start (tests/integration/test_cluster_drills.py),
# are stopped whatever ends the run; a start still under way is waited for first, so that
# what it started is found by its PID file and stopped too
stop_all() {
    if [[ -n $MYPY ]]; then kill "$MYPY" 2>/dev/null || true; fi
    if [[ -n $SERVICES ]]; then
        wait "$SERVICES" 2>/dev/null || true
        deploy/services.sh stop || true
        deploy/cluster.sh stop >/dev/null || true
    fi
    rm -rf "$SIDE"
}
trap stop_all EXIT

# side NAME PID: wait for the side step, print its output, and fail the run if it failed
side() {
    local rc=0
    wait "$2" || rc=$?
    cat "$SIDE/$1"
    ((rc == 0)) || { echo "$1 failed (exit $rc)" >&2; exit "$rc"; }
}

echo "== ruff"; $BIN/ruff check .
echo "== system packages"; scripts/system-deps.sh
deploy/services.sh start >"$SIDE/services" 2>&1 &
SERVICES=$!
$BIN/mypy >"$SIDE/mypy" 2>&1 &
MYPY=$!
echo "== C reader under ASan and UBSan, fuzzed against fastavro"
# a fixed seed by default, so that a red run is reproduced by running it again
# (`make fuzz` draws a new one each time, and fuzzes for 120 s rather than CI's 60)
tests/fuzz/sanitize.sh "${FUZZ_SECONDS:-60}" "${FUZZ_SEED:-1}"
echo "== mypy"; side mypy "$MYPY"
MYPY=''
echo "== unit tests"
# worksteal: each worker starts on one contiguous half (a module's tests, and so its
# module-scoped fixtures, mostly on one worker, built once), and a worker that runs out
# takes half of what the other has left
$BIN/python -m pytest -q -n auto --dist worksteal -m "not integration" -p no:cacheprovider \
    --durations=25

echo "== services"; side services "$SERVICES"
echo "== lookup tests against the ClickHouse server"
# the unit tests' server cases (skipped above: no server named), now that one runs
PITWATCH_TEST_CLICKHOUSE="127.0.0.1:${CLICKHOUSE_TCP_PORT:-19000}" $BIN/python -m pytest -q \
    -p no:cacheprovider -k server tests/unit/test_store_lookups.py \
    tests/unit/test_console_first_page.py tests/unit/test_console_pinned.py \
    tests/unit/test_store_params.py
echo "== integration tests"
PITWATCH_SERVICES=1 $BIN/python -m pytest -q -m integration -p no:cacheprovider --durations=25
