"""The Spark session's native memory bounds: config round trip, JVM flags, jemalloc choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings
from pipeline.spark.session import (
    JEMALLOC,
    JEMALLOC_CONF,
    SessionConfig,
    _launch_env,
    native_allocator,
)


def test_snapshot_round_trip_keeps_memory_bounds() -> None:
    cfg = SessionConfig(master="local[2]", state_memory_mb=32, code_cache_mb=96,
                        java_options="-Xms1g", preload="/x/libjemalloc.so.2")
    assert SessionConfig.from_snapshot(cfg.snapshot()) == cfg


def test_old_snapshot_gets_defaults() -> None:
    snap = SessionConfig().snapshot()
    for key in ("state_memory_mb", "code_cache_mb", "java_options", "preload"):
        del snap[key]
    assert SessionConfig.from_snapshot(snap) == SessionConfig()


@pytest.mark.parametrize(("code_cache", "extra", "expected"), [
    (128, "", "-XX:ReservedCodeCacheSize=128m"),
    (96, "-Xms1g -XX:+AlwaysPreTouch", "-XX:ReservedCodeCacheSize=96m -Xms1g -XX:+AlwaysPreTouch"),
])
def test_jvm_options(code_cache: int, extra: str, expected: str) -> None:
    assert SessionConfig(code_cache_mb=code_cache, java_options=extra).jvm_options == expected


def test_native_allocator_picks_installed_jemalloc(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path)
    assert native_allocator(settings) == ""  # not installed: glibc
    lib = tmp_path / "lib" / JEMALLOC
    lib.parent.mkdir()
    lib.write_bytes(b"\x7fELF")
    assert native_allocator(settings) == str(lib)
    assert native_allocator(Settings(cache_dir=tmp_path, native_allocator="glibc")) == ""


def test_launch_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("MALLOC_CONF", raising=False)
    assert _launch_env(SessionConfig()) == {"MALLOC_ARENA_MAX": "2"}
    lib = tmp_path / JEMALLOC
    lib.write_bytes(b"\x7fELF")
    env = _launch_env(SessionConfig(preload=str(lib)))
    assert env["LD_PRELOAD"] == str(lib)
    assert env["MALLOC_CONF"] == JEMALLOC_CONF
    with pytest.raises(InfraError, match="preload library not found"):
        _launch_env(SessionConfig(preload=str(tmp_path / "missing.so")))


def test_settings_reject_tiny_state_memory() -> None:
    with pytest.raises(ValueError, match="state_memory_mb"):
        Settings(state_memory_mb=1)
