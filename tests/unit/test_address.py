"""`HOST:PORT` read in one place (pitwatch.address): an IPv6 address in brackets, the
host handed on without them and written back with them, one refusal text."""

from __future__ import annotations

import pytest

from pitwatch.address import FORM, AddressError, host_port, host_ports, join_host_port
from pitwatch.connect import ConnectionConfigError


def test_a_name_or_an_ipv4_address_and_its_port() -> None:
    assert host_port("kafka.local:9092") == ("kafka.local", 9092)
    assert host_port(" 127.0.0.1:19000 ") == ("127.0.0.1", 19000)


def test_an_ipv6_address_in_brackets_is_handed_on_bare() -> None:
    assert host_port("[::1]:9440") == ("::1", 9440)
    assert host_port("[fe80::1%eth0]:9000") == ("fe80::1%eth0", 9000)


def test_a_missing_port_is_the_default_when_there_is_one() -> None:
    assert host_port("c", 9000) == ("c", 9000)
    assert host_port("[::1]", 9000) == ("::1", 9000)
    assert host_port("::1", 9000) == ("::1", 9000)  # a bare IPv6 address: no port in it
    for bare in ("c", "[::1]", "::1"):
        with pytest.raises(AddressError, match="has no port"):
            host_port(bare)


@pytest.mark.parametrize("bad", [
    "", ":9000", "a:x", "a:0", "a:65536", "a:-1", "[::1", "[::1]9000", "[]:9000",
    "a b:1", "a/b:1", "[::1]:x"])
def test_a_malformed_address_is_refused_saying_how_to_write_one(bad: str) -> None:
    with pytest.raises(AddressError) as e:
        host_port(bad, 9000)
    assert repr(bad) in str(e.value) and FORM in str(e.value)
    assert isinstance(e.value, ConnectionConfigError)  # where commands report settings


def test_a_list_in_order_and_a_bad_item_named_with_its_list() -> None:
    assert host_ports("a:1,[::1]:2, c", 9000) == [("a", 1), ("::1", 2), ("c", 9000)]
    with pytest.raises(AddressError, match=r"'a:x'.*in 'b:1,a:x'.*HOST:PORT\[,HOST:PORT"):
        host_ports("b:1,a:x")


def test_written_back_an_ipv6_host_is_bracketed_and_reads_the_same() -> None:
    for host, port in (("::1", 9440), ("db1", 9000), ("10.0.0.2", 1)):
        written = join_host_port(host, port)
        assert host_port(written) == (host, port)
    assert join_host_port("::1", 9440) == "[::1]:9440"
