"""Local JVM prerequisites: the ``java`` executable and the jar sets of `harvest setup`.

`harvest setup` (:mod:`connectors.launch.jar_fetch`; `make jars` runs it) puts the jars of
the lock into ``<jars_dir>/kafka`` (broker + tools + log4j2) and ``<jars_dir>/spark`` (the
Structured Streaming Kafka source/sink and spark-avro, without what the pyspark wheel
ships). Everything here raises :class:`InfraError` with the command that fixes the
problem; missing jars raise :class:`SetupRequiredError` (exit 2).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from pipeline.core.errors import InfraError, SetupRequiredError

MIN_JAVA_MAJOR = 17
#: what every missing-jars error says (`make jars` in a checkout runs `harvest setup`)
FIX_JARS = "run `harvest setup` (in a checkout: `make jars`) to fetch them"
_FIX_JAVA = "install Java 17+ (apt-get install openjdk-17-jre-headless) or set HARVEST_JAVA_HOME"
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def find_java(java_home: Path | None = None) -> Path:
    """The ``java`` executable: ``<java_home>/bin/java`` if given, else the one on PATH."""
    if java_home is not None:
        candidate = java_home / "bin" / "java"
        if not candidate.is_file():
            raise InfraError(f"no java executable at {candidate} (HARVEST_JAVA_HOME={java_home})")
        return candidate
    found = shutil.which("java")
    if found is None:
        raise InfraError(f"java not found on PATH: {_FIX_JAVA}")
    return Path(found)


def parse_java_major(version_output: str) -> int:
    """Major version from ``java -version`` output (``"1.8.0_392"`` -> 8, ``"17.0.15"`` -> 17)."""
    match = _VERSION.search(version_output)
    if match is None:
        raise InfraError(f"cannot read the Java version from {version_output.strip()[:200]!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        return int(match.group(2))
    return major


def check_java(java: Path) -> int:
    """Run ``java -version`` and return the major version; < 17 raises :class:`InfraError`."""
    try:
        done = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfraError(f"cannot run {java} -version: {exc}") from exc
    major = parse_java_major(done.stderr + done.stdout)
    if major < MIN_JAVA_MAJOR:
        raise InfraError(f"{java} is Java {major}; Kafka 4 and Spark 4 need 17+: {_FIX_JAVA}")
    return major


def jar_set(jars_dir: Path, profile: str, marker: str) -> list[Path]:
    """All jars of one Maven profile (``kafka`` or ``spark``), sorted by name.

    ``marker`` is a glob that must match (e.g. ``kafka_2.13-*.jar``); a missing directory
    or marker raises :class:`SetupRequiredError` telling the user to run `harvest setup`.
    """
    directory = jars_dir / profile
    if not directory.is_dir():
        raise SetupRequiredError(
            f"{profile} jars not found: {directory} does not exist; {FIX_JARS}")
    if not any(directory.glob(marker)):
        raise SetupRequiredError(
            f"{profile} jars incomplete: no {marker} in {directory}; {FIX_JARS}")
    return sorted(directory.glob("*.jar"))


def kafka_jars(jars_dir: Path) -> list[Path]:
    """The broker's classpath entries (kafka_2.13, kafka-tools, log4j2, ...)."""
    return jar_set(jars_dir, "kafka", "kafka_2.13-*.jar")


def spark_jars(jars_dir: Path) -> list[Path]:
    """The Spark job's connector jars (spark-sql-kafka, spark-avro, kafka-clients, ...)."""
    return jar_set(jars_dir, "spark", "spark-sql-kafka-0-10_2.13-*.jar")


def kafka_version(jars_dir: Path) -> str:
    """The Kafka version of the fetched broker jars, from the ``kafka_2.13-<v>.jar`` name."""
    for jar in kafka_jars(jars_dir):
        match = re.fullmatch(r"kafka_2\.13-(.+)\.jar", jar.name)
        if match:
            return match.group(1)
    raise SetupRequiredError(f"no kafka_2.13-<version>.jar in {jars_dir / 'kafka'}; {FIX_JARS}")
