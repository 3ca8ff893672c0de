"""Connection security from the environment and flags (pitwatch.connect): what each
client library is given, the errors that name the setting, and that a password never
shows in a repr, an error or a command's --help."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from pitwatch.cli import main
from pitwatch.connect import (
    ClickHouseAuth,
    ConnectionConfigError,
    KafkaAuth,
    Secret,
    add_connection_flags,
    apply_connection_flags,
)
from pitwatch.topics import replication

PASSWORD = "s3cr3t-Pa55word-never-shown"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A private os.environ, without the caller's PITWATCH_* settings."""
    mine = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    monkeypatch.setattr(os, "environ", mine)
    return mine


def _secret_file(path: Path, text: str) -> Path:
    """A password file as it must be: its owner's alone."""
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_a_secret_hides_itself_in_repr_str_and_format() -> None:
    s = Secret(PASSWORD)
    assert PASSWORD not in repr(s) + str(s) + f"{s}" + f"{s!r}"
    assert s.reveal() == PASSWORD
    auth = KafkaAuth("SASL_SSL", "SCRAM-SHA-512", "u", s, "")
    assert PASSWORD not in repr(auth)
    assert PASSWORD not in repr(ClickHouseAuth("u", s))


def test_plaintext_is_the_default_and_adds_nothing(env: dict[str, str]) -> None:
    auth = KafkaAuth.from_env()
    assert auth.security_protocol == "PLAINTEXT"
    assert auth.kafka_python() == {} and auth.aiokafka() == {} and auth.faust() == {}
    assert ClickHouseAuth.from_env().driver("127.0.0.1") == {"user": "default", "password": ""}


def test_sasl_ssl_gives_scram_and_tls_to_the_clients(env: dict[str, str], tmp_path: Path) -> None:
    env |= {"PITWATCH_KAFKA_SECURITY": "sasl_ssl", "PITWATCH_KAFKA_USER": "pw",
            "PITWATCH_KAFKA_PASSWORD": PASSWORD}
    kw = KafkaAuth.from_env().kafka_python()
    assert kw["security_protocol"] == "SASL_SSL"
    assert kw["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kw["sasl_plain_username"], kw["sasl_plain_password"]) == ("pw", PASSWORD)
    assert kw["ssl_context"].verify_mode.name == "CERT_REQUIRED"
    creds = KafkaAuth.from_env().faust()["broker_credentials"]
    assert creds.protocol.value == "SASL_SSL" and creds.mechanism.value == "SCRAM-SHA-512"
    assert PASSWORD not in repr(creds)


def test_sasl_ssl_without_a_password_names_what_is_missing(env: dict[str, str]) -> None:
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_SSL", "PITWATCH_KAFKA_USER": "pw"}
    with pytest.raises(ConnectionConfigError, match="PITWATCH_KAFKA_PASSWORD"):
        KafkaAuth.from_env()


def test_the_sink_logs_in_as_its_own_user_when_one_is_set(env: dict[str, str],
                                                         tmp_path: Path) -> None:
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_SSL", "PITWATCH_KAFKA_USER": "worker",
            "PITWATCH_KAFKA_PASSWORD": PASSWORD}
    assert KafkaAuth.sink_from_env() == KafkaAuth.from_env()  # none set: the worker's
    env["PITWATCH_SINK_KAFKA_USER"] = "sink"
    with pytest.raises(ConnectionConfigError, match="PITWATCH_SINK_KAFKA_PASSWORD"):
        KafkaAuth.sink_from_env()
    _secret_file(tmp_path / "pw", "sink-" + PASSWORD + "\n")
    env["PITWATCH_SINK_KAFKA_PASSWORD_FILE"] = str(tmp_path / "pw")
    kw = KafkaAuth.sink_from_env().kafka_python()
    assert (kw["sasl_plain_username"], kw["sasl_plain_password"]) == ("sink", "sink-" + PASSWORD)
    assert KafkaAuth.from_env().user == "worker"  # the worker itself is unchanged


@pytest.mark.parametrize(("var", "value", "says"), [
    ("PITWATCH_KAFKA_SECURITY", "SASL_SCRAM", "PLAINTEXT, SSL, SASL_SSL"),
    ("PITWATCH_KAFKA_SASL_MECHANISM", "PLAIN", "SCRAM-SHA-512"),
    ("PITWATCH_KAFKA_CA_FILE", "/nonexistent/ca.pem", "no such file"),
    ("PITWATCH_KAFKA_PASSWORD_FILE", "/nonexistent/pw", "cannot read"),
])
def test_a_bad_kafka_setting_is_named(env: dict[str, str], var: str, value: str,
                                      says: str) -> None:
    env[var] = value
    with pytest.raises(ConnectionConfigError, match=var) as e:
        KafkaAuth.from_env()
    assert says in str(e.value)


def test_a_password_comes_from_its_file_first_line(env: dict[str, str], tmp_path: Path) -> None:
    f = _secret_file(tmp_path / "pw", PASSWORD + "\nnot this line\n")
    env["PITWATCH_CLICKHOUSE_PASSWORD_FILE"] = str(f)
    assert ClickHouseAuth.from_env().driver("127.0.0.1")["password"] == PASSWORD
    env["PITWATCH_CLICKHOUSE_PASSWORD"] = "other"
    with pytest.raises(ConnectionConfigError, match="not both") as e:
        ClickHouseAuth.from_env()
    assert PASSWORD not in str(e.value)


def test_clickhouse_secure_verifies_the_servers_cert(env: dict[str, str], tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env |= {"PITWATCH_CLICKHOUSE_USER": "pitwatch_reader", "PITWATCH_CLICKHOUSE_PASSWORD":
            PASSWORD, "PITWATCH_CLICKHOUSE_SECURE": "1",
            "PITWATCH_CLICKHOUSE_CA_FILE": str(ca)}
    assert ClickHouseAuth.from_env().driver("127.0.0.1") == {
        "user": "pitwatch_reader", "password": PASSWORD, "secure": True, "verify": True,
        "ca_certs": str(ca)}
    env["PITWATCH_CLICKHOUSE_SECURE"] = "yes please"
    with pytest.raises(ConnectionConfigError, match="PITWATCH_CLICKHOUSE_SECURE"):
        ClickHouseAuth.from_env()


def test_flags_win_over_the_environment(env: dict[str, str], tmp_path: Path) -> None:
    f = tmp_path / "pw"
    _secret_file(f, PASSWORD)
    env |= {"PITWATCH_CLICKHOUSE_USER": "someone", "PITWATCH_CLICKHOUSE_PASSWORD": "old"}
    p = argparse.ArgumentParser()
    add_connection_flags(p)
    apply_connection_flags(p.parse_args(["--clickhouse-user", "pitwatch_reader",
                                         "--clickhouse-password-file", str(f),
                                         "--clickhouse-secure"]))
    assert ClickHouseAuth.from_env() == ClickHouseAuth("pitwatch_reader", Secret(PASSWORD),
                                                       secure=True)


@pytest.mark.parametrize("flag", ["--kafka-password", "--clickhouse-password",
                                  "--kafka-pass", "--clickhouse-passw"])
def test_no_flag_takes_a_password(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser()
    add_connection_flags(p)
    with pytest.raises(SystemExit):
        p.parse_args([flag, PASSWORD])
    err = capsys.readouterr().err
    assert PASSWORD not in err
    assert ("is not taken" in err and "PASSWORD" in err) if flag.endswith("password") \
        else "ambiguous option" in err


@pytest.mark.parametrize("command", ["produce", "worker", "replay", "investigate", "serve",
                                     "query"])
def test_help_never_shows_a_password(env: dict[str, str], tmp_path: Path, command: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "pw"
    _secret_file(f, PASSWORD)
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_SSL", "PITWATCH_KAFKA_USER": "pw",
            "PITWATCH_KAFKA_PASSWORD": PASSWORD, "PITWATCH_CLICKHOUSE_PASSWORD_FILE": str(f)}
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr()
    assert out.out  # the help was printed
    assert PASSWORD not in out.out + out.err


def test_a_bad_setting_stops_a_command_with_its_name(env: dict[str, str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_SSL", "PITWATCH_KAFKA_PASSWORD": PASSWORD}
    assert main(["produce", "--tables", "1", "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert "PITWATCH_KAFKA_USER" in err and PASSWORD not in err


@pytest.mark.parametrize(("raw", "want"), [(None, 1), ("3", 3)])
def test_replication_factor_from_the_environment(env: dict[str, str], raw: str | None,
                                                 want: int) -> None:
    if raw is not None:
        env["PITWATCH_REPLICATION"] = raw
    assert replication() == want


@pytest.mark.parametrize("raw", ["0", "two", "-1"])
def test_a_bad_replication_factor_is_named(env: dict[str, str], raw: str) -> None:
    env["PITWATCH_REPLICATION"] = raw
    with pytest.raises(ValueError, match="PITWATCH_REPLICATION"):
        replication()


# --- secrets (issue 35, item 10) -------------------------------------------------------

def test_a_password_file_others_may_read_is_refused(env: dict[str, str],
                                                    tmp_path: Path) -> None:
    """The brief: "refuse group- or world-readable password files with a clear
    message"."""
    f = _secret_file(tmp_path / "pw", PASSWORD)
    env["PITWATCH_CLICKHOUSE_PASSWORD_FILE"] = str(f)
    assert ClickHouseAuth.from_env().password == Secret(PASSWORD)
    for mode, who in ((0o640, "its group"), (0o620, "its group"), (0o604, "others"),
                      (0o644, "others")):
        f.chmod(mode)
        with pytest.raises(ConnectionConfigError, match=(
                rf"PITWATCH_CLICKHOUSE_PASSWORD_FILE: {re.escape(str(f))} is open to "
                rf"{who} \(mode 0{mode:o}\): make it its owner's alone \(chmod 600")) as e:
            ClickHouseAuth.from_env()
        assert PASSWORD not in str(e.value)
    env.pop("PITWATCH_CLICKHOUSE_PASSWORD_FILE")
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_SSL", "PITWATCH_KAFKA_USER": "u",
            "PITWATCH_KAFKA_PASSWORD_FILE": str(f)}
    with pytest.raises(ConnectionConfigError, match=r"PITWATCH_KAFKA_PASSWORD_FILE: .* is "
                       "open to others"):
        KafkaAuth.from_env()


@pytest.mark.parametrize("host", ["10.0.0.5", "clickhouse.example", "::ffff:10.0.0.5",
                                  "localhost.example", "0.0.0.0"])
def test_a_password_never_goes_in_clear_to_another_host(env: dict[str, str],
                                                        host: str) -> None:
    """The brief: "refuse to send a password in clear to a non-loopback host
    (ClickHouse without TLS)"."""
    env["PITWATCH_CLICKHOUSE_PASSWORD"] = PASSWORD
    with pytest.raises(ConnectionConfigError, match="refused to send ClickHouse's password "
                       "in clear to ") as e:
        ClickHouseAuth.from_env().driver(host)
    assert PASSWORD not in str(e.value)
    env["PITWATCH_CLICKHOUSE_SECURE"] = "1"
    assert ClickHouseAuth.from_env().driver(host)["secure"] is True


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"])
def test_a_password_may_go_in_clear_to_this_machine(env: dict[str, str], host: str) -> None:
    env["PITWATCH_CLICKHOUSE_PASSWORD"] = PASSWORD
    assert ClickHouseAuth.from_env().driver(host)["password"] == PASSWORD


def test_no_password_no_tls_is_left_as_it_was(env: dict[str, str]) -> None:
    assert ClickHouseAuth.from_env().driver("10.0.0.5") == {"user": "default",
                                                            "password": ""}


def test_sasl_without_ssl_is_refused(env: dict[str, str]) -> None:
    """The brief: "refuse to send a password in clear ... (Kafka SASL without SSL)"."""
    env |= {"PITWATCH_KAFKA_SECURITY": "SASL_PLAINTEXT", "PITWATCH_KAFKA_USER": "u",
            "PITWATCH_KAFKA_PASSWORD": PASSWORD}
    with pytest.raises(ConnectionConfigError, match="SASL_PLAINTEXT refused: it sends the "
                       "SASL password without TLS; use SASL_SSL"):
        KafkaAuth.from_env()
