"""Does a Docker engine answer? A bounded ``GET /_ping`` on the engine's socket.

The tests' ``kafka_bootstrap`` fixture (ARCHITECTURE §8) prefers testcontainers when an engine
answers and falls back to the local broker otherwise. The docker CLI and the SDK can
block for a long time when the socket exists but no daemon serves it, so this probe
speaks the one HTTP request itself with a hard timeout.
"""

from __future__ import annotations

import socket
from urllib.parse import urlparse

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


def _connect(docker_host: str, timeout: float) -> socket.socket:
    url = urlparse(docker_host)
    if url.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(url.path)
        except OSError:
            sock.close()
            raise
        return sock
    if url.scheme in ("tcp", "http") and url.hostname:
        return socket.create_connection((url.hostname, url.port or 2375), timeout=timeout)
    raise OSError(f"unsupported DOCKER_HOST {docker_host!r} (expected unix:// or tcp://)")


def docker_engine_answers(docker_host: str | None = None, timeout: float = 1.0) -> bool:
    """True iff the engine at ``docker_host`` (default the local unix socket) replies
    ``200 OK`` to ``GET /_ping`` within ``timeout`` seconds. Never raises, never hangs."""
    host = docker_host or DEFAULT_DOCKER_HOST
    try:
        with _connect(host, timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            reply = sock.recv(256)
    except OSError:
        return False
    status_line = reply.split(b"\r\n", 1)[0].split()
    return len(status_line) >= 2 and status_line[1] == b"200"
