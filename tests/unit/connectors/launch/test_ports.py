"""connectors.launch.ports: free-port detection and selection, against real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from connectors.launch import ports
from connectors.launch.ports import choose_port, ephemeral_port, port_is_free
from pipeline.core.errors import ConfigError, InfraError


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port with a live listener on 127.0.0.1 for the duration of the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield int(sock.getsockname()[1])


def test_listening_port_is_busy_and_released_port_is_free(busy_port: int) -> None:
    assert not port_is_free(busy_port)
    free = ephemeral_port()
    assert port_is_free(free)


def test_port_out_of_range_is_rejected() -> None:
    with pytest.raises(ConfigError, match="got 70000"):
        port_is_free(70000)
    with pytest.raises(ConfigError, match="got 0"):
        port_is_free(0)


def test_choose_port_takes_first_free_candidate(busy_port: int) -> None:
    free = ephemeral_port(exclude=[busy_port])
    assert choose_port([busy_port, None, free]) == free


def test_choose_port_falls_back_to_an_ephemeral_port(busy_port: int) -> None:
    chosen = choose_port([busy_port, None])
    assert chosen != busy_port
    assert port_is_free(chosen)


def test_choose_port_never_returns_an_excluded_port() -> None:
    free = ephemeral_port()
    chosen = choose_port([free], exclude=[free])
    assert chosen != free


def test_no_free_ephemeral_port_is_an_infra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every port the OS hands out is excluded: give up after 64 tries, naming them."""

    class FixedPortSocket:
        def __init__(self, *_: object) -> None: ...
        def __enter__(self) -> FixedPortSocket:
            return self
        def __exit__(self, *_: object) -> None: ...
        def bind(self, _: object) -> None: ...
        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", 40000)

    monkeypatch.setattr(ports.socket, "socket", FixedPortSocket)
    with pytest.raises(InfraError, match=r"no free ephemeral port on 127.0.0.1 outside \[40000\]"):
        ephemeral_port(exclude=[40000])
