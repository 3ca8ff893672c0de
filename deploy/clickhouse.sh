#!/usr/bin/env bash
# A private ClickHouse server for tests and local use, from Debian's clickhouse-server
# package, with its own config, data and logs under $PITWATCH_RUN/clickhouse.
# It never touches the system service (/etc/clickhouse-server, /var/lib/clickhouse).
set -euo pipefail

SERVICE=clickhouse
# shellcheck source=deploy/_common.sh
. "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

CLICKHOUSE_TCP_PORT="${CLICKHOUSE_TCP_PORT:-19000}"
CLICKHOUSE_HTTP_PORT="${CLICKHOUSE_HTTP_PORT:-18123}"
CLICKHOUSE_START_TIMEOUT="${CLICKHOUSE_START_TIMEOUT:-60}"
CLICKHOUSE_STOP_TIMEOUT="${CLICKHOUSE_STOP_TIMEOUT:-30}"
CLICKHOUSE_RUN_AS="${CLICKHOUSE_RUN_AS:-}"
CLICKHOUSE_TCP_SECURE_PORT="${CLICKHOUSE_TCP_SECURE_PORT:-19440}"
PITWATCH_TLS_DIR="${PITWATCH_TLS_DIR:-}"
if [[ -n $PITWATCH_TLS_DIR ]]; then
    NATIVE="tls $CLICKHOUSE_TCP_SECURE_PORT"
    NATIVE_PORT=$CLICKHOUSE_TCP_SECURE_PORT
else
    NATIVE="tcp $CLICKHOUSE_TCP_PORT"
    NATIVE_PORT=$CLICKHOUSE_TCP_PORT
fi

RUN_DIR="$PITWATCH_RUN/clickhouse"
DATA_DIR="$RUN_DIR/data"
LOG_DIR="$RUN_DIR/logs"
PIDFILE="$RUN_DIR/clickhouse.pid"
CONFIG="$RUN_DIR/config.xml"
OUTFILE="$RUN_DIR/clickhouse.out"
HTTP_URL="http://$LOOPBACK:$CLICKHOUSE_HTTP_PORT/"

usage() {
    cat <<EOF
Usage: deploy/clickhouse.sh COMMAND

A private ClickHouse server (Debian package clickhouse-server) listening on
$LOOPBACK: native TCP $CLICKHOUSE_TCP_PORT, HTTP $CLICKHOUSE_HTTP_PORT; user 'default', no password.

Commands:
  install        apt-get install clickhouse-server clickhouse-client (as root), once
  start          write config into $RUN_DIR, start, wait until SELECT 1 answers
  stop           stop the server (SIGTERM, then SIGKILL after \$CLICKHOUSE_STOP_TIMEOUT s)
  status         print state; exit 0 when running, 3 when stopped
  client ARGS..  clickhouse-client connected to this server, e.g. client -q 'SELECT 1'
  help           this text

Environment (defaults in brackets):
  CLICKHOUSE_TCP_PORT       native protocol port on 127.0.0.1 [19000]
  CLICKHOUSE_HTTP_PORT      HTTP port on 127.0.0.1 [18123]
  CLICKHOUSE_START_TIMEOUT  seconds to wait for the server [60]
  CLICKHOUSE_STOP_TIMEOUT   seconds before SIGKILL [30]
  CLICKHOUSE_RUN_AS         run the server as this user (e.g. clickhouse) when
                            started by root; the run dir is chown'ed to it [current user]
  PITWATCH_RUN              runtime dir [repo/.run]; everything in \$PITWATCH_RUN/clickhouse

Secure mode (opt-in): when PITWATCH_TLS_DIR is set, the server listens on the TLS
native port only (no plaintext native port), with the certificate in that directory
(ca.pem, server.pem, server-key.pem; the server cert for 127.0.0.1), and has no
passwordless user:
  default          administration, password PITWATCH_CLICKHOUSE_ADMIN_PASSWORD
  pitwatch_writer  the sink: INSERT and the DDL it needs, PITWATCH_CLICKHOUSE_WRITER_PASSWORD
  pitwatch_reader  readonly=1 (dashboards, console, query), PITWATCH_CLICKHOUSE_READER_PASSWORD
  CLICKHOUSE_TCP_SECURE_PORT  TLS native port on 127.0.0.1 [19440]
Passwords: 8 or more of A-Z a-z 0-9 . _ ~ + / = -; users.xml keeps only their SHA-256.
HTTP stays on 127.0.0.1 (the readiness probe logs in as pitwatch_reader there).
EOF
}

# ---------------------------------------------------------------- binaries

# Debian 12 ships /usr/sbin/clickhouse-server (not on a user's PATH) and
# /usr/bin/clickhouse-client; upstream packages ship one /usr/bin/clickhouse.
server_cmd() {
    if command -v clickhouse-server >/dev/null; then
        SERVER_CMD=("$(command -v clickhouse-server)")
    elif [[ -x /usr/sbin/clickhouse-server ]]; then
        SERVER_CMD=(/usr/sbin/clickhouse-server)
    elif command -v clickhouse >/dev/null; then
        SERVER_CMD=("$(command -v clickhouse)" server)
    else
        return 1
    fi
}

client_cmd() {
    if command -v clickhouse-client >/dev/null; then
        CLIENT_CMD=(clickhouse-client)
    elif command -v clickhouse >/dev/null; then
        CLIENT_CMD=(clickhouse client)
    else
        return 1
    fi
}

installed() { server_cmd && client_cmd; }

# ---------------------------------------------------------------- install

cmd_install() {
    if installed; then
        log "installed: ${SERVER_CMD[*]}, ${CLIENT_CMD[*]}"
        return 0
    fi
    local -a sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "not installed, and installing needs root: run 'deploy/clickhouse.sh install' as root"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null || die "apt-get not found: install ClickHouse by hand (clickhouse-server and clickhouse-client)"
    # Refresh the package lists only when they do not know the package yet.
    if ! apt-cache policy clickhouse-server 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        log "apt-get update"
        "${sudo[@]}" apt-get update -q
    fi
    log "apt-get install clickhouse-server clickhouse-client"
    # The package's postinst may start (or try to start) the system service on
    # ports 9000/8123; our server uses its own ports and directories, so no conflict.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        clickhouse-server clickhouse-client
    installed || die "installed the packages but found no clickhouse-server/clickhouse-client binary"
    log "installed: ${SERVER_CMD[*]}, ${CLIENT_CMD[*]}"
}

# ---------------------------------------------------------------- config

write_configs() {
    mkdir -p "$DATA_DIR" "$DATA_DIR/tmp" "$DATA_DIR/user_files" "$DATA_DIR/format_schemas" "$LOG_DIR"
    cat >"$CONFIG" <<EOF
<?xml version="1.0"?>
<!-- Generated by deploy/clickhouse.sh on each start; edits are overwritten. -->
<yandex>
    <logger>
        <level>information</level>
        <log>$LOG_DIR/clickhouse-server.log</log>
        <errorlog>$LOG_DIR/clickhouse-server.err.log</errorlog>
        <size>50M</size>
        <count>3</count>
    </logger>

    <listen_host>$LOOPBACK</listen_host>
$(listen_config)
    <http_port>$CLICKHOUSE_HTTP_PORT</http_port>
    <!-- No interserver_http_port: a single server has no replicas to talk to. -->

    <path>$DATA_DIR/</path>
    <tmp_path>$DATA_DIR/tmp/</tmp_path>
    <user_files_path>$DATA_DIR/user_files/</user_files_path>
    <format_schema_path>$DATA_DIR/format_schemas/</format_schema_path>
    <users_config>$RUN_DIR/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>

    <!-- Small machine: caches are allocated on demand, but cap them anyway. -->
    <max_connections>1024</max_connections>
    <max_concurrent_queries>100</max_concurrent_queries>
    <keep_alive_timeout>3</keep_alive_timeout>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mlock_executable>false</mlock_executable>
</yandex>
EOF
    if secure; then
        users_config_secure >"$RUN_DIR/users.xml"
    else
        users_config_plain >"$RUN_DIR/users.xml"
    fi
}

secure() { [[ -n $PITWATCH_TLS_DIR ]]; }

# check_password VAR: die unless the variable holds a password the scripts can pass on.
check_password() {
    local value=${!1:-}
    [[ -n $value ]] || die "secure mode (PITWATCH_TLS_DIR set) needs $1"
    [[ $value =~ ^[A-Za-z0-9._~+/=-]{8,}$ ]] ||
        die "$1: use 8 or more of A-Z a-z 0-9 . _ ~ + / = - (its value is not shown)"
}

check_secure() {
    local f
    for f in ca.pem server.pem server-key.pem; do
        [[ -r $PITWATCH_TLS_DIR/$f ]] || die "PITWATCH_TLS_DIR=$PITWATCH_TLS_DIR has no readable $f"
    done
    check_password PITWATCH_CLICKHOUSE_ADMIN_PASSWORD
    check_password PITWATCH_CLICKHOUSE_WRITER_PASSWORD
    check_password PITWATCH_CLICKHOUSE_READER_PASSWORD
    check_port CLICKHOUSE_TCP_SECURE_PORT "$CLICKHOUSE_TCP_SECURE_PORT"
}

# The native listener: plaintext, or in secure mode TLS only, with the given cert.
listen_config() {
    if ! secure; then
        echo "    <tcp_port>$CLICKHOUSE_TCP_PORT</tcp_port>"
        return
    fi
    local tls
    tls=$(realpath "$PITWATCH_TLS_DIR")
    cat <<EOF
    <tcp_port_secure>$CLICKHOUSE_TCP_SECURE_PORT</tcp_port_secure>
    <openSSL>
        <server>
            <certificateFile>$tls/server.pem</certificateFile>
            <privateKeyFile>$tls/server-key.pem</privateKeyFile>
            <verificationMode>none</verificationMode>
            <loadDefaultCAFile>false</loadDefaultCAFile>
            <cacheSessions>true</cacheSessions>
            <disableProtocols>sslv2,sslv3,tlsv1,tlsv1_1</disableProtocols>
            <preferServerCiphers>true</preferServerCiphers>
        </server>
    </openSSL>
EOF
}

sha256_of() { printf '%s' "${!1}" | sha256sum | cut -d' ' -f1; }

user_xml() { # NAME PASSWORD_VAR PROFILE
    cat <<EOF
        <$1>
            <password_sha256_hex>$(sha256_of "$2")</password_sha256_hex>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>$3</profile>
            <quota>default</quota>
        </$1>
EOF
}

profiles_xml() {
    cat <<'EOF'
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <load_balancing>random</load_balancing>
        </default>
        <reader>
            <max_memory_usage>4000000000</max_memory_usage>
            <use_uncompressed_cache>0</use_uncompressed_cache>
            <readonly>1</readonly>
        </reader>
    </profiles>
EOF
}

quotas_xml() {
    cat <<'EOF'
    <quotas>
        <default>
            <interval>
                <duration>3600</duration>
                <queries>0</queries>
                <errors>0</errors>
                <result_rows>0</result_rows>
                <read_rows>0</read_rows>
                <execution_time>0</execution_time>
            </interval>
        </default>
    </quotas>
EOF
}

# ClickHouse 18.16 has no GRANT: a user is either read-only (readonly=1) or may write
# and run DDL. The writer has the default profile; the reader the read-only one.
users_config_secure() {
    cat <<EOF
<?xml version="1.0"?>
<!-- Generated by deploy/clickhouse.sh (secure mode): no passwordless user. -->
<yandex>
$(profiles_xml)
    <users>
$(user_xml default PITWATCH_CLICKHOUSE_ADMIN_PASSWORD default)
$(user_xml pitwatch_writer PITWATCH_CLICKHOUSE_WRITER_PASSWORD default)
$(user_xml pitwatch_reader PITWATCH_CLICKHOUSE_READER_PASSWORD reader)
    </users>
$(quotas_xml)
</yandex>
EOF
}

users_config_plain() {
    cat <<EOF
<?xml version="1.0"?>
<!-- Generated by deploy/clickhouse.sh: user 'default', no password, loopback only. -->
<yandex>
$(profiles_xml)
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
$(quotas_xml)
</yandex>
EOF
}

# ---------------------------------------------------------------- helpers

is_running() { pid_alive "$PIDFILE" "$CONFIG"; }

# query SQL: run SQL over HTTP (curl) or, without curl, with clickhouse-client.
query() {
    if secure; then # as the read-only user; the password through stdin, not argv
        command -v curl >/dev/null || die "secure mode needs curl for its readiness probe"
        printf 'user = "pitwatch_reader:%s"\n' "$PITWATCH_CLICKHOUSE_READER_PASSWORD" |
            curl -fsS --max-time 10 -K - "$HTTP_URL" --data-binary "$1"
    elif command -v curl >/dev/null; then
        curl -fsS --max-time 10 "$HTTP_URL" --data-binary "$1"
    else
        client_cmd || return 1
        timeout 15 "${CLIENT_CMD[@]}" --host "$LOOPBACK" --port "$CLICKHOUSE_TCP_PORT" --query "$1" 9>&-
    fi
}

fail_start() {
    warn "$1"
    show_tail "$OUTFILE"
    show_tail "$LOG_DIR/clickhouse-server.err.log" "$ERR_OFFSET"
    if is_running; then stop_pid "$PIDFILE" "$CONFIG" 10 >&2; fi
    exit 1
}

# ---------------------------------------------------------------- commands

cmd_start() {
    take_lock "$RUN_DIR/.lock"
    if is_running; then
        log "already running (pid $(<"$PIDFILE")) on $LOOPBACK $NATIVE, http $CLICKHOUSE_HTTP_PORT"
        return 0
    fi
    rm -f "$PIDFILE"
    server_cmd || die "clickhouse-server not found: run 'deploy/clickhouse.sh install' (as root) first"
    check_port CLICKHOUSE_TCP_PORT "$CLICKHOUSE_TCP_PORT"
    check_port CLICKHOUSE_HTTP_PORT "$CLICKHOUSE_HTTP_PORT"
    [[ $NATIVE_PORT != "$CLICKHOUSE_HTTP_PORT" ]] || die "the native and HTTP ports must differ"
    local port
    if secure; then check_secure; fi
    for port in "$NATIVE_PORT" "$CLICKHOUSE_HTTP_PORT"; do
        if port_open "$port"; then die "port $LOOPBACK:$port is already in use by another process"; fi
    done
    write_configs

    # ClickHouse 18.16 runs as root without complaint; newer releases refuse to run
    # as a user that does not own the data directory. CLICKHOUSE_RUN_AS covers both.
    local -a as_user=()
    if [[ -n $CLICKHOUSE_RUN_AS && $(id -un) != "$CLICKHOUSE_RUN_AS" ]]; then
        ((EUID == 0)) || die "CLICKHOUSE_RUN_AS=$CLICKHOUSE_RUN_AS needs root"
        chown -R "$CLICKHOUSE_RUN_AS:" "$RUN_DIR"
        as_user=(setpriv --reuid="$CLICKHOUSE_RUN_AS" --regid="$(id -g "$CLICKHOUSE_RUN_AS")" --init-groups)
    fi

    local t0=$SECONDS
    : >"$OUTFILE"
    ERR_OFFSET=$(file_size "$LOG_DIR/clickhouse-server.err.log")
    log "starting ${SERVER_CMD[*]} on $LOOPBACK $NATIVE, http $CLICKHOUSE_HTTP_PORT"
    # setsid and setpriv exec, so $! is the server's own pid. cwd = run dir: the
    # server may drop core files or status files in its working directory.
    (cd "$RUN_DIR" && exec setsid "${as_user[@]}" "${SERVER_CMD[@]}" --config-file="$CONFIG" \
        </dev/null >>"$OUTFILE" 2>&1 9>&-) &
    local pid=$!
    echo "$pid" >"$PIDFILE"

    local deadline=$((SECONDS + CLICKHOUSE_START_TIMEOUT)) answer=
    until answer=$(query 'SELECT 1' 2>/dev/null) && [[ $answer == 1 ]]; do
        started_alive "$pid" || fail_start "ClickHouse exited during startup"
        ((SECONDS < deadline)) || fail_start "ClickHouse did not answer SELECT 1 within ${CLICKHOUSE_START_TIMEOUT}s"
        sleep 0.3
    done
    log "ready: $(query 'SELECT version()') on $LOOPBACK $NATIVE, http $CLICKHOUSE_HTTP_PORT (pid $(<"$PIDFILE"), $((SECONDS - t0))s)"
}

cmd_stop() {
    take_lock "$RUN_DIR/.lock"
    stop_pid "$PIDFILE" "$CONFIG" "$CLICKHOUSE_STOP_TIMEOUT"
}

cmd_status() {
    if is_running; then
        log "running (pid $(<"$PIDFILE")) on $LOOPBACK $NATIVE, http $CLICKHOUSE_HTTP_PORT, data in $DATA_DIR"
        return 0
    fi
    log "stopped"
    return 3
}

cmd_client() {
    client_cmd || die "clickhouse-client not found: run 'deploy/clickhouse.sh install' (as root) first"
    local -a tls=()
    # secure: log in with CLICKHOUSE_USER and CLICKHOUSE_PASSWORD in the environment,
    # which the client reads (never --password: argv is in every user's process list)
    if secure; then tls=(--secure); fi
    exec "${CLIENT_CMD[@]}" --host "$LOOPBACK" --port "$NATIVE_PORT" "${tls[@]}" "$@"
}

case "${1:-help}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    client) shift; cmd_client "$@" ;;
    help | -h | --help) usage ;;
    *) usage >&2; exit 2 ;;
esac
