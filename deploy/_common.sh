# Shared helpers for the deploy scripts (kafka.sh, zookeeper.sh, clickhouse.sh, ...). Source it; do not run it.
# shellcheck shell=bash

DEPLOY_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$DEPLOY_DIR/.." && pwd)"
PITWATCH_CACHE="$(realpath -m "${PITWATCH_CACHE:-$REPO_DIR/.cache}")"
PITWATCH_RUN="$(realpath -m "${PITWATCH_RUN:-$REPO_DIR/.run}")"
LOOPBACK=127.0.0.1

log() { printf '%s: %s\n' "$SERVICE" "$*"; }
warn() { printf '%s: %s\n' "$SERVICE" "$*" >&2; }
die() { printf '%s: error: %s\n' "$SERVICE" "$*" >&2; exit 1; }

# Hold an exclusive lock on FILE for the rest of the script (fd 9), so that two
# concurrent start/stop calls (e.g. parallel test sessions) do not race.
# Every process we launch must close fd 9 (`9>&-`), or it would keep the lock.
take_lock() {
    local file=$1
    mkdir -p "$(dirname "$file")"
    exec 9>"$file"
    flock -w "${PITWATCH_LOCK_TIMEOUT:-300}" 9 || die "could not lock $file"
}

# check_port NAME VALUE: die unless VALUE is a TCP port number.
check_port() {
    if [[ ! $2 =~ ^[0-9]+$ ]] || (($2 < 1 || $2 > 65535)); then
        die "$1=$2 is not a port number (1-65535)"
    fi
}

# port_open PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
    timeout 3 bash -c "exec 3<>/dev/tcp/$LOOPBACK/$1" 2>/dev/null
}

# pid_alive PIDFILE MARKER: true if the pid in PIDFILE is a live process whose
# command line contains MARKER (guards against a stale pid reused by another process;
# a zombie has an empty command line and so counts as dead).
pid_alive() {
    local pidfile=$1 marker=$2 pid
    [[ -s $pidfile ]] || return 1
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker"
}

# started_alive PID: true until a server this script has just started exits. Not
# pid_alive: until the forked shell has exec'd the server, its command line is the
# script's own, without the marker, and a loaded machine made a start fail on that
# moment ("exited during startup" with nothing in the logs, then found running). A
# process gone, or a zombie, is what exited.
started_alive() {
    local state
    [[ -r /proc/$1/stat ]] || return 1
    state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ -n $state && ${state%% *} != Z ]]
}

# stop_pid PIDFILE MARKER TIMEOUT: SIGTERM, wait up to TIMEOUT s, then SIGKILL; waits for exit.
stop_pid() {
    local pidfile=$1 marker=$2 timeout=$3 pid waited=0
    if ! pid_alive "$pidfile" "$marker"; then
        rm -f "$pidfile"
        log "not running"
        return 0
    fi
    pid=$(<"$pidfile")
    log "stopping (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    while pid_alive "$pidfile" "$marker"; do
        if ((waited >= timeout * 10)); then
            warn "still running after ${timeout}s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            waited=0
            while pid_alive "$pidfile" "$marker" && ((waited < 100)); do
                sleep 0.1
                waited=$((waited + 1))
            done
            pid_alive "$pidfile" "$marker" && die "pid $pid survived SIGKILL"
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    rm -f "$pidfile"
    log "stopped"
}

# file_size FILE: size in bytes, 0 if missing (remember it before a start...).
file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# show_tail FILE [OFFSET]: ...then print to stderr the last lines written after OFFSET,
# so a failed start shows its own log lines, not those of an earlier run.
show_tail() {
    local f=$1 offset=${2:-0}
    (($(file_size "$f") > offset)) || return 0
    printf -- '----- last lines of %s -----\n' "$f" >&2
    tail -c "+$((offset + 1))" "$f" | tail -n "${PITWATCH_TAIL_LINES:-40}" >&2
}

# fetch_jars NAME VERSION WRITE_POM [ADD_JARS]: the runtime jars of the pom that the
# function WRITE_POM writes (given its path), fetched once from Maven Central into
# $LIBS under a lock of their own (fetch is called from inside start, which holds fd 9).
# ADD_JARS, when named, is called with the pom and the new libs directory before they
# are kept. $LIBS appears only once complete; `have_libs` says whether it is.
fetch_jars() {
    local name=$1 version=$2 write=$3 add=${4:-}
    if have_libs; then
        log "jars for $name $version already in $LIBS"
        return 0
    fi
    command -v mvn >/dev/null || die "mvn (Maven) is needed to fetch the $name jars once; install it (apt-get install maven)"
    mkdir -p "$PITWATCH_CACHE"
    (
        local key
        key=$(tr '[:upper:]' '[:lower:]' <<<"$name")
        exec 8>"$PITWATCH_CACHE/.$key-$version.lock"
        flock -w 900 8 || die "could not lock the jar cache"
        if have_libs; then exit 0; fi
        local tmp
        tmp=$(mktemp -d "$PITWATCH_CACHE/.$key-$version.XXXXXX")
        trap 'rm -rf "$tmp"' EXIT
        log "fetching $name $version jars from Maven Central (one time)"
        "$write" "$tmp/pom.xml"
        # mvn's output goes to a log, shown only on failure
        if ! maven "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
            -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1 8>&-; then
            show_tail "$tmp/mvn.log"
            die "mvn dependency:copy-dependencies failed for $name $version"
        fi
        [[ -z $add ]] || "$add" "$tmp/pom.xml" "$tmp/libs"
        mkdir -p "$HOME_DIR"
        cp "$tmp/pom.xml" "$HOME_DIR/pom.xml"
        rm -rf "$LIBS"
        mv "$tmp/libs" "$LIBS" # atomic: libs/ exists only once complete
        log "$(find "$LIBS" -name '*.jar' | wc -l) jars in $LIBS"
    )
}

# maven POM GOAL [ARGS...]: mvn, quiet and colourless, on POM.
maven() {
    local pom=$1
    shift
    mvn -B -Dstyle.color=never -f "$pom" "$@"
}
