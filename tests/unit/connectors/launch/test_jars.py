"""connectors.launch.jars: Java discovery/version parsing and the jar-set checks of `make jars`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from connectors.launch.jars import (
    check_java,
    find_java,
    jar_set,
    kafka_jars,
    kafka_version,
    parse_java_major,
)
from pipeline.core.errors import InfraError


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_392"', 8),
        ('openjdk version "11.0.2" 2019-01-15', 11),
    ],
)
def test_parse_java_major(output: str, major: int) -> None:
    assert parse_java_major(output) == major


def test_parse_java_major_rejects_garbage() -> None:
    with pytest.raises(InfraError, match="cannot read the Java version"):
        parse_java_major("command not found")


def test_find_java_with_bad_java_home_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match=str(tmp_path / "bin" / "java")):
        find_java(tmp_path)


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_the_installed_java_is_17_or_newer() -> None:
    assert check_java(find_java()) >= 17


def test_missing_jars_dir_says_run_make_jars(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match=r"kafka jars not found.*make jars"):
        kafka_jars(tmp_path / "jars")
    with pytest.raises(InfraError, match=r"spark jars not found.*make jars"):
        jar_set(tmp_path / "jars", "spark", "spark-sql-kafka-0-10_2.13-*.jar")


def test_incomplete_jars_dir_names_the_missing_jar(tmp_path: Path) -> None:
    (tmp_path / "kafka").mkdir()
    (tmp_path / "kafka" / "kafka-clients-4.4.0.jar").write_bytes(b"")
    with pytest.raises(InfraError, match=r"no kafka_2\.13-\*\.jar.*make jars"):
        kafka_jars(tmp_path)


def test_jar_set_lists_only_jars_sorted(tmp_path: Path) -> None:
    directory = tmp_path / "kafka"
    directory.mkdir()
    for name in ["zstd-jni-1.jar", "kafka_2.13-4.4.0.jar", "README.txt", "a-1.jar"]:
        (directory / name).write_bytes(b"")
    names = [p.name for p in jar_set(tmp_path, "kafka", "kafka_2.13-*.jar")]
    assert names == ["a-1.jar", "kafka_2.13-4.4.0.jar", "zstd-jni-1.jar"]
    assert kafka_version(tmp_path) == "4.4.0"
