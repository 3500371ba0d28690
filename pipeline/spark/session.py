"""The Spark session of the harvest job: connector jars, RocksDB state store, interpreter.

ARCHITECTURE §3: the Kafka and Avro connectors come from ``make jars`` (``.cache/jars/spark``)
and are passed as ``spark.jars``, never resolved with ``--packages``; executors run the
project's own interpreter; the join state lives in the RocksDB state store provider.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger
from pipeline.core.settings import Settings

log = get_logger(__name__)

ROCKSDB_PROVIDER = (
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
)
REQUIRED_JARS = ("spark-sql-kafka-0-10_", "spark-avro_", "kafka-clients-", "commons-pool2-")
#: native memory of the JVM bounded (#15 soak; README "Reliability"): every RocksDB state
#: store instance of the JVM shares one block cache and write-buffer budget of this many MB
#: (Spark's default: each instance unbounded), and glibc keeps at most this many malloc
#: arenas per process (default 8 per core: native allocations from many threads — RocksDB,
#: Kafka, Arrow — otherwise spread over arenas whose freed pages stay resident)
ROCKSDB_MEMORY_MB = 256
MALLOC_ARENAS = "2"


@dataclass(frozen=True)
class SessionConfig:
    """Frozen settings of one Spark session (master URL, jars, memory, partitions)."""

    master: str = "local[*]"
    app_name: str = "harvest"
    jars: tuple[str, ...] = ()
    shuffle_partitions: int = 4
    driver_memory: str = "1g"
    python: str = sys.executable
    #: the Spark UI and its REST API (``harvest bench peer`` reads task times from it)
    ui: bool = False

    def snapshot(self) -> dict[str, Any]:
        """Plain-dict form (logs, reports)."""
        return {
            "master": self.master,
            "app_name": self.app_name,
            "jars": list(self.jars),
            "shuffle_partitions": self.shuffle_partitions,
            "driver_memory": self.driver_memory,
            "python": self.python,
            "ui": self.ui,
        }

    @classmethod
    def from_snapshot(cls, snap: dict[str, Any]) -> SessionConfig:
        """Inverse of :meth:`snapshot`."""
        return cls(
            master=str(snap["master"]),
            app_name=str(snap["app_name"]),
            jars=tuple(str(j) for j in snap["jars"]),
            shuffle_partitions=int(snap["shuffle_partitions"]),
            driver_memory=str(snap["driver_memory"]),
            python=str(snap["python"]),
            ui=bool(snap.get("ui", False)),
        )


def connector_jars(settings: Settings) -> tuple[str, ...]:
    """The jars in ``<cache>/jars/spark``; raises :class:`InfraError` if one is missing."""
    folder = settings.jars_dir / "spark"
    jars = tuple(sorted(str(p) for p in Path(folder).glob("*.jar")))
    names = [Path(j).name for j in jars]
    missing = [r for r in REQUIRED_JARS if not any(n.startswith(r) for n in names)]
    if missing:
        raise InfraError(
            f"Spark connector jars missing in {folder}: {', '.join(m + '*.jar' for m in missing)}"
            " — run `make jars`"
        )
    return jars


def build_session(config: SessionConfig) -> SparkSession:
    """Start (or reuse) the Spark session described by ``config``."""
    os.environ.setdefault("PYSPARK_PYTHON", config.python)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", config.python)
    # inherited by the JVM spark-submit starts and by the Python workers it forks
    os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    builder = (
        SparkSession.builder.master(config.master)
        .appName(config.app_name)
        .config("spark.jars", ",".join(config.jars))
        .config("spark.pyspark.python", config.python)
        .config("spark.pyspark.driver.python", config.python)
        .config("spark.executorEnv.PYSPARK_PYTHON", config.python)
        .config("spark.driver.memory", config.driver_memory)
        .config("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage", "true")
        .config("spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB",
                str(ROCKSDB_MEMORY_MB))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "true" if config.ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    # the session may be reused (tests): make the per-job settings current
    spark.conf.set("spark.sql.shuffle.partitions", str(config.shuffle_partitions))
    log.info("spark session", master=config.master, jars=len(config.jars),
             shuffle_partitions=config.shuffle_partitions)
    return spark
