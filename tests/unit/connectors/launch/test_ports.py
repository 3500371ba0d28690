"""connectors.launch.ports: free-port detection and selection, against real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from connectors.launch.ports import choose_port, ephemeral_port, port_is_free


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
    with pytest.raises(ValueError, match="70000"):
        port_is_free(70000)


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
