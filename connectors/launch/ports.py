"""TCP port selection for local services (the broker's client and controller listeners).

A port counts as free when a listening socket can be bound to it on the given host with
``SO_REUSEADDR`` set, which is exactly what the JVM does when Kafka opens its listeners:
sockets in TIME_WAIT from a previous run do not make a port busy, a live listener does.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

from pipeline.core.errors import ConfigError, InfraError

LOOPBACK = "127.0.0.1"


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when nothing listens on ``host:port`` (a bind with SO_REUSEADDR succeeds)."""
    if not 0 < port < 65536:
        raise ConfigError(f"port: must be in 1..65535, got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_port(host: str = LOOPBACK, exclude: Iterable[int] = ()) -> int:
    """A port the OS reports free right now (bind to 0), never one of ``exclude``."""
    banned = set(exclude)
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in banned:
            return port
    raise InfraError(f"no free ephemeral port on {host} outside {sorted(banned)} (64 tries)")


def choose_port(
    candidates: Iterable[int | None], host: str = LOOPBACK, exclude: Iterable[int] = ()
) -> int:
    """The first free port among ``candidates`` (``None`` entries skipped), else an
    ephemeral one. Ports in ``exclude`` are never returned (e.g. the port already picked
    for another listener of the same process)."""
    banned = set(exclude)
    for port in candidates:
        if port is not None and port not in banned and port_is_free(port, host):
            return port
    return ephemeral_port(host, exclude=banned)
