"""The whole pipeline over authenticated, encrypted transport (issue 12): its own Kafka
(SASL_SSL, SCRAM-SHA-512) and ClickHouse (TLS native port, no passwordless user, a
writer and a read-only reader), started through the deploy scripts in secure mode with
certificates made here by openssl, on ports of their own, and stopped by their PIDs
however the tests end.

Shown: produce -> worker -> sink -> ClickHouse -> replay lands the embedded audit's
violation ids; an unauthenticated client is refused by Kafka and by ClickHouse; the
read-only user cannot insert; a failing connection does not print the password."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pitwatch.connect import ClickHouseAuth, KafkaAuth, Secret
from pitwatch.producers.simulate import Floor
from pitwatch.store.base import StoreError
from pitwatch.store.server import ServerStore

from .conftest import ROOT, Expected, _free_port, wait_until

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None or shutil.which("java") is None
    or not (Path("/usr/sbin/clickhouse-server").exists() or shutil.which("clickhouse")),
    reason="needs openssl, java and clickhouse-server")

HOST = "127.0.0.1"
#: the Kafka principals deploy/kafka.sh makes and grants ACLs to, besides the admin
ROLES = ("DEVICE", "WORKER", "SINK", "CONSOLE")


def make_certificates(d: Path) -> None:
    """A CA, and a server certificate for 127.0.0.1 it signed (PKCS#8 key)."""
    d.mkdir(parents=True)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=pitwatch test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server-key.pem",
        "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                               "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")


@dataclass
class Secure:
    """The secure services: their ports, certificates and the passwords made for them."""

    dir: Path
    kafka: str
    ch_port: int
    server_env: dict[str, str]

    @property
    def ca(self) -> str:
        return str(self.dir / "tls" / "ca.pem")

    def client_env(self, ch_user: str, kafka_role: str = "") -> dict[str, str]:
        """What a pitwatch command needs in its environment to log in (the password
        of `ch_user`, and the Kafka user's: the admin's, or that of `kafka_role`)."""
        e = self.server_env
        ch_password = {"pitwatch_writer": e["PITWATCH_CLICKHOUSE_WRITER_PASSWORD"],
                       "pitwatch_reader": e["PITWATCH_CLICKHOUSE_READER_PASSWORD"]}[ch_user]
        role = f"{kafka_role}_" if kafka_role else ""
        return {**os.environ, "PITWATCH_KAFKA": self.kafka,
                "PITWATCH_KAFKA_SECURITY": "SASL_SSL",
                "PITWATCH_KAFKA_USER": e[f"PITWATCH_KAFKA_{role}USER"],
                "PITWATCH_KAFKA_PASSWORD": e[f"PITWATCH_KAFKA_{role}PASSWORD"],
                "PITWATCH_KAFKA_CA_FILE": self.ca,
                "PITWATCH_CLICKHOUSE_USER": ch_user,
                "PITWATCH_CLICKHOUSE_PASSWORD": ch_password,
                "PITWATCH_CLICKHOUSE_SECURE": "1",
                "PITWATCH_CLICKHOUSE_CA_FILE": self.ca}

    def store(self, user: str, database: str) -> ServerStore:
        password = {"pitwatch_writer": "PITWATCH_CLICKHOUSE_WRITER_PASSWORD",
                    "pitwatch_reader": "PITWATCH_CLICKHOUSE_READER_PASSWORD"}[user]
        return ServerStore(HOST, self.ch_port, database, auth=ClickHouseAuth(
            user, Secret(self.server_env[password]), secure=True, ca_file=self.ca))

    def kafka_auth(self, role: str = "") -> KafkaAuth:
        """The admin's Kafka login, or that of `role` (DEVICE, WORKER, SINK, CONSOLE)."""
        e, r = self.server_env, f"{role}_" if role else ""
        return KafkaAuth("SASL_SSL", "SCRAM-SHA-512", e[f"PITWATCH_KAFKA_{r}USER"],
                         Secret(e[f"PITWATCH_KAFKA_{r}PASSWORD"]), self.ca)

    def grant(self, app_id: str, prefix: str) -> None:
        """Each role's ACLs on the topics of `app_id` and `prefix` (deploy/kafka.sh grant)."""
        done = subprocess.run([str(ROOT / "deploy" / "kafka.sh"), "grant"], capture_output=True,
                              text=True, timeout=300, env={
                                  **self.server_env, "PITWATCH_APP_ID": app_id,
                                  "PITWATCH_TOPIC_PREFIX": prefix})
        assert done.returncode == 0, done.stdout + done.stderr
        for k, v in self.server_env.items():
            if "PASSWORD" in k:
                assert v not in done.stdout + done.stderr


def _stop(script: str, env: dict[str, str], pidfile: Path) -> None:
    """The script's stop (SIGTERM by its PID file, then SIGKILL); if that fails, the PID
    itself is killed."""
    subprocess.run([str(ROOT / "deploy" / script), "stop"], env=env, check=False,
                   capture_output=True, timeout=120)
    if pidfile.exists():
        pid = int(pidfile.read_text().strip() or 0)
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def services() -> None:
    """Overrides conftest's: these tests need the secure services below, not the
    plaintext ones on the default ports."""


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    d = tmp_path_factory.mktemp("secure")
    make_certificates(d / "tls")
    kafka_port, controller, ch_port, http = (_free_port() for _ in range(4))
    env = {**os.environ,
           "PITWATCH_CACHE": os.environ.get("PITWATCH_CACHE", str(ROOT / ".cache")),
           "PITWATCH_RUN": str(d / "run"), "PITWATCH_TLS_DIR": str(d / "tls"),
           "KAFKA_PORT": str(kafka_port), "KAFKA_CONTROLLER_PORT": str(controller),
           "CLICKHOUSE_TCP_SECURE_PORT": str(ch_port), "CLICKHOUSE_HTTP_PORT": str(http),
           "PITWATCH_KAFKA_USER": "pitwatch",
           "PITWATCH_KAFKA_PASSWORD": "k-" + secrets.token_hex(12),
           **{f"PITWATCH_KAFKA_{role}_USER": role.lower() for role in ROLES},
           **{f"PITWATCH_KAFKA_{role}_PASSWORD": "p-" + secrets.token_hex(12) for role in ROLES},
           "PITWATCH_CLICKHOUSE_ADMIN_PASSWORD": "a-" + secrets.token_hex(12),
           "PITWATCH_CLICKHOUSE_WRITER_PASSWORD": "w-" + secrets.token_hex(12),
           "PITWATCH_CLICKHOUSE_READER_PASSWORD": "r-" + secrets.token_hex(12)}
    for k in [k for k in env if k.startswith(("PITWATCH_KAFKA_SECURITY", "PITWATCH_CLICKHOUSE_U",
                                              "PITWATCH_CLICKHOUSE_SECURE"))]:
        env.pop(k)
    try:
        for script in ("clickhouse.sh", "kafka.sh"):
            started = subprocess.run([str(ROOT / "deploy" / script), "start"], env=env,
                                     capture_output=True, text=True, timeout=300)
            assert started.returncode == 0, f"{script} start:\n{started.stdout}{started.stderr}"
            for k, v in env.items():  # the scripts print no password either
                if "PASSWORD" in k:
                    assert v not in started.stdout + started.stderr
        yield Secure(d, f"{HOST}:{kafka_port}", ch_port, env)
    finally:
        _stop("kafka.sh", env, d / "run" / "kafka" / "kafka.pid")
        _stop("clickhouse.sh", env, d / "run" / "clickhouse" / "clickhouse.pid")


def test_the_pipeline_over_tls_lands_the_embedded_audits_violations(
        secure: Secure, tmp_path: Path) -> None:
    """produce (SASL_SSL, password from a file) -> worker and sink (writer over TLS),
    with the devices' key registry -> ClickHouse -> replay (reader over TLS, with the
    registry): the violation ids are the embedded audit's, a forged record included."""
    run_id = "s" + secrets.token_hex(5)
    secure.grant(run_id, run_id + "-")
    floor = Floor(4, 12, 25, 0.2)  # its faults include a forgery (SIGNATURE_INVALID)
    events = list(floor.events())
    keys = floor.registry()
    assert keys is not None
    keys.write(tmp_path / "keys.json")
    expected = Expected(events, keys=keys)
    forged = [v for v in expected.violations if v.code == "SIGNATURE_INVALID"]
    assert forged and forged[0].violation_id not in Expected(events).violation_ids
    password_file = tmp_path / "kafka-password"
    password_file.write_text(secure.server_env["PITWATCH_KAFKA_DEVICE_PASSWORD"] + "\n")
    password_file.chmod(0o600)  # a password file its group or others may read is refused
    e = secure.server_env
    worker_env = {**secure.client_env("pitwatch_writer", "WORKER"),  # and its sink:
                  "PITWATCH_SINK_KAFKA_USER": e["PITWATCH_KAFKA_SINK_USER"],
                  "PITWATCH_SINK_KAFKA_PASSWORD": e["PITWATCH_KAFKA_SINK_PASSWORD"],
                  "PITWATCH_KEYS": str(tmp_path / "keys.json")}
    worker_log = tmp_path / "worker.log"
    with worker_log.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "pitwatch.cli", "worker", "--kafka", secure.kafka,
             "--clickhouse", f"{HOST}:{secure.ch_port}", "--clickhouse-db", run_id,
             "--app-id", run_id, "--topic-prefix", run_id + "-", "--partitions", "4",
             "--web-port", str(_free_port()), "--data-dir", str(tmp_path / "worker"),
             "--loglevel", "info"],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=worker_env)
    try:
        files = tmp_path / "events.jsonl"
        from pitwatch.events.files import write_jsonl

        write_jsonl(files, events)
        # the device may not create topics: the worker makes them when it starts
        wait_until("the worker's topics", lambda: run_id + "-table-events" in _topics(secure), 120)
        produce_env = secure.client_env("pitwatch_reader", "DEVICE")
        del produce_env["PITWATCH_KAFKA_PASSWORD"]  # from the file instead
        produced = subprocess.run(
            [sys.executable, "-m", "pitwatch.cli", "produce", str(files), "--kafka",
             secure.kafka, "--topic-prefix", run_id + "-", "--quiet",
             "--kafka-password-file", str(password_file)],
            cwd=ROOT, env=produce_env, capture_output=True, text=True, timeout=300)
        assert produced.returncode == 0, produced.stderr
        assert "may not create or configure the topics" in produced.stderr

        reader = secure.store("pitwatch_reader", run_id)

        def landed() -> bool:
            assert worker.poll() is None, worker_log.read_text()[-4000:]
            try:
                ids = {r["violation_id"] for r in reader.query(
                    "SELECT violation_id FROM violations FINAL")}
                n = reader.query("SELECT count() AS n FROM events FINAL")[0]["n"]
            except StoreError:  # the database is not there yet
                return False
            return ids >= expected.violation_ids and int(n) >= expected.events

        try:
            wait_until("the secure pipeline's rows in ClickHouse", landed, timeout=240)
        except AssertionError:
            raise AssertionError(worker_log.read_text()[-4000:]) from None
        got = {r["violation_id"] for r in reader.query(
            "SELECT violation_id FROM violations FINAL")}
        assert got == expected.violation_ids
        assert expected.violation_ids  # the floor has faults to find
        one = forged[0].round_id
        assert one is not None
        replayed = subprocess.run(
            [sys.executable, "-m", "pitwatch.cli", "replay", one, "--clickhouse",
             f"{HOST}:{secure.ch_port}", "--clickhouse-db", run_id, "--keys",
             str(tmp_path / "keys.json")],
            cwd=ROOT, env=secure.client_env("pitwatch_reader"), capture_output=True,
            text=True, timeout=120)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert one in replayed.stdout and "signatures FAIL" in replayed.stdout
        reader.close()
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    text = worker_log.read_text(errors="replace")
    for k, v in secure.server_env.items():
        if "PASSWORD" in k:
            assert v not in text, f"{k} in the worker's log"


def _topics(secure: Secure) -> set[str]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=secure.kafka, **secure.kafka_auth().kafka_python())
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def test_kafka_refuses_an_unauthenticated_client(secure: Secure) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    # plaintext to the SASL_SSL listener: no TLS handshake, no broker
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=5000,
                      request_timeout_ms=5000).send("anything", b"x").get(10)
    # TLS with the right CA but a wrong password: SCRAM authentication fails
    wrong = KafkaAuth("SASL_SSL", "SCRAM-SHA-512", "pitwatch", Secret("not-the-password"),
                      secure.ca)
    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=5000,
                      **wrong.kafka_python()).send("anything", b"x").get(10)
    # and the right login works: the refusals above are about the login
    ok = KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=30000,
                       **secure.kafka_auth().kafka_python())
    try:
        ok.send("secure-probe", b"x").get(30)
    finally:
        ok.close()


def test_a_device_may_write_only_the_events_topic(secure: Secure) -> None:
    """ACLs (deploy/kafka.sh grant): an authenticated device writes table-events, and is
    refused on the worker's changelog and on the alerts topic; the console reads alerts
    and cannot write them."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError, TopicAuthorizationFailedError

    app = "a" + secrets.token_hex(5)
    prefix = app + "-"
    secure.grant(app, prefix)
    admin = KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=30000,
                          **secure.kafka_auth().kafka_python())
    device = KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=30000,
                           **secure.kafka_auth("DEVICE").kafka_python())
    console = KafkaProducer(bootstrap_servers=secure.kafka, max_block_ms=30000,
                            **secure.kafka_auth("CONSOLE").kafka_python())
    changelog = f"{app}-{prefix}open-rounds-changelog"
    try:
        for topic in (prefix + "table-events", prefix + "alerts", changelog):
            admin.send(topic, key=b"k", value=b"made by the admin").get(30)
        device.send(prefix + "table-events", key=b"k", value=b"x").get(30)
        for topic in (changelog, prefix + "alerts", prefix + "rounds"):
            with pytest.raises(TopicAuthorizationFailedError):
                device.send(topic, key=b"k", value=b"forged").get(30)
        with pytest.raises(KafkaError, match="AuthorizationFailed"):  # no write anywhere
            console.send(prefix + "alerts", key=b"k", value=b"forged").get(30)
    finally:
        for p in (admin, device, console):
            p.close()
    reader = KafkaConsumer(prefix + "alerts", bootstrap_servers=secure.kafka,
                           auto_offset_reset="earliest",
                           **secure.kafka_auth("CONSOLE").kafka_python())
    read: list[bytes] = []

    def first_alert() -> list[bytes]:
        for records in reader.poll(timeout_ms=1000).values():
            read.extend(m.value for m in records)
        return read

    try:  # on a deadline: a consumer's idle time-out is timing luck on a loaded host
        assert wait_until("the console reading alerts", first_alert, 120)[:1] \
            == [b"made by the admin"]
    finally:
        reader.close()


def test_clickhouse_refuses_an_unauthenticated_client(secure: Secure) -> None:
    for auth in (ClickHouseAuth(secure=True, ca_file=secure.ca),  # default, no password
                 ClickHouseAuth("pitwatch_reader", Secret("not-the-password"), True,
                                secure.ca),
                 ClickHouseAuth("pitwatch_reader", Secret(
                     secure.server_env["PITWATCH_CLICKHOUSE_READER_PASSWORD"]))):  # no TLS
        store = ServerStore(HOST, secure.ch_port, "default", auth=auth)
        with pytest.raises(StoreError):
            store.query("SELECT 1 AS one")
        store.close()
    reader = secure.store("pitwatch_reader", "default")
    assert reader.query("SELECT 1 AS one") == [{"one": 1}]
    reader.close()


def test_the_read_only_user_cannot_insert_or_drop(secure: Secure) -> None:
    db = "r" + secrets.token_hex(5)
    writer = secure.store("pitwatch_writer", db)
    writer.setup()
    reader = secure.store("pitwatch_reader", db)
    try:
        for sql in ("CREATE TABLE t (a UInt8) ENGINE = Memory", "DROP TABLE violations"):
            with pytest.raises(StoreError, match="readonly"):
                reader._execute(sql)
        with pytest.raises(StoreError, match="readonly"):
            reader._execute("INSERT INTO violations (violation_id) VALUES", [("forged",)])
        assert reader.query("SELECT count() AS n FROM violations")[0]["n"] == 0
    finally:
        writer._execute(f"DROP DATABASE IF EXISTS {db}")
        writer.close()
        reader.close()


def test_a_failing_connection_does_not_print_the_password(
        secure: Secure, tmp_path: Path) -> None:
    """`replay` with a wrong ClickHouse password and `produce` with a wrong Kafka
    password fail with a clear message, and neither password appears in what they say."""
    env = secure.client_env("pitwatch_reader")
    env["PITWATCH_CLICKHOUSE_PASSWORD"] = wrong_ch = "wrong-ch-" + secrets.token_hex(8)
    env["PITWATCH_KAFKA_PASSWORD"] = wrong_kafka = "wrong-kafka-" + secrets.token_hex(8)
    replayed = subprocess.run(
        [sys.executable, "-m", "pitwatch.cli", "replay", "R-1", "--clickhouse",
         f"{HOST}:{secure.ch_port}", "--clickhouse-db", "default"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 2
    assert "password" in replayed.stderr.lower()  # ClickHouse says why
    started = time.monotonic()
    produced = subprocess.run(
        [sys.executable, "-m", "pitwatch.cli", "produce", "--tables", "1", "--rounds", "1",
         "--kafka", secure.kafka, "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert produced.returncode != 0, time.monotonic() - started
    for out in (replayed.stdout, replayed.stderr, produced.stdout, produced.stderr):
        assert wrong_ch not in out and wrong_kafka not in out
        for k, v in secure.server_env.items():
            if "PASSWORD" in k:
                assert v not in out


def test_query_reads_clickhouse_read_only_whoever_logs_in(secure: Secure) -> None:
    """`pitwatch query --clickhouse` answers a SELECT as the reader and refuses DROP
    (exit 2); its session is read-only even for a user that could write."""
    db = "q" + secrets.token_hex(5)
    writer = secure.store("pitwatch_writer", db)
    writer.setup()
    try:
        def query(user: str, sql: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "pitwatch.cli", "query", "--clickhouse",
                 f"{HOST}:{secure.ch_port}", "--clickhouse-db", db, "--format", "csv", sql],
                cwd=ROOT, env=secure.client_env(user), capture_output=True, text=True,
                timeout=120)

        read = query("pitwatch_reader", "SELECT count() AS n FROM violations")
        assert (read.returncode, read.stdout) == (0, "n\n0\n"), read.stderr
        dropped = query("pitwatch_writer", "DROP TABLE violations")
        assert dropped.returncode == 2 and "DROP refused" in dropped.stderr
        session = secure.store("pitwatch_writer", db)
        session.read_only()
        with pytest.raises(StoreError, match="readonly"):
            session._execute("CREATE TABLE t (a UInt8) ENGINE = Memory")
        session.close()
        assert {r["name"] for r in writer.query(
            "SELECT name FROM system.tables WHERE database = {d:String}", {"d": db})} \
            >= {"violations"}
    finally:
        writer._execute(f"DROP DATABASE IF EXISTS {db}")
        writer.close()
