"""Network addresses as flags and the environment write them: `HOST:PORT`, or a list
`HOST:PORT[,HOST:PORT...]` (the servers a client tries, first to last). An IPv6 address
goes in brackets, `[::1]:9000`; a parsed host never carries them (sockets and drivers
take the bare address), and `join_host_port` puts them back when a string is needed."""

from __future__ import annotations

from .connect import ConnectionConfigError

#: how an address is written: the end of every refusal
FORM = "use HOST:PORT, an IPv6 address in brackets ([::1]:9000)"


class AddressError(ConnectionConfigError):
    """An address that cannot be read; the message quotes it and says how to write it."""


def host_port(text: str, default_port: int | None = None) -> tuple[str, int]:
    """`HOST:PORT` (or `HOST` alone when there is a `default_port`) as (host, port), the
    host without brackets. A bare IPv6 address (`::1`) is a host without a port."""
    item = text.strip()
    if item.startswith("["):
        host, close, rest = item[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise AddressError(f"address {text!r}: {FORM}")
        port = rest[1:] if rest else None
    elif item.count(":") == 1:
        host, _, port = item.partition(":")
    else:  # no colon, or a bare IPv6 address: no port
        host, port = item, None
    if port is None:
        if default_port is None:
            raise AddressError(f"address {text!r} has no port: {FORM}")
        port = str(default_port)
    if not host or any(c in host for c in "[], /") or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise AddressError(f"address {text!r}: {FORM}")
    return host, int(port)


def host_ports(spec: str, default_port: int | None = None) -> list[tuple[str, int]]:
    """`HOST:PORT[,HOST:PORT...]` as (host, port) pairs, in the order given."""
    try:
        return [host_port(item, default_port) for item in spec.split(",")]
    except AddressError as e:
        raise AddressError(f"{e} (in {spec!r}; a list is HOST:PORT[,HOST:PORT...])") from None


def join_host_port(host: str, port: int) -> str:
    """(host, port) written back as `HOST:PORT`, an IPv6 host in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
