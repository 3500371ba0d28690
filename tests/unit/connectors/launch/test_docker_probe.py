"""connectors.launch.docker_probe: the bounded /_ping probe, against real unix sockets."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.launch.docker_probe import docker_engine_answers


@contextlib.contextmanager
def _serve(path: Path, reply: bytes | None) -> Iterator[str]:
    """A unix-socket server that answers one request with ``reply`` (or stays silent)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    done = threading.Event()

    def handle() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            if reply is not None:
                conn.sendall(reply)
            done.wait(5)

    thread = threading.Thread(target=handle, daemon=True)
    thread.start()
    try:
        yield f"unix://{path}"
    finally:
        done.set()
        thread.join(5)
        server.close()


@pytest.fixture
def short_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # AF_UNIX paths are limited to ~107 bytes; keep them short.
    return Path(tmp_path_factory.mktemp("d", numbered=True))


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK", True),
        (b"HTTP/1.1 500 Internal Server Error\r\n\r\n", False),
        (b"garbage", False),
    ],
)
def test_probe_reads_the_status_line(short_dir: Path, reply: bytes, expected: bool) -> None:
    with _serve(short_dir / "ok.sock", reply) as host:
        assert docker_engine_answers(host, timeout=2.0) is expected


@pytest.mark.timeout(10)
def test_probe_does_not_hang_on_a_silent_socket(short_dir: Path) -> None:
    with _serve(short_dir / "silent.sock", None) as host:
        assert docker_engine_answers(host, timeout=0.5) is False


@pytest.mark.parametrize(
    "host", ["unix:///nonexistent/docker.sock", "ssh://user@host", "tcp://127.0.0.1:1"]
)
def test_probe_is_false_without_an_engine(host: str) -> None:
    assert docker_engine_answers(host, timeout=0.5) is False
