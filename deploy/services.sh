#!/usr/bin/env bash
# Start, stop or inspect both local services: Kafka (deploy/kafka.sh) and
# ClickHouse (deploy/clickhouse.sh). Start fetches/installs whatever is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
    cat <<'EOF'
Usage: deploy/services.sh start|stop|status

  start   fetch the Kafka jars and install ClickHouse if needed, then start both
          (Kafka on 127.0.0.1:19092, ClickHouse on 127.0.0.1:19000 native / 18123 HTTP)
  stop    stop both (each by its PID file); exits 0 when both are stopped
  status  print both states; exit 0 only when both are running

Each service's own settings (ports, timeouts, PITWATCH_CACHE, PITWATCH_RUN) are
read from the environment: see deploy/kafka.sh help and deploy/clickhouse.sh help.
EOF
}

case "${1:-help}" in
    start)
        "$HERE/clickhouse.sh" install
        "$HERE/kafka.sh" fetch
        "$HERE/clickhouse.sh" start
        "$HERE/kafka.sh" start
        ;;
    stop)
        rc=0
        "$HERE/kafka.sh" stop || rc=1
        "$HERE/clickhouse.sh" stop || rc=1
        exit "$rc"
        ;;
    status)
        rc=0
        "$HERE/kafka.sh" status || rc=3
        "$HERE/clickhouse.sh" status || rc=3
        exit "$rc"
        ;;
    help | -h | --help) usage ;;
    *) usage >&2; exit 2 ;;
esac
