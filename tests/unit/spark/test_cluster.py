"""The standalone-cluster launcher's pure parts (the real start/stop is tests/e2e)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pipeline.core.errors import ConfigError, InfraError
from pipeline.spark.cluster import (
    ClusterConfig,
    StandaloneCluster,
    java_binary,
    pick_port,
    port_free,
    scala_version,
    spark_home,
)


def test_spark_home_has_jars_and_scala_version() -> None:
    home = spark_home()
    assert (home / "jars").is_dir()
    assert any((home / "jars").glob("spark-core_*.jar"))
    assert scala_version(home) == "2.13"  # PySpark 4.x is built for Scala 2.13


def test_scala_version_without_library_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    with pytest.raises(InfraError, match="scala-library"):
        scala_version(tmp_path)


def test_pick_port_falls_back_when_taken() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        assert not port_free("127.0.0.1", taken)
        other = pick_port("127.0.0.1", taken, set())
        assert other != taken and port_free("127.0.0.1", other)
    free = pick_port("127.0.0.1", taken, {taken + 1})
    assert free == taken  # free again once the socket is closed


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [({"worker_cores": 0}, "--cores"), ({"worker_memory": "lots"}, "--memory"),
     ({"worker_memory": "2t"}, "--memory")],
)
def test_bad_sizes_name_the_flag(tmp_path: Path, kwargs: dict[str, object], flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        ClusterConfig(state_dir=tmp_path, **kwargs)  # type: ignore[arg-type]


def test_status_of_a_cluster_never_started(tmp_path: Path) -> None:
    cluster = StandaloneCluster(ClusterConfig(state_dir=tmp_path))
    status = cluster.status()
    assert not status.running and status.master_url is None and status.master_pid is None
    assert cluster.down() is False


def test_stale_pid_file_is_not_a_running_cluster(tmp_path: Path) -> None:
    (tmp_path / "master.pid").write_text("1\n")  # pid 1 is not a Spark master
    (tmp_path / "master").write_text("spark://127.0.0.1:7077\n")
    cluster = StandaloneCluster(ClusterConfig(state_dir=tmp_path))
    assert not cluster.status().running
    assert cluster.down() is False
    assert not (tmp_path / "master.pid").exists() and not (tmp_path / "master").exists()


def test_java_home_without_java_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match=str(tmp_path)):
        java_binary(tmp_path)
